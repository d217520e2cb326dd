#!/usr/bin/python3
"""How long /health and /metrics take while N connections are open that connect and send nothing
(issue 26), and how long Ctrl-C takes to end the run meanwhile.

Runs `streamdet run` on an endless live synthetic source with --serve on a free loopback port;
for each N opens N idle connections, waits a moment, times one GET /health and one GET /metrics
(each on a fresh connection, given up after --give-up seconds), closes the idle connections and
lets the server settle. Then opens the largest N again, sends SIGINT and times the exit. Prints
one JSON row per measurement.

  bench/serve_idle_connections.py [--bin build/streamdet] [--idle 0,12,200,500] [--give-up 30]
"""
import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models/tiny_synth_v8.onnx")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, give_up):
    """Seconds until the whole answer of GET path arrived, and its status; None on give-up."""
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=give_up) as s:
            s.settimeout(max(0.001, give_up - (time.monotonic() - start)))
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else None
        return time.monotonic() - start, status
    except (OSError, socket.timeout):
        return None, None


def open_idle(port, n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.settimeout(10)
        s.connect(("127.0.0.1", port))
        socks.append(s)
    return socks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/streamdet"))
    ap.add_argument("--idle", default="0,12,200,500")
    ap.add_argument("--give-up", type=float, default=30.0)
    args = ap.parse_args()
    counts = [int(x) for x in args.idle.split(",")]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    port = free_port()
    run = subprocess.Popen([args.bin, "run", "-m", MODEL, "-s", "synth:w=160,h=96,fps=30,frames=0,live=1", "-q",
                            "--serve", f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while get(port, "/health", 2)[1] != 200:
            if time.monotonic() > deadline or run.poll() is not None:
                sys.exit("the run's server did not answer")
            time.sleep(0.1)
        for n in counts:
            idle = open_idle(port, n)
            time.sleep(0.5)
            for path in ("/health", "/metrics"):
                seconds, status = get(port, path, args.give_up)
                print(json.dumps({"idle": n, "path": path, "status": status,
                                  "seconds": round(seconds, 4) if seconds is not None else f">{args.give_up}"}), flush=True)
            for s in idle:
                s.close()
            # The old server still works through the closed ones: wait until it answers at once.
            settle = time.monotonic() + 300
            while time.monotonic() < settle and (get(port, "/health", 1)[0] or 9) > 0.2:
                time.sleep(0.2)
        idle = open_idle(port, counts[-1])
        time.sleep(0.5)
        start = time.monotonic()
        run.send_signal(signal.SIGINT)
        try:
            rc = run.wait(timeout=args.give_up)
            print(json.dumps({"idle": counts[-1], "ctrl_c_exit": rc, "seconds": round(time.monotonic() - start, 4)}), flush=True)
        except subprocess.TimeoutExpired:
            print(json.dumps({"idle": counts[-1], "ctrl_c_exit": None, "seconds": f">{args.give_up}"}), flush=True)
        for s in idle:
            s.close()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


if __name__ == "__main__":
    main()
