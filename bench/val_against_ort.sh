#!/usr/bin/env bash
# `streamdet val`'s mAP with ONNX Runtime's outputs in place of streamdet's engine, same model, same
# images, same preprocessing, postprocessing and metric: the difference of the two figures is the
# engine's alone (issue 23's target: within 0.002). Needs ONNX Runtime through ort-bench
# (onnxruntime-node, one process per image: about a second each).
#   bench/val_against_ort.sh MODEL.onnx instances.json IMAGE_DIR [ORT_BENCH] [MAX_IMAGES]
# Build first: ./scripts/build.sh streamdet_val_raw
set -euo pipefail
model=${1:?usage: bench/val_against_ort.sh MODEL.onnx instances.json IMAGE_DIR [ORT_BENCH] [MAX_IMAGES]}
data=${2:?instances.json}
images=${3:?IMAGE_DIR}
ort_bench=${4:-../shared/tools/ort-bench}
max_images=${5:--1}
cd "$(dirname "$0")/.."
raw=build/tools/streamdet_val_raw
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shape=$("$raw" inputs -m "$model" --data "$data" --images "$images" --out "$work/in" --max-images "$max_images")
mkdir -p "$work/out"
for input in "$work"/in/*.f32; do
  "$ort_bench" "$model" --threads 2 --shape "$shape" --iters 1 --warmup 0 --input "$input" \
    --dump "$work/out/$(basename "$input")" >/dev/null
done
"$raw" eval -m "$model" --data "$data" --images "$images" --outputs "$work/out" --max-images "$max_images"
