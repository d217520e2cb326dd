"""The binding's overhead per det(frame) call: streamdet.Detector's det(frame) against the C++
call it wraps (FrameDetector::detect, timed by streamdet_frame_detector_timing), same model, same
uniform gray frame, one inference thread; alternated for a few rounds, medians compared. A small
network input keeps the C++ call short so that the difference is not lost in its noise.

    PYTHONPATH=build/python /usr/bin/python3 python/bench/overhead.py [--rounds 5 --calls 2000]
"""
import argparse
import os
import statistics
import subprocess
import time

import numpy as np

import streamdet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def python_median_us(det, frame, calls):
    for _ in range(20):
        det(frame)
    us = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        det(frame)
        us.append((time.perf_counter_ns() - t0) / 1000)
    return statistics.median(us)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=os.path.join(ROOT, "models", "tiny_synth_v8_dynamic.onnx"))
    p.add_argument("--timing", default=os.path.join(ROOT, "build", "python", "streamdet_frame_detector_timing"))
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--height", type=int, default=64)
    p.add_argument("--input-size", default="64")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    det = streamdet.Detector(a.model, input_size=a.input_size, threads=1)
    frame = np.full((a.height, a.width, 3), 114, np.uint8)
    rows = []
    for r in range(a.rounds):
        out = subprocess.run([a.timing, a.model, str(a.width), str(a.height), a.input_size, str(a.calls)],
                             check=True, capture_output=True, text=True).stdout.split()
        cpp = float(out[1])
        py = python_median_us(det, frame, a.calls)
        rows.append((cpp, py))
        print(f"round {r + 1}: C++ {cpp:.1f} us, Python {py:.1f} us, overhead {py - cpp:+.1f} us")
    overheads = [py - cpp for cpp, py in rows]
    print(f"median overhead per call: {statistics.median(overheads):+.1f} us "
          f"(C++ call {statistics.median(c for c, _ in rows):.1f} us; {a.width}x{a.height} frame, input {a.input_size})")


if __name__ == "__main__":
    main()
