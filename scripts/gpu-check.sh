#!/usr/bin/env bash
# Runs on the GPU machine (docs/gpu.md), in the repository's root, with .gpu/ carried: unpacks the
# check made by scripts/gpu-pack.sh, records what the machine has, runs the check (conformance of
# every op the CUDA backend claims, parity and latency of the bundled tiny model and YOLOv8n, and
# YOLOv8n's latency with and without CUDA graphs and throughput at batches 1 to 64), the
# backend tests, compute-sanitizer's memcheck and initcheck on a two-iteration subset, and
# PyTorch's figures for the same architecture (tools/torch_bench.py).
#   scripts/gpu-check.sh                 on the GPU machine (the device tool's $OUT, else gpu-out/)
#   scripts/gpu-check.sh --cpu BUILD     here or in CI: the same steps against the CPU backend, with
#                                        BUILD's binaries, so that neither the script nor its JSON
#                                        can rot (tests/CMakeLists.txt: GpuCheck.ScriptRunsOnTheCpu)
# Every step has its own time limit and the whole script a budget (--budget SECONDS, default 300: the issue's 5 minutes,
# well inside the device tool's 600 s command limit); a step that fails or times out is recorded
# and the next one runs. The device tool brings back at most 8 files from $OUT: this script
# leaves 4 there, refreshed after every step: summary.txt (one line per step), check.json,
# torch.json, and logs.tar.gz (every step's log and JSON).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
mode=gpu build="" budget=300 skip=" " graph_budget=60 quick=0
while (($#)); do
  case $1 in
    --cpu) mode=cpu build=${2:?"--cpu needs the build folder"}; shift 2 ;;
    --budget) budget=${2:?"--budget needs seconds"}; shift 2 ;;
    # A rerun that needs only some steps (the device time is short): e.g. --skip torch,initcheck.
    --skip) skip=" ${2//,/ } "; shift 2 ;;
    # The check step's planning time on cuDNN's graph engine (0: the legacy engine alone, e.g. for
    # a rerun where the graph engine broke the first one).
    --cudnn-graph-budget) graph_budget=${2:?"--cudnn-graph-budget needs seconds"}; shift 2 ;;
    # A second run on the same GPU day, after a fix (about 1.5 minutes of the 15): the check alone,
    # its conformance for the convolutions only, YOLOv8n's parity and timing rows and the NVDEC end
    # to end; no NVDEC clips, streams, native tests, PyTorch or sanitizers.
    --quick) quick=1 skip=" native_tests torch memcheck initcheck "; shift ;;
    *) echo "gpu-check.sh: unknown argument $1 (--cpu BUILD, --budget SECONDS, --skip STEP,..., --cudnn-graph-budget SECONDS, --quick)" >&2; exit 2 ;;
  esac
done
out=${OUT:-gpu-out}
mkdir -p "$out"
work=/tmp/streamdet-gpu-work.$$
rm -rf "$work" && mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
summary="$work/summary.txt"
: >"$summary"

# Results into $OUT, whole files only (written aside, then renamed): done after every step.
publish() {
  for f in summary.txt check.json torch.json; do
    [[ -f "$work/$f" ]] && cp "$work/$f" "$out/.$f.tmp" && mv "$out/.$f.tmp" "$out/$f"
  done
  tar -C "$work" -czf "$out/.logs.tmp" --exclude=./lib --exclude=./bin . 2>/dev/null && mv "$out/.logs.tmp" "$out/logs.tar.gz"
}

failed=0
# step NAME LIMIT_S COMMAND...: runs it under `timeout` (never past the budget, 10 s kept back),
# its output in NAME.txt; one line in summary.txt whatever happens.
step() {
  local name=$1 limit=$2
  shift 2
  if [[ $skip == *" $name "* ]]; then
    echo "$name: skipped (--skip)" | tee -a "$summary"
    publish
    return
  fi
  local left=$((budget - SECONDS - 10))
  ((limit > left)) && limit=$left
  if ((limit < 5)); then
    echo "$name: skipped, the budget of ${budget}s is spent" | tee -a "$summary"
    failed=1
    publish
    return
  fi
  local t0=$SECONDS rc
  timeout -k 5 "$limit" "$@" >"$work/$name.txt" 2>&1
  rc=$?
  local verdict=ok
  if ((rc == 124 || rc == 137)); then verdict="TIMED OUT after ${limit}s"; elif ((rc != 0)); then verdict="FAILED (exit $rc)"; fi
  [[ $verdict != ok ]] && failed=1
  echo "$name: $verdict, $((SECONDS - t0)) s" | tee -a "$summary"
  publish
}

