#!/usr/bin/env bash
# Builds the ONNX-loader fuzz target with clang (libFuzzer + AddressSanitizer + UBSan) into
# build-fuzz/ and runs it for a fixed number of inputs (default 300000, about a minute here) from a
# fixed seed and a fresh seed corpus: every machine, fast or slow, runs the same inputs, so CI
# judges the commit and not the machine. A crash leaves its input in build-fuzz/crash-* and fails
# the script. Past findings (tests/data/fuzz, also replayed by the unit tests) are read as seeds,
# so they run again here under the sanitizers. The per-input timeout is generous (120 s) so that
# a slow machine does not report a slow input as a hang that a fast one passes.
#   scripts/fuzz.sh [RUNS]
# Long exploration, bounded by time and with fresh seeds, is scripts/fuzz-explore.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-300000}
jobs=${STREAMDET_JOBS:-$(nproc)}
CXX=clang++ cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build-fuzz -j"$jobs"
# A fresh corpus each time: what an earlier run added would change the inputs of this one.
corpus=build-fuzz/corpus
rm -rf "$corpus"
mkdir -p "$corpus"
./build-fuzz/make_seed_models "$corpus"
cd build-fuzz
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ./fuzz_onnx_loader -seed=1 -runs="$runs" -rss_limit_mb=4096 -max_len=65536 -timeout=120 -print_final_stats=1 corpus ../tests/data/fuzz
