#!/usr/bin/env bash
# Builds the ONNX-loader fuzz target with clang (libFuzzer + AddressSanitizer + UBSan) into
# build-fuzz/ and runs it for a time budget (seconds, default 60) from a seed corpus of small
# models it generates. A crash leaves its input in build-fuzz/crash-* and fails the script.
#   scripts/fuzz.sh [SECONDS]
# STREAMDET_FUZZ_SEED (default 1) makes a run reproducible, so that CI judges the commit rather
# than the luck of the draw; 0 draws a fresh seed (exploration: run it long, keep what it finds).
# Past findings (tests/data/fuzz, also replayed by the unit tests) are read as seeds, so they run
# again here under the sanitizers.
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
  ./fuzz_onnx_loader -seed="${STREAMDET_FUZZ_SEED:-1}" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=65536 -timeout=20 -print_final_stats=1 corpus ../tests/data/fuzz
