#!/usr/bin/env bash
# Long fuzzing of one target, to find new bugs (not part of the test suite: what it runs depends
# on the machine's speed). Bounded by time, a fresh random seed each run (or SEED), and a corpus
# that grows across runs in build-fuzz/explore-corpus (explore-frames for the frame target). A
# crash stops it and leaves its input in build-fuzz/crash-*: fix the bug, then add the input to
# the committed inputs, tests/data/fuzz for the ONNX loader (replayed by tests/native_loader_test)
# or tests/data/fuzz_frames for the frame messages (tests/frame_codec_test), with a named
# regression test; scripts/fuzz.sh runs them as seeds.
#   scripts/fuzz-explore.sh [SECONDS] [SEED] [TARGET]   (default 3600 s, seed 0 = random,
#                                                       target onnx or frames, default onnx)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-3600}
seed=${2:-0}
target=${3:-onnx}
jobs=${STREAMDET_JOBS:-$(nproc)}
CXX=clang++ cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build-fuzz -j"$jobs"
case "$target" in
  onnx)
    corpus=build-fuzz/explore-corpus
    if [[ ! -d "$corpus" ]]; then
      mkdir -p "$corpus"
      ./build-fuzz/make_seed_models "$corpus"
    fi
    cd build-fuzz
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ./fuzz_onnx_loader -seed="$seed" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=65536 -timeout=20 -print_final_stats=1 \
      explore-corpus ../tests/data/fuzz
    ;;
  frames)
    mkdir -p build-fuzz/explore-frames
    cd build-fuzz
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ./fuzz_frame_message -seed="$seed" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=16384 -timeout=20 -print_final_stats=1 \
      explore-frames ../tests/data/fuzz_frames
    ;;
  *)
    echo "fuzz-explore.sh: unknown target '$target' (onnx or frames)" >&2
    exit 2
    ;;
esac
