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
ninja -C build-tsan -j"$jobs" streamdet_tests
TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp halt_on_error=1 second_deadlock_stack=1" \
  ./build-tsan/tests/streamdet_tests \
  --gtest_filter='PipelineTest.*:LivePipelineTest.*:FrameSettlement.*:HtmlReport.*:SourceHealth.*:Profiler*:LatencyHistogram*:SyntheticSource.*:BoundedQueue.*:FrameScheduler.*:ReorderBuffer.*:PacketPool.*:FrameBoard.*:LiveMetrics.*:ServeHttp.InProcess*:ServeHttp.Streams*:SupervisedSourceTest.*:EveryState/SupervisedSourceStopTest.*'
