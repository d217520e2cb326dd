"""PyTorch on the same GPU, for issue 13's targets: the YOLOv8n architecture of
tools/make_yolov8n.py (same layers, BN folded as inference does), timed the way streamdet's GPU
check times its engine, and printed as one JSON object:

  - eager fp16 channels_last and eager fp32, batch 1: median latency of the compute alone (CUDA
    events) and of upload + compute + download (the host tensor in, the head output back);
  - torch.compile (mode given; default "default": max-autotune's autotuning takes minutes) fp16
    channels_last: images/s per batch size, all compiles within --compile-limit seconds (a batch
    whose compile runs past it is recorded as timed out, and the rest skipped).

The JSON file is rewritten after each measurement: a run killed part-way keeps what it measured.

    python3 tools/torch_bench.py --json torch.json [--iters 200] [--batches 1 8 32 64 128]
                                 [--compile-mode default|max-autotune|reduce-overhead|none]
                                 [--compile-limit 90] [--device cuda]

On the GPU machine scripts/gpu-check.sh runs it. `--device cpu --iters 2 --batches 1
--compile-mode none` checks the script itself anywhere (tests/gpu_check_script.sh does).
"""

import argparse
import copy
import json
import os
import signal
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_yolov8n import YoloV8nArch  # noqa: E402


def fold_bn(model):
    """Conv + BatchNorm into one Conv, as every inference engine (streamdet's too) runs it."""
    import torch.nn as nn
    for m in model.modules():
        for name, child in list(m.named_children()):
            if isinstance(child, nn.BatchNorm2d) and hasattr(m, "conv"):
                conv = m.conv
                scale = child.weight / torch.sqrt(child.running_var + child.eps)
                conv.weight.data = conv.weight.data * scale.reshape(-1, 1, 1, 1)
                bias = conv.bias.data if conv.bias is not None else torch.zeros_like(child.running_mean)
                conv.bias = nn.Parameter((bias - child.running_mean) * scale + child.bias)
                setattr(m, name, nn.Identity())
    return model


def timed(fn, iters, device):
    """Median milliseconds of fn() over iters runs after a warm-up (CUDA events on a GPU)."""
    for _ in range(max(3, iters // 10)):
        fn()
    times = []
    for _ in range(iters):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32, 64, 128])
    ap.add_argument("--compile-mode", default="default")
    ap.add_argument("--compile-limit", type=float, default=90, help="seconds for all torch.compile work")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--compile-only", action="store_true",
                    help="compile for --batches and stop (no timing): fills inductor's and Triton's on-disk caches "
                         "so that a later run's torch.compile is quick (scripts/gpu-check.sh runs it in the background)")
    args = ap.parse_args()
    dev = args.device
    torch.manual_seed(0)
    base = fold_bn(YoloV8nArch().eval())
    report = {"torch": torch.__version__, "device": dev, "imgsz": args.imgsz, "complete": False}
    if dev == "cuda":
        report["gpu"] = torch.cuda.get_device_name(0)
        report["cuda"] = torch.version.cuda
        report["cudnn"] = torch.backends.cudnn.version()
        torch.backends.cudnn.benchmark = True

    def save():
        if args.json:
            tmp = args.json + ".tmp"
            with open(tmp, "w") as f:
                json.dump(report, f, indent=2)
            os.replace(tmp, args.json)

    save()
    host = torch.rand(1, 3, args.imgsz, args.imgsz).pin_memory() if dev == "cuda" else torch.rand(1, 3, args.imgsz, args.imgsz)

    if args.compile_only:
        dtype = torch.float16 if dev == "cuda" else torch.float32
        compiled = torch.compile(base.to(dev, dtype).to(memory_format=torch.channels_last),
                                 mode=None if args.compile_mode == "default" else args.compile_mode)
        rows = report["compile_only"] = []
        with torch.inference_mode():
            for b in args.batches:
                x = torch.rand(b, 3, args.imgsz, args.imgsz, device=dev, dtype=dtype).to(memory_format=torch.channels_last)
                t0 = time.perf_counter()
                compiled(x)
                rows.append({"batch": b, "compile_s": time.perf_counter() - t0})
                print("compiled", rows[-1], flush=True)
                save()
        report["complete"] = True
        save()
        return

    with torch.inference_mode():
        for name, dtype, fmt in (("eager_fp16_channels_last", torch.float16, torch.channels_last),
                                 ("eager_fp32", torch.float32, torch.contiguous_format)):
            if dev == "cpu" and dtype == torch.float16:
                continue
            model = copy.deepcopy(base).to(dev, dtype).to(memory_format=fmt)
            x = host.to(dev, dtype).to(memory_format=fmt)
            compute = timed(lambda: model(x), args.iters, dev)
            end_to_end = timed(lambda: model(host.to(dev, non_blocking=True).to(dtype).to(memory_format=fmt)).float().cpu(),
                               args.iters, dev)
            report[name] = {"batch": 1, "compute_ms_median": compute, "upload_compute_download_ms_median": end_to_end}
            print(name, report[name], flush=True)
            save()
            if dev == "cuda" and dtype == torch.float16 and max(args.batches) > 1:
                # Eager fp16 at the largest batch too (compute alone): eager's throughput.
                b = max(args.batches)
                xb = torch.rand(b, 3, args.imgsz, args.imgsz, device=dev, dtype=dtype).to(memory_format=fmt)
                ms = timed(lambda: model(xb), max(10, args.iters // 4), dev)
                report[name + "_batch%d" % b] = {"batch": b, "compute_ms_median": ms, "images_per_s": b * 1e3 / ms}
                print(name, report[name + "_batch%d" % b], flush=True)
                save()

        if args.compile_mode != "none":
            dtype = torch.float16 if dev == "cuda" else torch.float32
            model = base.to(dev, dtype).to(memory_format=torch.channels_last)
            compiled = torch.compile(model, mode=None if args.compile_mode == "default" else args.compile_mode)
            rows = []
            key = "compiled_" + args.compile_mode.replace("-", "_")
            report[key] = rows
            deadline = time.monotonic() + args.compile_limit

            def too_long(signum, frame):
                raise TimeoutError("torch.compile ran past --compile-limit")

            signal.signal(signal.SIGALRM, too_long)
            for b in args.batches:
                left = deadline - time.monotonic()
                if left <= 0:
                    rows.append({"batch": b, "skipped": "no time left of --compile-limit %g s" % args.compile_limit})
                    save()
                    continue
                x = torch.rand(b, 3, args.imgsz, args.imgsz, device=dev, dtype=dtype).to(memory_format=torch.channels_last)
                t0 = time.perf_counter()
                signal.setitimer(signal.ITIMER_REAL, left)
                try:
                    compiled(x)  # compiles for this shape
                except TimeoutError as e:
                    rows.append({"batch": b, "timed_out": str(e), "compile_s": time.perf_counter() - t0})
                    print("compiled", rows[-1], flush=True)
                    save()
                    continue
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                compile_s = time.perf_counter() - t0
                ms = timed(lambda: compiled(x), max(10, args.iters // 4), dev)
                rows.append({"batch": b, "ms_median": ms, "images_per_s": b * 1e3 / ms, "compile_s": compile_s})
                print("compiled", rows[-1], flush=True)
                done = [r["images_per_s"] for r in rows if "images_per_s" in r]
                report["best_images_per_s"] = max(done)
                save()

    report["complete"] = True
    save()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
