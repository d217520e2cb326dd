#!/usr/bin/env bash
# Tracking quality on the synthetic tracking clips (issue 24; docs/benchmarks.md, "Tracking"):
# ByteTrack run offline (`streamdet_synth track`) on two kinds of detections, scored against the
# clips' ground truth (`streamdet_synth mot`, class-aware, IoU 0.5):
#   - "jitter": the ground truth's boxes, each edge moved by up to 5% of the box's side, score 0.9
#     (0.3 for boxes the truth ignores: mostly hidden or tiny, which go to ByteTrack's second round);
#   - "detector": the bundled model's output, `streamdet run -m models/tiny_synth_v8.onnx --conf 0.1`
#     (MODEL=path: another model's; detections are cached per OUT_DIR, so use a new OUT_DIR per model).
# Two clip sets of three 30 s clips (900 frames, 30 fps, 320x192, --motion traverse): "dense", 60
# objects a clip (about 8 in view at once), seeds 1-3; "sparse", 30 objects, seeds 4-6. Each clip
# also with every second frame dropped (--keep-every 2). Clips and detections are made once in
# OUT_DIR; the tracker runs each time with the options given, with the clip's video for the
# appearance cue and the picture's size (as `streamdet run --track` has the frames;
# `--appearance-weight 0`: boxes alone; `--no-picture`: lost tracks leaving the picture kept).
#   bench/track_quality.sh OUT_DIR [streamdet_synth track options, e.g. --match-thresh 0.9]
#   SEEDS="11 12 13 14 15 16" bench/track_quality.sh OUT_DIR   # held-out clips: six seeds, the
#   first three dense, the last three sparse (default 1 2 3 4 5 6; use another OUT_DIR per set)
#   MODEL=/tmp/new.onnx bench/track_quality.sh OUT_DIR2   # another detector (default the bundled one)
# Prints one markdown row per (set, frames, detections): IDF1 and MOTA of the three clips pooled,
# HOTA averaged over them, ID switches, ground-truth tracks, and switches per 20 ground-truth tracks.
# Each clip's switches are left in OUT_DIR/sSEED.kKEEP.{dets,jitter}.switches.jsonl: what happened at
# each, tools/classify_switches.py OUT_DIR/s1.k1 OUT_DIR/s2.k1 ... (--kind jitter for the other).
set -euo pipefail
out=$1
shift
build=${STREAMDET_BUILD:-build}
synth=$build/tools/streamdet_synth
model=${MODEL:-models/tiny_synth_v8.onnx}
if [[ ! -f $model ]]; then
  echo "track_quality.sh: MODEL '$model' does not exist" >&2
  exit 2
fi
mkdir -p "$out"

read -r -a seeds <<<"${SEEDS:-1 2 3 4 5 6}"
if ((${#seeds[@]} != 6)); then
  echo "track_quality.sh: SEEDS must name six seeds (three dense clips, three sparse), got '${SEEDS:-}'" >&2
  exit 2
fi
for n in 0 1 2 3 4 5; do
  seed=${seeds[n]}
  objects=60
  ((n > 2)) && objects=30
  for keep in 1 2; do
    c=$out/s$seed.k$keep
    if [[ ! -s $c.dets.jsonl ]]; then
      "$synth" clip --motion traverse --objects $objects --frames 900 --seed $seed --keep-every $keep \
        --video "$c.mp4" --truth "$c.truth.jsonl"
      "$synth" jitter --truth "$c.truth.jsonl" --out "$c.jitter.jsonl" --jitter 0.05 --seed $seed
      "$build/streamdet" run -m "$model" -s "$c.mp4" -d "$c.dets.jsonl" --conf 0.1 >/dev/null 2>&1
    fi
    for kind in jitter dets; do
      "$synth" track --detections "$c.$kind.jsonl" --video "$c.mp4" --out "$c.$kind.tracked.jsonl" "$@"
      "$synth" mot --truth "$c.truth.jsonl" --tracks "$c.$kind.tracked.jsonl" --switches "$c.$kind.switches.jsonl" --json |
        sed "s/^{/{\"dense\":$((n < 3)),\"seed\":$seed,\"keep\":$keep,\"kind\":\"$kind\",/"
    done
  done
done | python3 -c '
import collections, json, sys
groups = collections.defaultdict(list)
for line in sys.stdin:
    r = json.loads(line)
    groups[("dense" if r["dense"] else "sparse", r["keep"], r["kind"])].append(r)
print("| clips | frames | detections | IDF1 | MOTA | HOTA (mean of the clips) | ID switches / truth tracks | per 20 tracks |")
print("|---|---|---|---|---|---|---|---|")
for (clips, keep, kind), rs in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1], g[0][2] != "jitter")):
    s = lambda k: sum(r[k] for r in rs)
    idf1 = 2 * s("idtp") / (s("truth_boxes") + s("hypothesis_boxes"))
    mota = 1 - (s("misses") + s("false_positives") + s("id_switches")) / s("truth_boxes")
    frames = "every frame" if keep == 1 else "every 2nd dropped"
    kind = "jittered truth" if kind == "jitter" else sys.argv[1]
    ids, tracks = s("id_switches"), s("truth_tracks")
    hota = sum(r["hota"] for r in rs) / len(rs)
    print(f"| {clips} | {frames} | {kind} | {idf1:.3f} | {mota:.3f} | {hota:.3f} | {ids} / {tracks} | {20 * ids / tracks:.2f} |")
' "$(basename "$model" .onnx)"
