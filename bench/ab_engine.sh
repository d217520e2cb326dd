#!/usr/bin/env bash
# Two builds of streamdet's native engine side by side, with ONNX Runtime as the fixed yardstick,
# on a shared, noisy machine: ROUNDS rounds, each timing build A, build B and ONNX Runtime back to
# back (median latency of ITERS runs each), then the median and quartiles of the per-round ratios
# B/A, A/ORT and B/ORT. For "this change costs nothing": B/A near 1, and B/ORT as A/ORT.
#   AB_BIN_A=/tmp/old/build/streamdet AB_BIN_B=build/streamdet \
#     bench/ab_engine.sh ROUNDS MODEL THREADS ITERS [SHAPE]   e.g. 8 models/tiny_synth_v8.onnx 1 300 1x3x256x256
set -euo pipefail
rounds=$1 model=$2 threads=$3 iters=$4 shape=${5:-1x3x640x640}
ort=${ORT_BENCH:-../shared/tools/ort-bench}
hw=${shape##*x}
native_ms() {
  "$1" bench -m "$model" -n "$iters" --threads "$threads" --input-size "$hw" 2>/dev/null | tail -1 | cut -d'|' -f7 |
    awk -F/ '{gsub(/ /, "", $2); print $2}'
}
rows=()
for ((r = 1; r <= rounds; ++r)); do
  a=$(native_ms "$AB_BIN_A") b=$(native_ms "$AB_BIN_B")
  o=$("$ort" "$model" --threads "$threads" --iters "$iters" --shape "$shape" | sed 's/.*median=\([0-9.]*\)ms.*/\1/')
  echo "round $r: A $a ms, B $b ms, onnxruntime $o ms"
  rows+=("$a,$b,$o")
done
python3 - "${rows[@]}" <<'PY'
import statistics, sys
rows = [tuple(float(x) for x in r.split(",")) for r in sys.argv[1:]]
def summary(name, values):
    v = sorted(values)
    q = statistics.quantiles(v, n=4) if len(v) > 1 else v * 3
    print(f"{name}: median {statistics.median(v):.3f} (quartiles {q[0]:.3f} / {q[2]:.3f}, min {v[0]:.3f}, max {v[-1]:.3f}) over {len(v)} rounds")
summary("B / A", [b / a for a, b, o in rows])
summary("A / onnxruntime", [a / o for a, b, o in rows])
summary("B / onnxruntime", [b / o for a, b, o in rows])
PY
