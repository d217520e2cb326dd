#!/usr/bin/env bash
# streamdet's native engine against ONNX Runtime (../shared/tools/ort-bench) on a shared, noisy
# machine: ROUNDS rounds, each timing the native engine then ONNX Runtime back to back (median
# latency of ITERS runs each), one ratio per round, then the median and quartiles of the ratios.
#   bench/ort_ratio.sh ROUNDS MODEL THREADS ITERS [SHAPE]     e.g. 10 models/tiny_synth_v8.onnx 1 400 1x3x256x256
set -euo pipefail
rounds=$1 model=$2 threads=$3 iters=$4 shape=${5:-1x3x640x640}
bin=${STREAMDET_BIN:-build/streamdet}
ort=${ORT_BENCH:-../shared/tools/ort-bench}
hw=${shape##*x}
ratios=()
for ((r = 1; r <= rounds; ++r)); do
  n=$("$bin" bench -m "$model" -n "$iters" --threads "$threads" --input-size "$hw" 2>/dev/null | tail -1 | cut -d'|' -f7 | awk -F/ '{gsub(/ /, "", $2); print $2}')
  o=$("$ort" "$model" --threads "$threads" --iters "$iters" --shape "$shape" | sed 's/.*median=\([0-9.]*\)ms.*/\1/')
  ratio=$(python3 -c "print(f'{$n / $o:.3f}')")
  echo "round $r: native $n ms, onnxruntime $o ms, ratio $ratio"
  ratios+=("$ratio")
done
python3 - "${ratios[@]}" <<'PY'
import statistics, sys
r = sorted(float(x) for x in sys.argv[1:])
q = statistics.quantiles(r, n=4) if len(r) > 1 else r * 3
print(f"native / onnxruntime: median {statistics.median(r):.3f} over {len(r)} rounds (quartiles {q[0]:.3f} / {q[2]:.3f}, min {r[0]:.3f}, max {r[-1]:.3f})")
PY
