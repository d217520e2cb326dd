#!/usr/bin/env bash
# Builds the self-contained GPU check (tools/gpu_check.cpp) and packs it, with the shared libraries
# it needs that the GPU machine lacks (oneDNN, ONNX's protobuf classes, protobuf, OpenMP, the
# OpenCL loader oneDNN links, libstdc++), into .gpu/streamdet-gpu-check.tar.xz (ignored by git):
# what the device tool carries (`carry: [".gpu"]`). The CUDA runtime is linked statically; cuDNN
# and cuBLAS, when the backend uses them, come from the GPU machine's PyTorch wheels. docs/gpu.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build streamdet_gpu_check streamdet_native_tests
stage=.gpu/stage
rm -rf .gpu
mkdir -p "$stage/lib"
cp build/tools/streamdet_gpu_check build/tests/streamdet_native_tests "$stage/"
ldd build/tools/streamdet_gpu_check build/tests/streamdet_native_tests | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | ld-linux*) ;;  # the system's own
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
tar -C "$stage" -cJf .gpu/streamdet-gpu-check.tar.xz .
rm -rf "$stage"
# The YOLOv8n-architecture model, when made here (tools/make_yolov8n.py), goes along as it is, so
# that the GPU machine need not export it with its own PyTorch.
[[ -f build/models/yolov8n_arch.onnx ]] && cp build/models/yolov8n_arch.onnx .gpu/
ls -l .gpu/
