#!/usr/bin/env bash
# What --track costs a whole run: `streamdet run` with `--track bytetrack` and with `--track off`,
# alternating round by round (a shared machine's load hits both alike), end-to-end FPS from
# --profile-json; prints each round, then per variant the median (and quartiles) and the ratio
# of the medians (tracked / untracked), the median of the per-round ratios, and the process's CPU
# time per frame (less sensitive to the neighbours' load than the wall clock).
#   bench/track_ab.sh ROUNDS MODEL SOURCE [run options...]
#   bench/track_ab.sh 10 models/tiny_synth_v8.onnx samples/shapes_640x360.mp4
#   bench/track_ab.sh 10 models/tiny_synth_v8.onnx samples/shapes_640x360.mp4 -o /tmp/ab.mp4
set -euo pipefail
rounds=$1 model=$2 source=$3
shift 3
bin=${STREAMDET_BIN:-build/streamdet}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((r = 1; r <= rounds; ++r)); do
  for mode in bytetrack off; do
    "$bin" run -m "$model" -s "$source" -d "$tmp/d.jsonl" -q --profile-json "$tmp/p.json" --track "$mode" "$@"
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(json.dumps({"track":sys.argv[2],"round":int(sys.argv[3]),"e2e_fps":p["e2e_fps"],"cpu_ms_per_frame":p["cpu_ms"]/max(1,p["frames"]),"frames":p["frames"]}))' \
      "$tmp/p.json" "$mode" "$r" | tee -a "$tmp/rows.jsonl"
  done
done
python3 - "$tmp/rows.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = {}
for mode in ("bytetrack", "off"):
    fps = sorted(r["e2e_fps"] for r in rows if r["track"] == mode)
    q = statistics.quantiles(fps, n=4) if len(fps) > 1 else fps * 3
    med[mode] = statistics.median(fps)
    print(f"--track {mode}: {len(fps)} rounds, e2e FPS median {med[mode]:.2f} "
          f"(quartiles {q[0]:.2f} / {q[2]:.2f}, min {fps[0]:.2f}, max {fps[-1]:.2f})")
print(f"ratio of medians (bytetrack / off): {med['bytetrack'] / med['off']:.4f}")
by_round = {(r["track"], r["round"]): r for r in rows}
rounds = sorted({r["round"] for r in rows})
paired = sorted(by_round[("bytetrack", n)]["e2e_fps"] / by_round[("off", n)]["e2e_fps"] for n in rounds)
q = statistics.quantiles(paired, n=4) if len(paired) > 1 else paired * 3
print(f"per-round ratio (bytetrack / off, same round): median {statistics.median(paired):.4f} (quartiles {q[0]:.4f} / {q[2]:.4f})")
cpu = {m: statistics.median(r["cpu_ms_per_frame"] for r in rows if r["track"] == m) for m in ("bytetrack", "off")}
print(f"process CPU ms per frame, median: bytetrack {cpu['bytetrack']:.3f}, off {cpu['off']:.3f} "
      f"(ratio {cpu['bytetrack'] / cpu['off']:.4f})")
PY
