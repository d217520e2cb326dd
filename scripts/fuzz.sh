#!/usr/bin/env bash
# Builds the fuzz targets with clang (libFuzzer + AddressSanitizer + UBSan) into build-fuzz/ and
# runs each for a fixed number of inputs from a fixed seed and a fresh corpus: every machine, fast
# or slow, runs the same inputs, so CI judges the commit and not the machine.
#   - fuzz_onnx_loader, the native engine's model loader: RUNS inputs (default 1000000, about a
#     minute here), seeded with make_seed_models' models and the past findings in tests/data/fuzz;
#   - fuzz_frame_message, the frame messages off the wire (parsing, JPEG decoding): FRAME_RUNS
#     inputs (default 1000000, about 40 s here), seeded with the committed corpus
#     tests/data/fuzz_frames (make_seed_frames' seeds and past findings).
# A count of 0 skips that target. A crash leaves its input in build-fuzz/crash-* and fails the
# script. The committed inputs are also replayed by the unit tests; here they run again under
# the sanitizers. The per-input timeout is generous (120 s) so that a slow machine does not report
# a slow input as a hang that a fast one passes.
#   scripts/fuzz.sh [RUNS] [FRAME_RUNS]
# Long exploration, bounded by time and with fresh seeds, is scripts/fuzz-explore.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
frame_runs=${2:-1000000}
jobs=${STREAMDET_JOBS:-$(nproc)}
CXX=clang++ cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build-fuzz -j"$jobs"
cd build-fuzz
rm -rf seeds-onnx
mkdir seeds-onnx
./make_seed_models seeds-onnx
# The same inputs on every run and every machine:
#  - a fixed seed and count, and no periodic re-reading of the corpus (-reload=0 is time-based);
#  - a fresh corpus each time: what an earlier run added would change the inputs of this one;
#  - the seeds as one list in name order (-seed_inputs): libFuzzer runs seeds of one size in
#    the order it was given them, and a folder's order differs between file systems;
#  - no -use_cmp (values compared by the code, addresses among them, feed its mutations) and no
#    stack-depth coverage (fuzz/CMakeLists.txt): both vary with where the stack starts, which
#    moves with the size of the environment; and the environment emptied (env -i) but for what
#    the run needs;
#  - one OpenMP thread, and no address randomization (the engine's coverage varies a little with
#    where things are mapped). setarch -R is util-linux's; where a sandbox forbids it, the run
#    goes on randomized and says so.
no_aslr=(setarch -R)
if ! setarch -R true 2>/dev/null; then
  echo "fuzz.sh: cannot turn off address randomization here; the inputs may differ slightly between runs" >&2
  no_aslr=()
fi
# fuzz TARGET RUNS MAX_LEN SEED_FOLDER...
fuzz() {
  local target=$1 count=$2 max_len=$3
  shift 3
  echo "== ${target}: ${count} inputs, seed 1"
  rm -rf "corpus-$target"
  mkdir "corpus-$target"
  # (no newline at the end: libFuzzer would read it as part of the last name)
  find "$@" -type f | LC_ALL=C sort | paste -sd, | tr -d '\n' >"$target.seeds"
  env -i PATH="$PATH" OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "${no_aslr[@]}" "./$target" -seed=1 -runs="$count" -reload=0 -use_cmp=0 -rss_limit_mb=4096 -max_len="$max_len" -timeout=120 \
    -print_final_stats=1 -seed_inputs=@"$target.seeds" "corpus-$target"
}
# The two targets run side by side (one core each), each into its own log, shown when it ends: each
# is its own process with its own seed, count and corpus, so its inputs are the ones it would get
# alone.
pids=()
targets=()
start() {
  fuzz "$@" >"$1.log" 2>&1 &
  pids+=($!)
  targets+=("$1")
}
if [[ "$runs" != 0 ]]; then start fuzz_onnx_loader "$runs" 65536 seeds-onnx ../tests/data/fuzz; fi
if [[ "$frame_runs" != 0 ]]; then start fuzz_frame_message "$frame_runs" 16384 ../tests/data/fuzz_frames; fi
failed=0
for i in "${!pids[@]}"; do
  status=0
  wait "${pids[$i]}" || status=$?
  cat "${targets[$i]}.log"
  if ((status != 0)); then
    echo "fuzz.sh: ${targets[$i]} failed (exit ${status}): log build-fuzz/${targets[$i]}.log (a crash leaves its input in build-fuzz/crash-*)" >&2
    failed=1
  fi
done
exit "$failed"
