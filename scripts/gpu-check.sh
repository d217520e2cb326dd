#!/usr/bin/env bash
# Runs on the GPU machine (docs/gpu.md), in the repository's root, with .gpu/ carried: unpacks the
# check made by scripts/gpu-pack.sh, records what the machine has, makes the YOLOv8n-architecture
# model with the machine's PyTorch, runs the check (conformance of every op the CUDA backend
# claims, parity and latency of the bundled tiny model and YOLOv8n), the backend tests, then
# compute-sanitizer's memcheck and racecheck on a short run, and PyTorch's figures for the same
# architecture (tools/torch_bench.py). Everything lands in $OUT (the device tool's) or gpu-out/.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
dir=/tmp/streamdet-gpu
rm -rf "$dir" && mkdir -p "$dir" && tar -C "$dir" -xJf .gpu/streamdet-gpu-check.tar.xz || exit 1
{
  nvidia-smi
  echo "== libraries"
  ldconfig -p | grep -E 'cudnn|cublas|nvcuvid|libcuda\.'
  echo "== python"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  python3 -c 'import nvidia.cudnn, os; print("cudnn wheel", os.path.dirname(nvidia.cudnn.__file__))'
} >"$out/environment.txt" 2>&1
if [[ -f .gpu/yolov8n_arch.onnx ]]; then
  cp .gpu/yolov8n_arch.onnx "$dir/"
else
  PYTHONUNBUFFERED=1 python3 tools/make_yolov8n.py --out "$dir/yolov8n_arch.onnx" >"$out/make_yolov8n.log" 2>&1
fi
export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
models=(--model models/tiny_synth_v8.onnx --input 1x3x256x256)
[[ -f "$dir/yolov8n_arch.onnx" ]] && models+=(--model "$dir/yolov8n_arch.onnx" --input 1x3x640x640)
"$dir/streamdet_gpu_check" --json "$out/check.json" "${models[@]}" 2>&1 | tee "$out/check.txt"
status=${PIPESTATUS[0]}
# The backend tests (the CUDA ones skip nowhere else), from the repository's root.
"$dir/streamdet_native_tests" >"$out/native_tests.txt" 2>&1 || status=1
tail -n 5 "$out/native_tests.txt"
short=(--cases 2 --iters 2 --model models/tiny_synth_v8.onnx --input 1x3x256x256)
{
  echo "== memcheck"
  timeout 240 compute-sanitizer --tool memcheck --leak-check full "$dir/streamdet_gpu_check" "${short[@]}"
  echo "== racecheck"
  timeout 120 compute-sanitizer --tool racecheck "$dir/streamdet_gpu_check" "${short[@]}"
} >"$out/sanitizer.txt" 2>&1
grep -E "^== |ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer.txt"
# PyTorch on the same GPU (issue 13's yardstick), last: torch.compile's autotuning takes minutes.
PYTHONUNBUFFERED=1 timeout 300 python3 tools/torch_bench.py --json "$out/torch.json" --batches 1 32 128 >"$out/torch.txt" 2>&1
tail -n 4 "$out/torch.txt"
exit "$status"
