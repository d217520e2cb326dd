#!/usr/bin/env bash
# Builds the ONNX-loader fuzz target with clang (libFuzzer + AddressSanitizer + UBSan) into
# build-fuzz/ and runs it for a time budget (seconds, default 60) from a seed corpus of small
# models it generates. A crash leaves its input in build-fuzz/crash-* and fails the script.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
jobs=${STREAMDET_JOBS:-$(nproc)}
CXX=clang++ cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build-fuzz -j"$jobs"
corpus=build-fuzz/corpus
mkdir -p "$corpus"
./build-fuzz/make_seed_models "$corpus"
cd build-fuzz
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ./fuzz_onnx_loader -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=65536 -timeout=20 -print_final_stats=1 corpus
