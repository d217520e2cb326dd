#!/usr/bin/env bash
# Long fuzzing of the ONNX loader, to find new bugs (not part of the test suite: what it runs
# depends on the machine's speed). Bounded by time, a fresh random seed each run (or SEED), and a
# corpus that grows across runs in build-fuzz/explore-corpus. A crash stops it and leaves its input
# in build-fuzz/crash-*: fix the bug, then add the input to tests/data/fuzz (replayed by the unit
# tests and by scripts/fuzz.sh) with a named regression test.
#   scripts/fuzz-explore.sh [SECONDS] [SEED]      (default 3600 s, seed 0 = random)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-3600}
seed=${2:-0}
jobs=${STREAMDET_JOBS:-$(nproc)}
CXX=clang++ cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build-fuzz -j"$jobs"
corpus=build-fuzz/explore-corpus
if [[ ! -d "$corpus" ]]; then
  mkdir -p "$corpus"
  ./build-fuzz/make_seed_models "$corpus"
fi
cd build-fuzz
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ./fuzz_onnx_loader -seed="$seed" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=65536 -timeout=20 -print_final_stats=1 \
  explore-corpus ../tests/data/fuzz
