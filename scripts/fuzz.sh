#!/usr/bin/env bash
# Builds the ONNX-loader fuzz target with clang (libFuzzer + AddressSanitizer + UBSan) into
# build-fuzz/ and runs it for a fixed number of inputs (default 1000000, about a minute here) from a
# fixed seed and a fresh seed corpus: every machine, fast or slow, runs the same inputs, so CI
# judges the commit and not the machine. A crash leaves its input in build-fuzz/crash-* and fails
# the script. Past findings (tests/data/fuzz, also replayed by the unit tests) are read as seeds,
# so they run again here under the sanitizers. The per-input timeout is generous (120 s) so that
# a slow machine does not report a slow input as a hang that a fast one passes.
#   scripts/fuzz.sh [RUNS]
# Long exploration, bounded by time and with fresh seeds, is scripts/fuzz-explore.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
jobs=${STREAMDET_JOBS:-$(nproc)}
CXX=clang++ cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build-fuzz -j"$jobs"
# A fresh corpus each time: what an earlier run added would change the inputs of this one.
corpus=build-fuzz/corpus
rm -rf "$corpus"
mkdir -p "$corpus"
./build-fuzz/make_seed_models "$corpus"
cd build-fuzz
# The same inputs on every run: a fixed seed and count, no periodic re-reading of the corpus
# (-reload=0 is time-based otherwise), one OpenMP thread, and no address randomization (the
# engine's coverage otherwise varies a little with where things are mapped, and with it what
# libFuzzer keeps). setarch -R is util-linux's; where a sandbox forbids it, the run goes on
# randomized and says so.
no_aslr=(setarch -R)
if ! setarch -R true 2>/dev/null; then
  echo "fuzz.sh: cannot turn off address randomization here; the inputs may differ slightly between runs" >&2
  no_aslr=()
fi
OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  "${no_aslr[@]}" ./fuzz_onnx_loader -seed=1 -runs="$runs" -reload=0 -rss_limit_mb=4096 -max_len=65536 -timeout=120 \
  -print_final_stats=1 corpus ../tests/data/fuzz
