#!/usr/bin/env bash
# Installs the Debian 12 packages streamdet needs to build, test and run. Idempotent: does
# nothing when they are all present. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  ccache                   # a second build of the same sources (test.sh run again, CI re-runs) comes from the cache
  libopencv-dev            # videoio (FFmpeg, GStreamer, V4L2), imgproc, dnn
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev   # video files decoded to YUV
  libffmpeg-nvenc-dev      # ffnvcodec's NVDEC headers (dynlink_cuviddec.h, dynlink_nvcuvid.h): libnvcuvid is loaded at run time
  libdnnl-dev              # oneDNN: the native engine's CPU executor
  ocl-icd-opencl-dev       # only a Recommends of libdnnl-dev, but its CMake config requires OpenCL
  libonnx-dev libprotobuf-dev protobuf-compiler   # ONNX protobuf classes, our wire messages
  libturbojpeg0-dev        # JPEG frames from the wire (libjpeg-turbo, DCT-scaled decoding)
  libhiredis-dev           # Redis streams transport (hiredis 0.14: blocking client, binary-safe argv)
  redis-server             # a real redis-server for the Redis transport's tests
  libonnx-testdata         # ONNX's operator conformance tests (test suite)
  libexpected-dev libcli11-dev nlohmann-json3-dev
  libeigen3-dev            # the tracker's Kalman filter (track/box_kalman.cpp)
  libdlib-dev              # dlib's max_cost_assignment: the packaged solver the tracker's own is benchmarked against (bench/track_bench.cpp)
  libgtest-dev libgmock-dev libbenchmark-dev
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good   # GStreamer sources (videotestsrc, v4l2src, rtsp)
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev  # GStreamer's API (appsink), driven directly
  libgstrtspserver-1.0-dev # the RTSP camera the reconnect test kills and restarts (tests/helpers/rtsp_test_server.cpp)
  clang libclang-rt-14-dev # libFuzzer for the model-loader fuzz target
  libcpp-httplib-dev       # cpp-httplib: the --serve web view, /metrics and /health (serve/http_server.cpp)
  python3-prometheus-client  # Prometheus' own text parser, checking /metrics in the tests (Debian's /usr/bin/python3)
  pybind11-dev python3-dev python3-numpy  # the Python module (python/, built when pybind11 is found)
  python3-pytest           # the Python module's tests (Debian's /usr/bin/python3)
  python3-opencv           # examples/detect_video.py reads, draws and writes with it; the frames test compares with its decoder
  chromium chromium-driver python3-selenium  # headless Chromium renders the --report page and loads the web view in tests (skipped without)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
