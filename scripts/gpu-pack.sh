#!/usr/bin/env bash
# Builds the self-contained GPU check (tools/gpu_check.cpp) and packs it, with the shared libraries
# it needs that the GPU machine lacks (oneDNN, ONNX's protobuf classes, protobuf, OpenMP, the
# OpenCL loader oneDNN links, libstdc++), into .gpu/streamdet-gpu-check.tar.xz (ignored by git):
# what the device tool carries (`carry: [".gpu"]`). The CUDA runtime is linked statically; cuDNN
# and cuBLAS, when the backend uses them, come from the GPU machine's PyTorch wheels. docs/gpu.md.
# The pack must run on another machine's processor: it is built in a folder of its own, build-gpu/,
# always portable (STREAMDET_NATIVE=OFF: no -march=native, whose instructions the GPU machine's
# processor may lack), however the main build folder is configured; only the three programs it
# packs. It also makes the YOLOv8n-architecture model (Debian's python3-torch and python3-onnx,
# about 30 s), so that the GPU machine never exports it; without it the pack fails.
set -euo pipefail
cd "$(dirname "$0")/.."
b=build-gpu
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTREAMDET_NATIVE=OFF >/dev/null
ninja -C "$b" streamdet_gpu_check streamdet_native_tests streamdet_nvdec_clip
# It exits 3 here (no GPU) but says which CUDA runtime it was built with, if any.
info=$(./"$b"/tools/streamdet_gpu_check --backend cuda 2>&1 || true)
if ! grep -q '^cuda: runtime [0-9]' <<<"$info"; then
  echo "gpu-pack.sh: $b/ has no CUDA backend (no CUDA toolkit found when configured): nothing to check on the GPU" >&2
  exit 2
fi
model=$b/models/yolov8n_arch.onnx
if [[ ! -s $model || tools/make_yolov8n.py -nt $model ]]; then
  mkdir -p "$b/models"
  echo "making $model (tools/make_yolov8n.py)"
  if ! /usr/bin/python3 tools/make_yolov8n.py --out "$model.tmp" >"$b/models/make_yolov8n.log" 2>&1; then
    echo "gpu-pack.sh: tools/make_yolov8n.py failed ($b/models/make_yolov8n.log): no pack without the YOLOv8n model" >&2
    exit 1
  fi
  mv "$model.tmp" "$model"
fi
# The NVDEC clips (H.264 640x360, HEVC 320x180) and their CPU-decoded reference frames (the GPU
# machine has no FFmpeg): made here. And the nvdec_e2e clip: H.264 at 1280x720, 90 frames (3 s,
# 1.3 MB), with no reference (the check downloads NVDEC's own frames; 90 reference frames would
# be 124 MB).
make_clip() {
  local dir=$1
  shift
  if [[ ! -e $dir/reference.nv12 || "$b/tools/streamdet_nvdec_clip" -nt $dir/reference.nv12 ]]; then  # written last (empty: --no-reference)
    rm -rf "$dir"
    "$b/tools/streamdet_nvdec_clip" --out "$dir" "$@" || { echo "gpu-pack.sh: streamdet_nvdec_clip $* failed: no pack without the NVDEC clips" >&2; exit 1; }
  fi
}
make_clip "$b/nvdec_clip"
make_clip "$b/nvdec_clip_hevc" --codec hevc --width 320 --height 180
make_clip "$b/nvdec_clip_720p" --width 1280 --height 720 --frames 90 --no-reference
stage=.gpu/stage
rm -rf .gpu
mkdir -p "$stage/lib"
cp "$b/tools/streamdet_gpu_check" "$b/tests/streamdet_native_tests" "$stage/"
cp -r "$b/nvdec_clip" "$stage/nvdec"
cp -r "$b/nvdec_clip_hevc" "$stage/nvdec_hevc"
cp -r "$b/nvdec_clip_720p" "$stage/nvdec_720p"
ldd "$b/tools/streamdet_gpu_check" "$b/tests/streamdet_native_tests" | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
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
# What the device tool carries at most (64 MiB for all of .gpu/): refused here rather than there.
size=$(du -sb .gpu | cut -f1)
if ((size > 60 * 1024 * 1024)); then
  echo "gpu-pack.sh: .gpu/ is $size bytes, over the 60 MiB kept under the device tool's 64 MiB carry limit" >&2
  exit 1
fi