# The streamdet binaries, and the libraries they load from the pack: LD_LIBRARY_PATH is set on
# their command lines alone, so that nvidia-smi, compute-sanitizer, python and Triton keep the
# machine's own libstdc++ and libgomp.
if [[ $mode == gpu ]]; then
  bin="$work/bin"
  mkdir -p "$bin"
  tar -C "$bin" -xJf .gpu/streamdet-gpu-check.tar.xz || { echo "cannot unpack .gpu/streamdet-gpu-check.tar.xz" | tee -a "$summary"; publish; exit 1; }
  # cuDNN there is PyTorch's wheel (nvidia-cudnn-cu13), which the loader does not search (PyTorch
  # finds it by its own rpath): its folder, and those of the other NVIDIA wheels its engines load
  # (cuBLAS(Lt), NVRTC), go on the streamdet commands' path after the pack's.
  wheels=$(python3 -c 'import glob, os, site
dirs = []
for p in site.getsitepackages():
    for f in sorted(glob.glob(os.path.join(p, "nvidia", "**", "lib*.so*"), recursive=True)):
        d = os.path.dirname(f)
        if d not in dirs: dirs.append(d)
print(":".join(dirs))' 2>/dev/null)
  sdlib="$bin/lib${wheels:+:$wheels}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  sd=(env "LD_LIBRARY_PATH=$sdlib")
  backend=(--backend cuda)
  yolo=.gpu/yolov8n_arch.onnx
  clips=("$bin/nvdec" "$bin/nvdec_hevc")
  cases=64 iters=50
  # In fp16 (the targets' precision; fp32's batch 1 first as its reference): latency at batch 1
  # with and without CUDA graphs and with input and outputs on the device, throughput at batches
  # 1 to 64, batch 32 on two sessions at once (copies overlapping kernels); then fp32 at batch 64
  # beside it; 75 s at most (55 s left the last two rows out on the first GPU run); then the
  # engine profile step by step at batches 1 and 32 (into check.txt).
  # Batch 8 left out since GPU run 4: each new batch costs the graph engine's planning (about 20 s
  # for YOLOv8n's 63 convolutions), and 1, 32 and 64 are the targets' rows.
  timing=(--timing-name yolov8n --timing-input 3x640x640 --timing-precisions fp16 fp32 --batches 1 32 64 --overlap-batch 32
          --timing-budget 140 --row-seconds 3 --profile-batches 1 32)
  # Many streams on one GPU: 8 and 32 synthetic 1080p streams end to end on YOLOv8n, 8 workers
  # each with its own session and CUDA stream, 3 s per row after the engine alone, each count with
  # the host letterbox + CPU decode and again with the GPU letterbox + decode; 40 s at most.
  streams=(--streams 8 32 --stream-workers 8 --stream-frame 1920x1080 --streams-seconds 3 --streams-budget 40)
  # Issue 22's end-to-end target: the pack's 720p H.264 clip through NVDEC, the GPU letterbox,
  # YOLOv8n in fp16 with graphs and the GPU decode + NMS, against the engine alone; 15 s at most.
  e2e=(--nvdec-e2e "$bin/nvdec_720p" --nvdec-e2e-seconds 4 --nvdec-e2e-budget 15)
else
  bin="$work/bin"
  mkdir -p "$bin"
  cp "$build/tools/streamdet_gpu_check" "$build/tests/streamdet_native_tests" "$bin/" || exit 1
  sd=(env)
  sdlib=${LD_LIBRARY_PATH:-}
  backend=(--backend cpu --threads 1)
  yolo=$build/models/yolov8n_arch.onnx
  clips=("$build/nvdec_clip")
  [[ -s ${clips[0]}/reference.nv12 ]] || "$build/tools/streamdet_nvdec_clip" --out "${clips[0]}" >/dev/null || true
  cases=4 iters=3
  timing=(--timing models/tiny_synth_v8_dynamic.onnx --timing-name tiny_synth_v8 --timing-input 3x64x64 --batches 1 2
          --overlap-batch 2 --timing-iters 3 --timing-budget 20 --row-seconds 1)
  streams=(--streams 8 32 --stream-workers 2 --stream-frame 160x120 --streams-seconds 1 --streams-budget 10)
  # No NVDEC here: the clip (4 frames) and the model are read, the part records that it is skipped.
  [[ -s $build/nvdec_clip_720p/clip.json ]] ||
    "$build/tools/streamdet_nvdec_clip" --out "$build/nvdec_clip_720p" --width 1280 --height 720 --frames 4 --no-reference >/dev/null || true
  e2e=(--nvdec-e2e "$build/nvdec_clip_720p" --nvdec-e2e-seconds 1 --nvdec-e2e-budget 5)
fi

# torch.compile's first compile of YOLOv8n ran past 70 s in the first GPU runs (no figure): it is
# started now in the background, on 2 compile threads (of 16 cores), for the batches the torch step
# times, filling inductor's and Triton's on-disk caches; the torch step waits for it, then compiles
# from the cache. Not in --cpu mode.
warm_pid=""
if [[ $mode == gpu && $skip != *" torch "* ]] && python3 -c 'import torch' 2>/dev/null; then
  TORCHINDUCTOR_COMPILE_THREADS=2 PYTHONUNBUFFERED=1 timeout -k 5 240 python3 tools/torch_bench.py --compile-only --batches 1 32 64 \
    --json "$work/torch_warm.json" >"$work/torch_warm.txt" 2>&1 &
  warm_pid=$!
fi

# shellcheck disable=SC2317  # run through step (bash -c)
environment() {
  echo "mode: $mode"
  nvidia-smi || true
  echo "== libraries"
  ldconfig -p | grep -E 'cudnn|cublas|nvcuvid|libcuda\.' || true
  echo "== python"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' || true
  python3 -c 'import nvidia.cudnn, os; print("cudnn wheel", os.path.dirname(nvidia.cudnn.__file__))' || true
  command -v compute-sanitizer || true
  echo "== the pack's libraries"
  echo "== the streamdet commands' library path: $sdlib"
  LD_LIBRARY_PATH="$sdlib" ldd "$bin/streamdet_gpu_check" || true
  for d in ${sdlib//:/ }; do ls "$d" 2>/dev/null | grep -E '^lib(cudnn|cublas|nvrtc)[^_]*\.so' | sed "s|^|  $d/|"; done
}
export -f environment
export mode bin sdlib
step environment 20 bash -c environment

# The YOLOv8n-architecture model comes made (gpu-pack.sh): it is never exported here. --quick:
# YOLOv8n alone, and the conformance for the convolutions alone.
models=() ops=()
if ((quick)); then
  ops=(--ops Conv FusedConv)
else
  models=(--model models/tiny_synth_v8.onnx --input 1x3x256x256)
fi
if [[ -f $yolo ]]; then
  models+=(--model "$yolo" --input 1x3x640x640)
  [[ $mode == gpu ]] && timing=(--timing "$yolo" "${timing[@]}")
else
  echo "yolov8n: no $yolo (scripts/gpu-pack.sh makes it): checked without it" | tee -a "$summary"
  [[ $mode == gpu ]] && failed=1
fi
# NVDEC against the CPU-decoded frames of the bundled H.264 clip (tools/nvdec_check.h), inside the check.
nvdec=()
((quick)) && clips=() streams=()
for clip in "${clips[@]}"; do
  if [[ -s $clip/reference.nv12 ]]; then
    nvdec+=(--nvdec-clip "$clip")
  else
    echo "nvdec: no clip at $clip (scripts/gpu-pack.sh makes it): checked without it" | tee -a "$summary"
    [[ $mode == gpu ]] && failed=1
  fi
done
[[ $mode == gpu && ! -f $yolo ]] && timing=() streams=() e2e=()
if [[ ${#e2e[@]} -gt 0 && ! -s ${e2e[1]}/clip.json ]]; then
  echo "nvdec_e2e: no clip at ${e2e[1]} (scripts/gpu-pack.sh makes it): checked without it" | tee -a "$summary"
  [[ $mode == gpu ]] && failed=1
  e2e=()
fi
# --cudnn-graph-budget: the seconds each part of the check (conformance, models, timing, streams,
# NVDEC end to end) may spend planning convolutions on cuDNN's graph engine (docs/gpu.md, "The
# second engine"); GPU run 4 planned a node in 0.05 to 0.4 s. The conformance gets 25 s at most:
# its random geometries are each planned anew, and in run 4 they spent all of a process-wide 60 s. The step's limit grows with a
# budget that leaves room for it.
step check $((budget >= 420 ? 280 : 200)) "${sd[@]}" "$bin/streamdet_gpu_check" "${backend[@]}" --cudnn-graph-budget "$graph_budget" --cudnn-graph-conformance-budget "$((graph_budget < 25 ? graph_budget : 25))" --cases "$cases" --iters "$iters" --json "$work/check.json" "${ops[@]}" "${models[@]}" "${timing[@]}" "${streams[@]}" "${nvdec[@]}" "${e2e[@]}"
# NVDEC's verdict in the summary (the figures are in check.json's "nvdec"); here (--cpu) it is
# expected to find no NVDEC, and does not count.
if [[ ${#nvdec[@]} -gt 0 && -f $work/check.json ]]; then
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
failed = "not counted here: %s" if sys.argv[2] == "cpu" else "FAILED: %s"
for key in [k for k in r if k.startswith("nvdec") and k != "nvdec_e2e"] or ["nvdec"]:  # nvdec_e2e: its own line below
    n = r.get(key)
    print("  %s: " % key + ("not reached" if n is None else "ok, min PSNR %.1f dB, %.0f fps" % (n["psnr_db"]["min"], n.get("decode_fps", 0)) if n["pass"] else failed % n["error"]))' "$work/check.json" "$mode" 2>&1 | tee -a "$summary"
  publish
fi

# The streams rows' figures in the summary, one line each (check.json's "streams").
if [[ ${#streams[@]} -gt 0 && -f $work/check.json ]]; then
  python3 -c 'import json, sys
for s in json.load(open(sys.argv[1])).get("streams", []):
    way = "" if s.get("postprocess", "cpu decode + nms") == "cpu decode + nms" else " (GPU letterbox + decode)"
    if not s["pass"] or "fps" not in s:
        print("  streams %d%s: FAILED: %s" % (s["streams"], way, s["error"]))
        continue
    busy = "n/a" if s["gpu_busy"] is None else "%.2f" % s["gpu_busy"]
    print("  streams %d%s, %d workers: %.0f fps, %.1f per stream (%s), e2e/engine %.2f, p99 %.1f ms, GPU busy %s" % (s["streams"], way, s["workers"],
          s["fps"], s["per_stream_fps"], "real time" if s["realtime"] else "NOT real time", s["e2e_over_engine"], s["latency_ms"]["p99"], busy))' \
    "$work/check.json" 2>&1 | tee -a "$summary"
  publish
fi

# The end-to-end line (check.json's "nvdec_e2e"): fps against the engine alone, target 0.9 (the
# reader's to judge, as the streams rows'); here (--cpu) it is skipped for want of NVDEC.
if [[ ${#e2e[@]} -gt 0 && -f $work/check.json ]]; then
  python3 -c 'import json, sys
n = json.load(open(sys.argv[1])).get("nvdec_e2e")
if n is None:
    print("  nvdec_e2e: not reached")
elif not n["pass"]:
    print("  nvdec_e2e: " + ("not counted here: %s" if sys.argv[2] == "cpu" else "FAILED: %s") % n["error"])
else:
    d = n["detections"]
    print("  nvdec_e2e %s %s %s: %.0f fps, engine alone %.0f fps, e2e/engine %.2f (target 0.9: %s), p99 %.1f ms; boxes as the CPU letterbox'"'"'s in %d of %d frames%s" % (
        n["codec"], n["input"], n["precision"], n["fps"], n["engine_fps"], n["e2e_over_engine"], "met" if n["e2e_over_engine"] >= 0.9 else "NOT met",
        n["latency_ms"]["p99"], d["frames_same"], d["frames_compared"], "" if d["binding"] else " (not binding: over 100 boxes a frame)"))
    ph = n.get("phases")
    if ph:
        print("    per frame, each phase waited for: letterbox %.3f ms, model %.3f ms, decode + NMS %.3f ms (%d frames, %.0f boxes a frame)" % (
            ph["letterbox_ms"], ph["engine_ms"], ph["decode_nms_ms"], ph["frames"], n.get("boxes_per_frame", 0)))' \
    "$work/check.json" "$mode" 2>&1 | tee -a "$summary"
  publish
fi

# The backend tests (the CUDA ones skip nowhere else), from the repository's root. On the CPU the
# CUDA tests alone (they skip): the rest runs in streamdet_tests.
# On the GPU the conformance rows of the CPU and of the test device (fp32 and fp16: host checks
# that CI runs) are left out, so the step's time goes to the GPU's rows, cuda and cuda_fp16.
filter=(--gtest_filter='-Ops/BackendConformance.*/cpu_*:Ops/BackendConformance.*/test_*')
[[ $mode == cpu ]] && filter=(--gtest_filter='CudaBackend.*')
step native_tests 60 "${sd[@]}" "$bin/streamdet_native_tests" "${filter[@]}"

# PyTorch on the same GPU (issue 13's yardstick), before the sanitizers (the targets are ratios to
# it): eager at batch 1, then torch.compile in its default mode at batches 1, 32 and 64 within 80 s. torch.json is rewritten after each figure.
# Here (--cpu) Debian's python3 has PyTorch (python3-torch) where the one on PATH may not.
py=python3
[[ $mode == cpu ]] && ! python3 -c 'import torch' 2>/dev/null && [[ -x /usr/bin/python3 ]] && py=/usr/bin/python3
if "$py" -c 'import torch' 2>/dev/null; then
  if [[ $mode == gpu ]]; then
    # Batch 64 beside 32 since GPU run 5: our best row is batch 64 on the device.
    torch_args=(--batches 1 32 64 --compile-mode default --compile-limit 80)
  else
    torch_args=(--device cpu --iters 2 --imgsz 64 --batches 1 --compile-mode none)
  fi
  if [[ -n $warm_pid ]]; then
    # The background compile: waited for while the budget allows (it keeps 140 s for the torch
    # step and the sanitizers), then stopped; what it compiled stays in the caches.
    while kill -0 "$warm_pid" 2>/dev/null && ((budget - SECONDS > 140)); do sleep 1; done
    kill "$warm_pid" 2>/dev/null
    wait "$warm_pid" 2>/dev/null
    echo "  torch.compile warm-up in the background: $(tail -n 2 "$work/torch_warm.txt" 2>/dev/null | tr '\n' ' ')" | tee -a "$summary"
  fi
  step torch 130 env TORCHINDUCTOR_COMPILE_THREADS=2 PYTHONUNBUFFERED=1 "$py" tools/torch_bench.py --json "$work/torch.json" "${torch_args[@]}"
else
  echo "torch: no PyTorch for python3: skipped" | tee -a "$summary"
  [[ $mode == gpu ]] && failed=1
fi


# compute-sanitizer last, with what is left of the budget (45 s each at most), on a short subset: two cases per op, two timed runs of the tiny model. memcheck
# (out-of-bounds and misaligned accesses, leaks) and initcheck (reads of device memory never
# written); racecheck is left out: it sees shared-memory races only, and no kernel uses shared memory.
# The graph engine gets 5 s of planning there (a few nodes, so that the sanitizers see its runs).
short=("${backend[@]}" --cudnn-graph-budget "$((graph_budget < 5 ? graph_budget : 5))" --cases 2 --iters 2 --model models/tiny_synth_v8.onnx --input 1x3x256x256)
# memcheck's leak report names cuDNN's handle (cudnnCreate, one per device for the process's life,
# never destroyed by design: cudnn_library.cpp) and the graph engine's cached plans: those leaks
# are counted apart and do not fail the step; any other error does (tools/memcheck_verdict.py; the
# first GPU run: 3 errors, all three the handle's).
# shellcheck disable=SC2317  # run through step
memcheck_run() {
  local log=$work/memcheck.raw rc
  compute-sanitizer --tool memcheck --leak-check full --target-processes all --error-exitcode 9 "$@" >"$log" 2>&1
  rc=$?
  cat "$log"
  ((rc == 9)) || return "$rc"
  python3 tools/memcheck_verdict.py "$log"
}
if command -v compute-sanitizer >/dev/null; then
  export -f memcheck_run
  export work
  step memcheck 45 bash -c 'memcheck_run "$@"' memcheck "${sd[@]}" "$bin/streamdet_gpu_check" "${short[@]}" --json "$work/memcheck.json"
  grep -h "^memcheck: " "$work/memcheck.txt" 2>/dev/null | sed 's/^/  /' | tee -a "$summary"
  step initcheck 45 compute-sanitizer --tool initcheck --target-processes all --error-exitcode 9 \
    "${sd[@]}" "$bin/streamdet_gpu_check" "${short[@]}" --json "$work/initcheck.json"
  grep -h "ERROR SUMMARY" "$work/memcheck.txt" "$work/initcheck.txt" 2>/dev/null | sed 's/^/  /' | tee -a "$summary"
  publish
else
  echo "sanitizers: no compute-sanitizer on this machine: skipped" | tee -a "$summary"
  [[ $mode == gpu ]] && failed=1
fi

echo "total: ${SECONDS} s of a ${budget} s budget; $([[ $failed == 0 ]] && echo 'all steps passed' || echo 'some steps FAILED')" | tee -a "$summary"
publish
exit "$failed"
