#!/usr/bin/env bash
# Builds the test binary with ThreadSanitizer into build-tsan/ and runs the concurrent parts
# (pipeline, frame settlement, queues, scheduler, reorder buffer, packet pool, profiler, live sources,
# the live-source supervisor, the web view's server, frame board and live metrics). Uninstrumented third-party libraries
# (FFmpeg, OpenMP/oneDNN) are suppressed in tests/tsan.supp.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${STREAMDET_JOBS:-$(nproc)}
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTREAMDET_SANITIZE=thread \
  -DSTREAMDET_BUILD_BENCH=OFF -DSTREAMDET_CUDA=OFF >/dev/null
# Only the tests below and what they use (tests/CMakeLists.txt: streamdet_tsan_tests), not all of
# streamdet_tests: the same tests, a third of the build.
ninja -C build-tsan -j"$jobs" streamdet_tsan_tests
filter='PipelineTest.*:LivePipelineTest.*:FrameSettlement.*:HtmlReport.*:SourceHealth.*:Profiler*:LatencyHistogram*:SyntheticSource.*:BoundedQueue.*:FrameScheduler.*:ReorderBuffer.*:PacketPool.*:FrameBoard.*:LiveMetrics.*:ServeHttp.InProcess*:ServeHttp.Streams*:SupervisedSourceTest.*:EveryState/SupervisedSourceStopTest.*'
# Every pattern of the filter matches tests of streamdet_tsan_tests: a suite added to the filter
# whose file is not in that program would otherwise be skipped without a word.
listed=$(./build-tsan/tests/streamdet_tsan_tests --gtest_list_tests --gtest_filter="$filter" |
         awk '/^[^ ]/ {suite = $1} /^  / {print suite $1}')
IFS=: read -ra patterns <<<"$filter"
for p in "${patterns[@]}"; do
  prefix=${p%%\**}
  if ! awk -v prefix="$prefix" 'index($0, prefix) == 1 {found = 1} END {exit !found}' <<<"$listed"; then
    echo "tsan.sh: no test of streamdet_tsan_tests matches '$p': add its file to streamdet_tsan_tests (tests/CMakeLists.txt)" >&2
    exit 1
  fi
done
TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp halt_on_error=1 second_deadlock_stack=1" \
  ./build-tsan/tests/streamdet_tsan_tests --gtest_filter="$filter"
