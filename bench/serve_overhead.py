#!/usr/bin/python3
"""What watching the web view costs the pipeline: the bundled sample (scripts/demo.sh's model and
clip) run with and without --serve, a client watching the stream in the --serve rounds, rounds
alternating (which goes first alternates too) so both see the same neighbours on a shared machine.
Throughput is the profile's e2e_fps (frames over the run's wall time); prints one JSON row per
run, then the median ratio served/plain and its quartiles, and the median ratio of the process's
CPU time for the same frames (cpu_ms).

The client, from the moment the server answers: reads /stream/0 (the MJPEG stream, as an <img>
does), and once a second /stats (as the page does) and /metrics (as Prometheus would). With
--browser the client is headless Chromium showing the page instead (Selenium; its own rendering
then also takes CPU from the run on the same machine).

  bench/serve_overhead.py [--rounds 10] [--bin build/streamdet] [--source S] [--browser] [-- extra run options]
"""
import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models/tiny_synth_v8.onnx")
CLIP = os.path.join(ROOT, "samples/shapes_640x360.mp4")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, timeout=5):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


class Watcher:
    """Watches like a page does until stop(); counts the stream's bytes and JPEG parts."""

    def __init__(self, port, browser):
        self.port, self.browser, self.stopped = port, browser, threading.Event()
        self.bytes = self.parts = self.polls = 0
        self.threads = [threading.Thread(target=self.run, daemon=True)]
        for t in self.threads:
            t.start()

    def wait_for_server(self):
        while not self.stopped.is_set():
            try:
                get(self.port, "/health", timeout=1)
                return True
            except OSError:
                time.sleep(0.005)
        return False

    def run(self):
        if not self.wait_for_server():
            return
        if self.browser:
            return self.run_browser()
        poller = threading.Thread(target=self.poll, daemon=True)
        poller.start()
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            c.request("GET", "/stream/0")
            r = c.getresponse()
            tail = b""  # a part's header may straddle two reads
            while not self.stopped.is_set():
                chunk = r.read1(65536)
                if not chunk:
                    break
                self.bytes += len(chunk)
                seen = tail + chunk
                self.parts += seen.count(b"Content-Type: image/jpeg")
                tail = seen[-30:] if b"Content-Type: image/jpeg" not in seen[-30:] else b""
        except OSError:
            pass

    def poll(self):
        while not self.stopped.is_set():
            try:
                get(self.port, "/stats")
                get(self.port, "/metrics")
                self.polls += 1
            except OSError:
                return
            self.stopped.wait(1.0)

    def run_browser(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        o = webdriver.ChromeOptions()
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
            o.add_argument(a)
        b = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
        try:
            b.get(f"http://127.0.0.1:{self.port}/")
            self.stopped.wait()
        finally:
            b.quit()

    def stop(self):
        self.stopped.set()
        for t in self.threads:
            t.join(timeout=30)


def one_run(binary, source, served, browser, extra, tmp):
    profile = os.path.join(tmp, "profile.json")
    args = [binary, "run", "-m", MODEL, "-s", source, "-d", os.path.join(tmp, "d.jsonl"), "--profile-json", profile, "-q"]
    watcher = None
    if served:
        port = free_port()
        args += ["--serve", f"127.0.0.1:{port}"]
    run = subprocess.Popen(args + extra, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    if served:
        watcher = Watcher(port, browser)
    _, err = run.communicate(timeout=600)
    if watcher:
        watcher.stop()
    if run.returncode != 0:
        sys.exit(f"streamdet exited {run.returncode}: {err.decode(errors='replace').strip()}")
    with open(profile) as f:
        p = json.load(f)
    row = {"served": served, "e2e_fps": round(p["e2e_fps"], 2), "frames": p["frames"], "wall_ms": round(p["wall_ms"], 1),
           "cpu_ms": round(p.get("cpu_ms", 0), 1)}
    if watcher:
        row.update(jpeg_parts=watcher.parts, stream_bytes=watcher.bytes, polls=watcher.polls)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/streamdet"))
    ap.add_argument("--browser", action="store_true")
    ap.add_argument("--source", default=CLIP, help="default: the bundled sample (150 frames, under a second a run)")
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    ratios, cpu_ratios = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            rows = {}
            for served in order:
                rows[served] = one_run(a.bin, a.source, served, a.browser, a.extra, tmp)
                print(json.dumps({"round": r + 1, **rows[served]}), flush=True)
            ratios.append(rows[True]["e2e_fps"] / rows[False]["e2e_fps"])
            if rows[False]["cpu_ms"] > 0:
                cpu_ratios.append(rows[True]["cpu_ms"] / rows[False]["cpu_ms"])
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
    summary = {"rounds": a.rounds, "client": "browser" if a.browser else "stream+stats",
               "median_fps_ratio_served_over_plain": round(statistics.median(ratios), 4), "q1": round(q[0], 4), "q3": round(q[2], 4)}
    if cpu_ratios:  # the process's CPU time for the same frames: less sensitive to the neighbours than the wall clock
        summary["median_cpu_ratio_served_over_plain"] = round(statistics.median(cpu_ratios), 4)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
