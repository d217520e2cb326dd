#!/usr/bin/env bash
# Issue 23's three CPU ratios side by side on a shared, noisy machine: each round times, back to
# back, the float32 model, the same model under --precision bf16 (where the processor has
# avx512_bf16 or AMX; skipped elsewhere), its int8 (QDQ) copy, and ONNX Runtime on the float32
# model (../shared/tools/ort-bench), each the median latency of ITERS runs; then the medians and
# quartiles of the per-round ratios fp32 / ONNX Runtime (target <= 0.5 with AVX-512), fp32 / bf16
# (>= 1.5) and fp32 / int8 (>= 2 with VNNI).
#   bench/cpu_targets.sh ROUNDS FP32_MODEL INT8_MODEL [THREADS] [ITERS]
#   e.g. bench/cpu_targets.sh 16 /tmp/v8n.onnx /tmp/v8n_int8.onnx
# (the models: tools/make_yolov8n.py --out /tmp/v8n.onnx, then streamdet quantize -m /tmp/v8n.onnx
# --calib DIR --out /tmp/v8n_int8.onnx). STREAMDET_BIN: the binary (default build/streamdet);
# extra bench options in BENCH_OPTS (e.g. "--cpu-isa avx2"). Write the processor's flags beside
# the figures: grep -o 'avx[^ ]*' /proc/cpuinfo | sort -u
set -euo pipefail
if (($# < 3)); then
  echo "usage: bench/cpu_targets.sh ROUNDS FP32_MODEL INT8_MODEL [THREADS] [ITERS]" >&2
  exit 2
fi
rounds=$1 fp32=$2 int8=$3 threads=${4:-2} iters=${5:-50}
bin=${STREAMDET_BIN:-build/streamdet}
ort=${ORT_BENCH:-../shared/tools/ort-bench}
read -r -a extra <<<"${BENCH_OPTS:-}"
# The engine's median latency (ms) from bench's last table row, or nothing when bench fails.
median_ms() {
  "$bin" bench -m "$1" -n "$iters" --threads "$threads" --workers 1 "${extra[@]}" "${@:2}" 2>/dev/null |
    tail -1 | cut -d'|' -f7 | awk -F/ '{gsub(/ /, "", $2); print $2}'
}
bf16=yes
if ! "$bin" bench -m "$fp32" -n 1 --threads "$threads" --workers 1 --precision bf16 "${extra[@]}" >/dev/null 2>&1; then
  bf16=no
  echo "bf16: refused on this processor, left out" >&2
fi
for ((r = 1; r <= rounds; ++r)); do
  f=$(median_ms "$fp32")
  b=-
  [[ $bf16 == yes ]] && b=$(median_ms "$fp32" --precision bf16)
  i=$(median_ms "$int8")
  o=$("$ort" "$fp32" --threads "$threads" --iters "$iters" --shape 1x3x640x640 | sed 's/.*median=\([0-9.]*\)ms.*/\1/')
  echo "round $r: fp32 $f ms, bf16 $b ms, int8 $i ms, onnxruntime $o ms"
done | tee /dev/stderr | python3 -c '
import re, statistics, sys
rows = [re.findall(r"(\w+) ([0-9.]+|-) ms", line) for line in sys.stdin]
t = {}
for row in rows:
    for k, v in row:
        if v != "-":
            t.setdefault(k, []).append(float(v))
def ratio(a, b, target):
    if b not in t or len(t[b]) != len(t[a]):
        return
    r = sorted(x / y for x, y in zip(t[a], t[b]))
    q = statistics.quantiles(r, n=4) if len(r) > 1 else r * 3
    print(f"{a} / {b}: median {statistics.median(r):.3f} (quartiles {q[0]:.3f} / {q[2]:.3f}) over {len(r)} rounds; target {target}")
ratio("fp32", "onnxruntime", "<= 0.5 (AVX-512), <= 0.75 (AVX2)")
ratio("fp32", "bf16", ">= 1.5")
ratio("fp32", "int8", ">= 2 (VNNI), >= 1.5 (AVX2)")
for k, v in t.items():
    print(f"{k}: median {statistics.median(v):.2f} ms")
'
