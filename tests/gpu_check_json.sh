#!/usr/bin/env bash
# The GPU check's output where there is no GPU (docs/gpu.md), so that neither the program, nor its
# JSON, nor the script that runs it on the GPU machine can rot:
#   gpu_check_json.sh program SOURCE_DIR WORK_DIR          streamdet_gpu_check --backend cpu: the
#       JSON's fields, then a run that aborts after its first op still leaves the JSON so far
#   gpu_check_json.sh script SOURCE_DIR WORK_DIR BUILD_DIR  scripts/gpu-check.sh --cpu BUILD_DIR:
#       every step runs and is summarized, and what lands in $OUT fits what the device tool
#       brings back (at most 8 files)
set -euo pipefail
what=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cd "$src"

# check_json FILE COMPLETE(true|false) MIN_OPS MIN_MODELS: the fields docs/gpu.md names.
check_json() {
  python3 - "$@" <<'EOF'
import json, sys
path, complete, min_ops, min_models = sys.argv[1], sys.argv[2] == "true", int(sys.argv[3]), int(sys.argv[4])
r = json.load(open(path))
def need(cond, what):
    if not cond:
        sys.exit(f"{path}: {what}")
need(r.get("complete") is complete, f"complete is {r.get('complete')}, expected {complete}")
for k in ("name", "driver", "cudnn", "cuda_driver", "cuda_runtime"):
    need(k in r.get("gpu", {}), f"gpu.{k} missing")
need(len(r["conformance"]) >= min_ops, f"{len(r['conformance'])} conformance rows, expected at least {min_ops}")
for row in r["conformance"]:
    for k in ("op", "pass", "error", "cases", "ran_on_backend"):
        need(k in row, f"conformance row {row.get('op')}: {k} missing")
    need(row["pass"] is True and row["error"] is None, f"op {row['op']} failed on the CPU path: {row['error']}")
need(len(r["models"]) >= min_models, f"{len(r['models'])} model rows, expected at least {min_models}")
for m in r["models"]:
    for k in ("model", "precision", "batch", "input", "pass", "error", "images_per_s"):
        need(k in m, f"model {m.get('model')}: {k} missing")
    need(m["pass"] is True and m["error"] is None, f"model {m['model']} failed on the CPU path: {m['error']}")
    need(m["latency_ms"]["median"] > 0 and m["latency_ms"]["p90"] >= m["latency_ms"]["median"], f"model {m['model']}: latency_ms {m['latency_ms']}")
    need(abs(m["images_per_s"] - m["batch"] * 1000 / m["latency_ms"]["median"]) < 1e-6 * m["images_per_s"], "images_per_s is not batch / median")
# NVDEC (tools/nvdec_check.h): where there is none, pass false with the reason; the clip is read.
for key, codec, size in (("nvdec", "h264", "640x360"), ("nvdec_hevc", "hevc", "320x180")):
    if key not in r:
        continue
    n = r[key]
    for k in ("pass", "error", "clip", "codec", "input", "frames_expected", "frames_decoded"):
        need(k in n, f"{key}.{k} missing")
    need(n["codec"] == codec and n["frames_expected"] == 48 and n["input"] == size, f"{key} clip: {n}")
    need(n["pass"] is True or (isinstance(n["error"], str) and n["error"]), f"{key}: failed without an error: {n}")
    if n["pass"]:
        need(n["psnr_db"]["min"] >= 50 and n["pts_in_order"] and n["decode_fps"] > 0, f"{key}: {n}")
if complete:
    need(r["failed"] == 0, f"failed: {r['failed']}")
print(f"{path}: ok ({len(r['conformance'])} ops, {len(r['models'])} models, complete={complete})")
EOF
}

case $what in
  program)
    prog=$4
    "$(dirname "$prog")/streamdet_nvdec_clip" --out "$work/clip" >/dev/null
    "$(dirname "$prog")/streamdet_nvdec_clip" --out "$work/clip_hevc" --codec hevc --width 320 --height 180 >/dev/null
    "$prog" --backend cpu --cases 4 --iters 3 --threads 1 --json "$work/check.json" --nvdec-clip "$work/clip" --nvdec-clip "$work/clip_hevc" \
      --model models/tiny_synth_v8.onnx --input 1x3x256x256 >"$work/check.txt"
    check_json "$work/check.json" true 10 1
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert "nvdec" in r and "nvdec_hevc" in r, "no nvdec or nvdec_hevc in check.json"' "$work/check.json"
    # A crash part-way (as a kernel fault would be): the JSON holds what was done before it.
    first=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["conformance"][0]["op"])' "$work/check.json")
    rc=0
    "$prog" --backend cpu --cases 4 --iters 3 --threads 1 --json "$work/partial.json" --abort-after "$first" \
      --model models/tiny_synth_v8.onnx --input 1x3x256x256 >"$work/partial.txt" 2>&1 || rc=$?
    [[ $rc -ge 128 ]] || { echo "--abort-after $first: exit $rc, expected a signal"; exit 1; }
    grep -q "^$first " "$work/partial.txt" || { echo "the line of $first was not printed before the crash"; exit 1; }
    check_json "$work/partial.json" false 1 0
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert len(r["conformance"]) == 1 and not r["models"], r' "$work/partial.json"
    ;;
  script)
    build=$4
    rc=0
    OUT="$work/out" "$src/scripts/gpu-check.sh" --cpu "$build" --budget 240 >"$work/script.txt" 2>&1 || rc=$?
    cat "$work/script.txt"
    [[ $rc == 0 ]] || { echo "gpu-check.sh --cpu: exit $rc"; exit 1; }
    for s in environment check native_tests; do
      grep -q "^$s: ok" "$work/out/summary.txt" || { echo "summary.txt: no '$s: ok'"; exit 1; }
    done
    grep -q '^total: ' "$work/out/summary.txt"
    check_json "$work/out/check.json" true 10 1
    python3 -c 'import json, sys; assert "nvdec" in json.load(open(sys.argv[1])), "no nvdec in check.json"' "$work/out/check.json"
    tar -tzf "$work/out/logs.tar.gz" | grep -q 'check.txt' || { echo "logs.tar.gz has no check.txt"; exit 1; }
    files=$(find "$work/out" -type f | wc -l)
    [[ $files -le 8 ]] || { echo "$files files in \$OUT: the device tool brings back 8"; exit 1; }
    # A budget spent early: every later step is still accounted for, none runs past it, and the
    # script says it failed (it does not stop at the first step that fails or times out).
    rc=0
    OUT="$work/short" "$src/scripts/gpu-check.sh" --cpu "$build" --budget 12 >"$work/short.txt" 2>&1 || rc=$?
    cat "$work/short.txt"
    [[ $rc != 0 ]] || { echo "gpu-check.sh --budget 12: exit 0 with steps skipped"; exit 1; }
    for s in environment check native_tests; do
      grep -q "^$s: " "$work/short/summary.txt" || { echo "short run: no line for $s"; exit 1; }
    done
    grep -q "^check: skipped, the budget of 12s is spent" "$work/short/summary.txt"
    grep -q '^total: .*some steps FAILED' "$work/short/summary.txt"
    ;;
  *) echo "usage: gpu_check_json.sh program|script SOURCE_DIR WORK_DIR ..." >&2; exit 2 ;;
esac
