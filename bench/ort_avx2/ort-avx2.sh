#!/usr/bin/env bash
# ONNX Runtime on its AVX2 kernels on an AVX-512 machine: the stand-in for an AVX2-only processor
# that streamdet's `--cpu-isa avx2` is for ourselves (issue 23). Runs ../shared/tools/ort-bench
# (same arguments) on a copy of its onnxruntime-node whose libonnxruntime has every `cpuid`
# replaced by `ud2`, with cpuid_cap.c preloaded to answer them without AVX-512, AMX and AVX-VNNI.
#   bench/ort_avx2/ort-avx2.sh MODEL.onnx [ort-bench options]
# ORT_AVX_VNNI=1: AVX-VNNI left in (the stand-in for an AVX2 processor with AVX-VNNI, Intel's
# clients since Alder Lake; streamdet's `--cpu-isa avx2_vnni`).
# The copy is made once under $ORT_AVX2_DIR (default ~/.cache/ort-bench-avx2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# Not $ORT_BENCH: bench/ort_ratio.sh and bench/ab_engine.sh take this script as theirs.
ort_bench=$here/../../../shared/tools/ort-bench
src=${ORT_BENCH_CACHE:-$HOME/.cache/ort-bench}
dst=${ORT_AVX2_DIR:-$HOME/.cache/ort-bench-avx2}
if [[ ! -d $src/node_modules/onnxruntime-node ]]; then
  # ort-bench installs its package on first use.
  "$ort_bench" "${1:?usage: ort-avx2.sh MODEL.onnx [ort-bench options]}" --iters 1 --warmup 0 >/dev/null
fi
if [[ ! -f $dst/patched || $here/cpuid_cap.c -nt $dst/cpuid_cap.so ]]; then
  rm -rf "$dst" && mkdir -p "$dst"
  cp -a "$src/node_modules" "$dst/"
  lib=$(echo "$dst"/node_modules/onnxruntime-node/bin/napi-v*/linux/x64/libonnxruntime.so.*)
  cc -O2 -shared -fPIC -o "$dst/cpuid_cap.so" "$here/cpuid_cap.c"
  # Executable sections' addresses are their file offsets in this library (checked below).
  objdump -d --no-show-raw-insn -j .text "$lib" | awk '$2 == "cpuid" {sub(":", "", $1); print $1}' >"$dst/cpuid_sites"
  python3 - "$lib" "$dst/cpuid_sites" <<'PY'
import subprocess, sys
lib, sites = sys.argv[1], sys.argv[2]
hdr = subprocess.run(["objdump", "-h", lib], capture_output=True, text=True, check=True).stdout.split()
i = hdr.index(".text")
vma, off = int(hdr[i + 2], 16), int(hdr[i + 4], 16)
data = bytearray(open(lib, "rb").read())
n = 0
for line in open(sites):
    at = int(line, 16) - vma + off
    assert data[at:at + 2] == b"\x0f\xa2", hex(at)
    data[at:at + 2] = b"\x0f\x0b"
    n += 1
open(lib, "wb").write(data)
print(f"ort-avx2: {n} cpuid instructions of {lib} answered by cpuid_cap.so", file=sys.stderr)
PY
  touch "$dst/patched"
fi
CPUID_CAP_AVX_VNNI=${ORT_AVX_VNNI:-0} ORT_BENCH_CACHE=$dst LD_PRELOAD=$dst/cpuid_cap.so exec "$ort_bench" "$@"
