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

# check_json FILE COMPLETE(true|false) MIN_OPS MIN_MODELS [MIN_TIMING [STREAMS...]]: the fields docs/gpu.md names.
check_json() {
  python3 - "$@" <<'EOF'
import json, sys
path, complete, min_ops, min_models = sys.argv[1], sys.argv[2] == "true", int(sys.argv[3]), int(sys.argv[4])
min_timing = int(sys.argv[5]) if len(sys.argv) > 5 else 0
want_streams = [int(n) for n in sys.argv[6:]]
r = json.load(open(path))
def need(cond, what):
    if not cond:
        sys.exit(f"{path}: {what}")
need(r.get("complete") is complete, f"complete is {r.get('complete')}, expected {complete}")
for k in ("name", "driver", "cudnn", "cuda_driver", "cuda_runtime"):
    need(k in r.get("gpu", {}), f"gpu.{k} missing")
need(len(r["conformance"]) >= min_ops, f"{len(r['conformance'])} conformance rows, expected at least {min_ops}")
for row in r["conformance"]:
    for k in ("op", "precision", "pass", "error", "cases", "ran_on_backend", "device_float"):
        need(k in row, f"conformance row {row.get('op')}: {k} missing")
# Every op in fp32 and in fp16, in that order.
precisions = {}
for row in r["conformance"]:
    precisions.setdefault(row["op"], []).append(row["precision"])
for op, p in precisions.items():
    need(p == ["fp32", "fp16"], f"op {op}: precisions {p}, expected fp32 then fp16")
    need(row["pass"] is True and row["error"] is None, f"op {row['op']} failed on the CPU path: {row['error']}")
need(len(r["models"]) >= min_models, f"{len(r['models'])} model rows, expected at least {min_models}")
for m in r["models"]:
    for k in ("model", "precision", "batch", "input", "pass", "error", "images_per_s", "device_float", "tolerance",
              "max_abs_diff_over_max_abs"):
        need(k in m, f"model {m.get('model')}: {k} missing")
    if m["precision"] == "fp16" and m["model"].endswith("tiny_synth_v8.onnx"):
        # The bundled detector's fp16 row compares detections (on the CPU path both are float32).
        d = m.get("detections")
        need(d is not None and d["same"] is True and d["reference"] > 0, f"model {m['model']} fp16: detections {d}")
    need(m["pass"] is True and m["error"] is None, f"model {m['model']} failed on the CPU path: {m['error']}")
    need(m["latency_ms"]["median"] > 0 and m["latency_ms"]["p90"] >= m["latency_ms"]["median"], f"model {m['model']}: latency_ms {m['latency_ms']}")
    need(abs(m["images_per_s"] - m["batch"] * 1000 / m["latency_ms"]["median"]) < 1e-6 * m["images_per_s"], "images_per_s is not batch / median")
need([m["precision"] for m in r["models"]] == ["fp32", "fp16"] * (len(r["models"]) // 2), "models: each in fp32, then fp16")
timing = r.get("timing", [])
need(len(timing) >= min_timing, f"{len(timing)} timing rows, expected at least {min_timing}")
for t in timing:
    for k in ("model", "precision", "batch", "input", "cuda_graphs", "pass", "error", "latency_ms", "images_per_s", "steady_state", "graph"):
        need(k in t, f"timing row {t.get('model')} batch {t.get('batch')}: {k} missing")
    need(t["pass"] is True and t["error"] is None, f"timing row batch {t['batch']} graphs {t['cuda_graphs']} failed on the CPU path: {t['error']}")
    need(t["latency_ms"]["median"] > 0 and t["latency_ms"]["p90"] >= t["latency_ms"]["median"] >= t["latency_ms"]["min"], f"timing latency_ms {t['latency_ms']}")
    if "workers" not in t:
        need(abs(t["images_per_s"] - t["batch"] * 1000 / t["latency_ms"]["median"]) < 1e-6 * t["images_per_s"], "timing images_per_s is not batch / median")
    else:
        need(t["workers"] == 2 and t["images_per_s"] > 0 and t["runs"] >= 6, f"the two-worker row: {t}")
    need(all(v == 0 for k, v in t["steady_state"].items() if k != "graph_launches"), f"timing steady_state {t['steady_state']}")
if min_timing:
    need(any(t["batch"] == 1 and t["cuda_graphs"] is True for t in timing) and any(t["batch"] == 1 and t["cuda_graphs"] is False for t in timing),
         "no batch-1 rows with and without CUDA graphs")
    need(any(t["batch"] > 1 and "max_rel_diff_vs_batch1" in t for t in timing), "no batch row checked against batch 1")
    need(any("max_rel_diff_vs_graph" in t for t in timing), "the row without graphs was not checked against the graph's")
    need(any(t.get("workers") == 2 and "max_rel_diff_vs_batch1" in t for t in timing), "no two-worker row checked against batch 1")
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
# The end-to-end part (tools/gpu_check_nvdec_e2e.h): here there is no NVDEC, and it says so.
if "nvdec_e2e" in r:
    n = r["nvdec_e2e"]
    for k in ("pass", "error", "fps", "engine_fps", "e2e_over_engine", "frames", "input", "precision", "codec", "clip_frames"):
        need(k in n, f"nvdec_e2e.{k} missing")
    need(n["input"] == "1280x720" and n["codec"] == "h264", f"nvdec_e2e clip: {n}")
    need(n["pass"] is False and n.get("skipped") is True and n["error"].startswith("skipped: no NVDEC"), f"nvdec_e2e on the CPU path: {n}")
    need(n["fps"] is None and n["frames"] == 0, f"nvdec_e2e measured without NVDEC: {n}")
# The streams part (tools/gpu_check_streams.h): one row per count, in order, end to end on the CPU path.
streams = r.get("streams", [])
need([s["streams"] for s in streams] == want_streams, f"streams rows {[s['streams'] for s in streams]}, expected {want_streams}")
for s in streams:
    for k in ("streams", "workers", "pass", "error", "fps", "per_stream_fps", "realtime", "latency_ms", "e2e_over_engine", "gpu_busy",
              "engine_fps", "frames", "preprocess", "letterbox_matches_reference", "stream_per_worker"):
        need(k in s, f"streams row {s.get('streams')}: {k} missing")
    need(s["pass"] is True and s["error"] is None, f"streams row {s['streams']} failed on the CPU path: {s['error']}")
    need(s["letterbox_matches_reference"] is True, f"streams row {s['streams']}: the host letterbox is not the reference's")
    need(s["fps"] > 0 and s["engine_fps"] > 0 and s["frames"] > 0, f"streams row {s['streams']}: {s}")
    need(abs(s["per_stream_fps"] * s["streams"] - s["fps"]) < 1e-6 * s["fps"], "per_stream_fps is not fps / streams")
    need(s["realtime"] == (s["per_stream_fps"] >= s["target_stream_fps"]), "realtime is not per_stream_fps >= the target")
    need(abs(s["e2e_over_engine"] - s["fps"] / s["engine_fps"]) < 1e-6 * s["e2e_over_engine"], "e2e_over_engine is not fps / engine_fps")
    need(0 < s["latency_ms"]["median"] <= s["latency_ms"]["p99"], f"streams latency_ms {s['latency_ms']}")
    # No GPU, no NVML here: the busy share is absent, and the row says why.
    need(s["gpu_busy"] is None and s.get("gpu_busy_note"), f"streams row {s['streams']}: gpu_busy {s['gpu_busy']} without a GPU")
    need(s["stream_per_worker"] is None, "stream_per_worker on the CPU path")
if complete:
    need(r["failed"] == 0, f"failed: {r['failed']}")
print(f"{path}: ok ({len(r['conformance'])} ops, {len(r['models'])} models, {len(timing)} timing rows, {len(streams)} streams rows, complete={complete})")
EOF
}

case $what in
  program)
    prog=$4
    "$(dirname "$prog")/streamdet_nvdec_clip" --out "$work/clip" >/dev/null
    "$(dirname "$prog")/streamdet_nvdec_clip" --out "$work/clip_hevc" --codec hevc --width 320 --height 180 >/dev/null
    "$(dirname "$prog")/streamdet_nvdec_clip" --out "$work/clip_720p" --width 1280 --height 720 --frames 4 --no-reference >/dev/null
    "$prog" --backend cpu --cases 4 --iters 3 --threads 1 --json "$work/check.json" --nvdec-clip "$work/clip" --nvdec-clip "$work/clip_hevc" \
      --model models/tiny_synth_v8.onnx --input 1x3x256x256 \
      --timing models/tiny_synth_v8_dynamic.onnx --timing-input 3x64x64 --batches 1 3 --overlap-batch 2 --timing-iters 3 --row-seconds 1 \
      --streams 8 32 --stream-workers 2 --stream-frame 160x120 --streams-seconds 1 --streams-budget 10 \
      --nvdec-e2e "$work/clip_720p" --nvdec-e2e-seconds 1 --nvdec-e2e-budget 5 >"$work/check.txt"
    check_json "$work/check.json" true 10 1 4 8 32
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert "nvdec" in r and "nvdec_hevc" in r and "nvdec_e2e" in r, "no nvdec, nvdec_hevc or nvdec_e2e in check.json"' "$work/check.json"
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["nvdec_e2e"]["clip_frames"] == 4, r["nvdec_e2e"]' "$work/check.json"
    # A timing budget spent before the rows: each is recorded as skipped, and the check fails.
    rc=0
    "$prog" --backend cpu --cases 1 --iters 3 --threads 1 --json "$work/skipped.json" \
      --timing models/tiny_synth_v8_dynamic.onnx --timing-input 3x64x64 --batches 1 3 --timing-budget 0 \
      --streams 8 32 --stream-frame 160x120 --streams-budget 0 --nvdec-clip "$work/clip_720p" >"$work/skipped.txt" || rc=$?
    [[ $rc == 1 ]] || { echo "--timing-budget 0: exit $rc, expected 1"; exit 1; }
    # A clip without reference frames (the nvdec_e2e clip's kind): the NVDEC check says so by name.
    python3 -c 'import json, sys; n = json.load(open(sys.argv[1]))["nvdec"]; assert n["pass"] is False and "no reference frames" in n["error"], n' "$work/skipped.json"
    python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["timing"]; assert len(t) == 5 and all(r["error"].startswith("skipped: the timing budget") and r["pass"] is False for r in t), t' "$work/skipped.json"
    python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["streams"]; assert [r["streams"] for r in s] == [8, 32] and all(r["error"].startswith("skipped: the streams budget") and r["skipped"] is True and r["pass"] is False for r in s), s' "$work/skipped.json"
    # fp16 leading (the GPU's rows): fp32's batch 1 first as the reference, every row in fp16 held
    # to it or to fp16's batch 1, then fp32's largest batch. The CPU keeps float32 and says so.
    "$prog" --backend cpu --cases 1 --iters 3 --threads 1 --json "$work/fp16.json" \
      --timing models/tiny_synth_v8_dynamic.onnx --timing-input 3x64x64 --timing-precisions fp16 fp32 --batches 1 3 \
      --overlap-batch 2 --timing-iters 3 --row-seconds 1 >"$work/fp16.txt"
    python3 - "$work/fp16.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["timing"]
got = [(r["precision"], r["batch"], r["cuda_graphs"], "on_device" in r, r.get("workers", 1)) for r in t]
want = [("fp32", 1, True, False, 1), ("fp16", 1, True, False, 1), ("fp16", 1, False, False, 1), ("fp16", 1, True, True, 1),
        ("fp16", 3, True, False, 1), ("fp16", 3, True, True, 1), ("fp16", 2, True, False, 2), ("fp32", 3, True, False, 1)]
assert got == want, got
assert all(r["pass"] is True and r["device_float"] == "float32" for r in t), t
assert t[1]["max_rel_diff_vs_fp32"] == 0, t[1]
assert all("max_rel_diff_vs_batch1" in t[i] for i in (4, 5, 7)) and "graph_speedup" in t[2], t
PY
    # A crash part-way (as a kernel fault would be): the JSON holds what was done before it.
    first=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["conformance"][0]["op"])' "$work/check.json")
    rc=0
    "$prog" --backend cpu --cases 4 --iters 3 --threads 1 --json "$work/partial.json" --abort-after "$first" \
      --model models/tiny_synth_v8.onnx --input 1x3x256x256 >"$work/partial.txt" 2>&1 || rc=$?
    [[ $rc -ge 128 ]] || { echo "--abort-after $first: exit $rc, expected a signal"; exit 1; }
    grep -q "^$first " "$work/partial.txt" || { echo "the line of $first was not printed before the crash"; exit 1; }
    check_json "$work/partial.json" false 1 0
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); c = r["conformance"]; assert [x["precision"] for x in c] == ["fp32", "fp16"] and len({x["op"] for x in c}) == 1 and not r["models"], r' "$work/partial.json"
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
    check_json "$work/out/check.json" true 10 1 4 8 32
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert "nvdec" in r and "nvdec_e2e" in r, "no nvdec or nvdec_e2e in check.json"' "$work/out/check.json"
    [[ $(grep -c '^  nvdec_e2e' "$work/out/summary.txt") == 1 ]] && grep -q '^  nvdec_e2e: not counted here: skipped: no NVDEC' "$work/out/summary.txt" ||
      { echo "summary.txt: not one nvdec_e2e line saying it is skipped"; exit 1; }
    # The whole listing read (not grep -q): an early exit would make tar die of SIGPIPE, and pipefail fail the test.
    tar -tzf "$work/out/logs.tar.gz" | grep 'check.txt' >/dev/null || { echo "logs.tar.gz has no check.txt"; exit 1; }
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
    # --quick (a second run on a GPU day): the check alone, the convolutions' conformance, the
    # models without the bundled one, no NVDEC clips or streams; the other steps said skipped.
    rc=0
    OUT="$work/quick" "$src/scripts/gpu-check.sh" --cpu "$build" --quick >"$work/quick.txt" 2>&1 || rc=$?
    cat "$work/quick.txt"
    [[ $rc == 0 ]] || { echo "gpu-check.sh --cpu --quick: exit $rc"; exit 1; }
    grep -q '^check: ok' "$work/quick/summary.txt" && grep -q '^native_tests: skipped (--skip)' "$work/quick/summary.txt" ||
      { echo "--quick: check not ok or native tests not skipped"; exit 1; }
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
ops = sorted({row["op"] for row in r["conformance"]})
assert ops == ["Conv", "FusedConv"], ops
assert all("tiny_synth" not in m["model"] for m in r["models"]), [m["model"] for m in r["models"]]
assert r["streams"] == [] and "nvdec" not in r, "streams or NVDEC clips in a quick run"' "$work/quick/check.json"
    ;;
  *) echo "usage: gpu_check_json.sh program|script SOURCE_DIR WORK_DIR ..." >&2; exit 2 ;;
esac
