#!/usr/bin/env bash
# Configures and builds streamdet (Release) into build/. Idempotent and incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${STREAMDET_JOBS:-$(nproc)}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
ninja -C build -j"$jobs"
