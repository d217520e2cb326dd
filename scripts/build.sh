#!/usr/bin/env bash
# Configures and builds streamdet (Release) into build/. Idempotent and incremental.
#   scripts/build.sh [-DOPTION=VALUE ...] [TARGET ...]
# -D options go to CMake; targets (e.g. streamdet) limit what is built (default: everything,
# tests and benchmarks included).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${STREAMDET_JOBS:-$(nproc)}
cmake_args=()
targets=()
for a in "$@"; do
  if [[ $a == -* ]]; then cmake_args+=("$a"); else targets+=("$a"); fi
done
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" >/dev/null
ninja -C build -j"$jobs" "${targets[@]}"
