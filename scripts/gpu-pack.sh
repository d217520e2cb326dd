#!/usr/bin/env bash
# Builds the self-contained GPU check (tools/gpu_check.cpp) and packs it, with the shared libraries
# it needs that the GPU machine lacks (oneDNN, ONNX's protobuf classes, protobuf, OpenMP, the
# OpenCL loader oneDNN links, libstdc++), into .gpu/streamdet-gpu-check.tar.xz (ignored by git):
# what the device tool carries (`carry: [".gpu"]`). The CUDA runtime is linked statically; cuDNN
# and cuBLAS, when the backend uses them, come from the GPU machine's PyTorch wheels. docs/gpu.md.
# The pack must run on another machine's processor: it refuses a build/ configured for this one
# (STREAMDET_NATIVE=ON, -march=native: an illegal instruction there). It also makes the
# YOLOv8n-architecture model here (Debian's python3-torch and python3-onnx, about 30 s), so that the
# GPU machine never exports it; without it the pack fails.
set -euo pipefail
cd "$(dirname "$0")/.."
if grep -q '^STREAMDET_NATIVE:BOOL=ON' build/CMakeCache.txt 2>/dev/null; then
  echo "gpu-pack.sh: build/ is configured with STREAMDET_NATIVE=ON (-march=native): reconfigure it with -DSTREAMDET_NATIVE=OFF (portable) first" >&2
  exit 2
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build streamdet_gpu_check streamdet_native_tests streamdet_nvdec_clip
# It exits 3 here (no GPU) but says which CUDA runtime it was built with, if any.
info=$(./build/tools/streamdet_gpu_check --backend cuda 2>&1 || true)
if ! grep -q '^cuda: runtime [0-9]' <<<"$info"; then
  echo "gpu-pack.sh: build/ has no CUDA backend (no CUDA toolkit found when configured): nothing to check on the GPU" >&2
  exit 2
fi
model=build/models/yolov8n_arch.onnx
if [[ ! -s $model || tools/make_yolov8n.py -nt $model ]]; then
  mkdir -p build/models
  echo "making $model (tools/make_yolov8n.py)"
  if ! /usr/bin/python3 tools/make_yolov8n.py --out "$model.tmp" >build/models/make_yolov8n.log 2>&1; then
    echo "gpu-pack.sh: tools/make_yolov8n.py failed (build/models/make_yolov8n.log): no pack without the YOLOv8n model" >&2
    exit 1
  fi
  mv "$model.tmp" "$model"
fi
# The NVDEC clips (H.264 640x360, HEVC 320x180) and their CPU-decoded reference frames (the GPU
# machine has no FFmpeg): made here.
make_clip() {
  local dir=$1
  shift
  if [[ ! -s $dir/reference.nv12 || build/tools/streamdet_nvdec_clip -nt $dir/reference.nv12 ]]; then
    rm -rf "$dir"
    build/tools/streamdet_nvdec_clip --out "$dir" "$@" || { echo "gpu-pack.sh: streamdet_nvdec_clip $* failed: no pack without the NVDEC clips" >&2; exit 1; }
  fi
}
make_clip build/nvdec_clip
make_clip build/nvdec_clip_hevc --codec hevc --width 320 --height 180
stage=.gpu/stage
rm -rf .gpu
mkdir -p "$stage/lib"
cp build/tools/streamdet_gpu_check build/tests/streamdet_native_tests "$stage/"
cp -r build/nvdec_clip "$stage/nvdec"
cp -r build/nvdec_clip_hevc "$stage/nvdec_hevc"
ldd build/tools/streamdet_gpu_check build/tests/streamdet_native_tests | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | ld-linux*) ;;  # the system's own
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
tar -C "$stage" -cJf .gpu/streamdet-gpu-check.tar.xz .
rm -rf "$stage"
# The YOLOv8n-architecture model goes along as it is: the GPU machine never exports it.
cp "$model" .gpu/yolov8n_arch.onnx
ls -l .gpu/
