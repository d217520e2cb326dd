#!/usr/bin/env bash
# The second of the README's two commands (and what CI runs): installs what streamdet needs
# (Debian 12), builds it with its tests, and runs the whole suite: the unit/integration tests,
# the pipeline tests again under ThreadSanitizer, and the model-loader fuzz target for a short
# budget. Idempotent.
#   STREAMDET_SKIP_TSAN=1   skip the ThreadSanitizer pass
#   STREAMDET_FUZZ_SECONDS  fuzzing budget (default 60; 0 skips it)
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
./scripts/build.sh

echo "== test suite"
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600

if [[ "${STREAMDET_SKIP_TSAN:-0}" != 1 ]]; then
  echo "== pipeline tests under ThreadSanitizer"
  ./scripts/tsan.sh
fi

fuzz_seconds=${STREAMDET_FUZZ_SECONDS:-60}
if [[ -x scripts/fuzz.sh && "$fuzz_seconds" != 0 ]]; then
  echo "== ONNX loader fuzzing (${fuzz_seconds} s)"
  ./scripts/fuzz.sh "$fuzz_seconds"
fi
echo "== all tests passed"
