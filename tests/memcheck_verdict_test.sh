#!/usr/bin/env bash
# tools/memcheck_verdict.py on constructed memcheck logs: the leaks streamdet keeps on purpose
# (cuDNN's handle, the graph engine's cached plans) pass; any other error, or a failed run with
# no error block read, fails. The first case is the shape of the first GPU run's log.
set -euo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
verdict() { python3 "$src/tools/memcheck_verdict.py" "$1" >"$work/out.txt"; }

handle_leak='========= Leaked 25,344 bytes at 0x7f1add400000
=========     Saved host backtrace up to driver entry point at allocation time
=========         Host Frame: cuMemAlloc_v2 [0x32b91f] in libcuda.so.1
=========         Host Frame: cudnnCreate [0x6540] in libcudnn.so.9
=========         Host Frame: main [0x46458] in streamdet_gpu_check
========= '
plan_leak='========= Leaked 4,096 bytes at 0x7f1add900000
=========     Saved host backtrace up to driver entry point at allocation time
=========         Host Frame: cuMemAlloc_v2 [0x32b91f] in libcuda.so.1
=========         Host Frame: cudnnBackendFinalize [0x1234] in libcudnn_graph.so.9
========= '
bad_write='========= Invalid __global__ write of size 16 bytes
=========     at void sd::native::cuda::strided_copy_kernel<uint4>(...)+0x2a0 in data_kernels.cu:20
=========     by thread (3,0,0) in block (7,0,0)
========= '
tail_lines='========= Target application returned an error
========= LEAK SUMMARY: 25352 bytes leaked in 3 allocations
========= ERROR SUMMARY: 3 errors'

printf '========= COMPUTE-SANITIZER\n%s\n%s\n%s\n' "$handle_leak" "$plan_leak" "$tail_lines" >"$work/known.log"
verdict "$work/known.log" || { echo "known leaks only: failed"; cat "$work/out.txt"; exit 1; }
grep -q '2 error(s), 1 of them leaks of .* handle (cudnnCreate), 1 of its cached graph plans (cudnnBackend\*), 0 other' "$work/out.txt" ||
  { echo "known leaks only: $(cat "$work/out.txt")"; exit 1; }

printf '========= COMPUTE-SANITIZER\n%s\n%s\n%s\n' "$handle_leak" "$bad_write" "$tail_lines" >"$work/bad.log"
rc=0
verdict "$work/bad.log" || rc=$?
[[ $rc == 9 ]] || { echo "an invalid write: exit $rc, expected 9"; exit 1; }
grep -q ', 1 other$' "$work/out.txt" || { echo "an invalid write: $(cat "$work/out.txt")"; exit 1; }

printf '========= COMPUTE-SANITIZER\n%s\n' "$tail_lines" >"$work/none.log"
rc=0
verdict "$work/none.log" || rc=$?
[[ $rc == 9 ]] || { echo "a failed run with no block read: exit $rc, expected 9"; exit 1; }
echo ok
