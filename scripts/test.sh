#!/usr/bin/env bash
# The second of the README's two commands (and what CI runs): installs what streamdet needs
# (Debian 12), builds it with its tests, and runs the whole suite: the unit/integration tests,
# the pipeline tests again under ThreadSanitizer, and the fuzz targets (model loader, frame
# messages) on a fixed number of inputs from a fixed seed (the same inputs on every machine).
# Idempotent.
#   STREAMDET_SKIP_TSAN=1        skip the ThreadSanitizer pass
#   STREAMDET_FUZZ_RUNS          model-loader fuzz inputs (default 1000000, about a minute here;
#                                0 skips all fuzzing)
#   STREAMDET_FRAME_FUZZ_RUNS    frame-message fuzz inputs (default 1000000, about 40 s here; 0 skips it)
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
# What the tests run (tests/CMakeLists.txt: streamdet_test_programs), not the benchmarks and tools
# no test runs: `./scripts/build.sh` alone builds everything.
./scripts/build.sh streamdet_test_programs

echo "== test suite"
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600

if [[ "${STREAMDET_SKIP_TSAN:-0}" != 1 ]]; then
  echo "== pipeline tests under ThreadSanitizer"
  ./scripts/tsan.sh
fi

fuzz_runs=${STREAMDET_FUZZ_RUNS:-1000000}
frame_fuzz_runs=${STREAMDET_FRAME_FUZZ_RUNS:-1000000}
if [[ "$fuzz_runs" != 0 ]]; then
  echo "== fuzzing: ONNX loader (${fuzz_runs} inputs), frame messages (${frame_fuzz_runs} inputs), seed 1"
  ./scripts/fuzz.sh "$fuzz_runs" "$frame_fuzz_runs"
fi
echo "== all tests passed"
