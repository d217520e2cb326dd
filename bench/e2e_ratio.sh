#!/usr/bin/env bash
# End-to-end FPS over engine-only FPS on a shared, noisy machine: many short rounds of
# `streamdet bench` (engine-only timing, then the pipeline on the source, back to back), one ratio
# per round, and the median and quartiles of those ratios. With two variants (two builds, e.g. of
# two commits, and/or two environments such as OMP settings) they alternate round by round, so
# both see the same neighbours.
#   bench/e2e_ratio.sh ROUNDS MODEL SOURCE [bench options...]
#   AB_BIN_A=build-old/streamdet AB_BIN_B=build/streamdet bench/e2e_ratio.sh 10 m.onnx clip.mp4 --frames 150
#   AB_ENV_A='OMP_WAIT_POLICY=active' AB_ENV_B='' bench/e2e_ratio.sh 10 m.onnx clip.mp4
# Prints one JSON row per round and variant, then the summary.
set -euo pipefail
rounds=$1 model=$2 source=$3
shift 3
bin=${STREAMDET_BIN:-build/streamdet}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
variants=(A)
[[ -v AB_ENV_B || -v AB_BIN_B ]] && variants=(A B)
for ((r = 1; r <= rounds; ++r)); do
  for v in "${variants[@]}"; do
    envvar=AB_ENV_$v binvar=AB_BIN_$v
    # shellcheck disable=SC2086
    env ${!envvar:-} "${!binvar:-$bin}" bench -m "$model" -s "$source" -d "$tmp/d.jsonl" --json "$@" 2>/dev/null |
      sed "s/^{/{\"variant\":\"$v\",\"round\":$r,/" | tee -a "$tmp/rows.jsonl"
  done
done
python3 - "$tmp/rows.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for v in sorted({r["variant"] for r in rows}):
    ratios = sorted(r["e2e_over_engine"] for r in rows if r["variant"] == v)
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    print(f"variant {v}: {len(ratios)} rounds, e2e/engine median {statistics.median(ratios):.3f} "
          f"(quartiles {q[0]:.3f} / {q[2]:.3f}, min {ratios[0]:.3f}, max {ratios[-1]:.3f})")
PY
