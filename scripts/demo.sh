#!/usr/bin/env bash
# The first of the README's two commands: installs what streamdet needs (Debian 12), builds it,
# and runs the main job on the bundled sample: the project's tiny detector on a synthetic clip,
# writing an annotated video, the detections as JSON Lines, the profile (printed and as JSON) and
# a Chrome trace into out/, then scores the detections against the clip's ground truth.
# Idempotent: a second run only rebuilds what changed and overwrites out/.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
# Only what the demo runs (the tests and benchmarks are test.sh's): about 60% of the build.
./scripts/build.sh streamdet streamdet_synth

mkdir -p out
./build/streamdet run \
  --model models/tiny_synth_v8.onnx \
  --source samples/shapes_640x360.mp4 \
  --output out/shapes_annotated.mp4 \
  --detections out/shapes_detections.jsonl \
  --profile-json out/profile.json \
  --trace out/trace.json \
  --report out/report.html

echo
echo "Detections against the sample's ground truth (IoU 0.5):"
./build/tools/streamdet_synth eval --truth samples/shapes_640x360.truth.jsonl --detections out/shapes_detections.jsonl
echo
echo "Written: out/shapes_annotated.mp4 out/shapes_detections.jsonl out/profile.json out/trace.json (open in https://ui.perfetto.dev)"
echo "         out/report.html (the profile at a glance: open it in any browser, no network needed)"
