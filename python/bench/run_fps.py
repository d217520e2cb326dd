"""A Python loop over streamdet.run against the command, end to end on the same clip and model:
`streamdet run --model M --source S -q` and a Python process iterating streamdet.run(M, S) (each
result's detections read as numpy arrays, as a user's loop does), alternated for a few rounds,
medians compared. Also the loop with frames=True (each result's frame handed to Python).

Both report the run's own end-to-end figure (the profile's e2e_fps: frames over the time from the
first frame read to the last one written; for Python that includes waiting on the loop) and the
frames over the whole process's wall time (start, model load and all), and the CPU time the
process took per frame (all its threads, start included): on a machine shared with other work the
CPU time varies far less than the wall time.

    PYTHONPATH=build/python /usr/bin/python3 python/bench/run_fps.py [--rounds 5 --source S]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LOOP = r"""
import json, sys
import streamdet
model, source, profile_out, frames = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
n = boxes = 0
run = streamdet.run(model, source, frames=frames)
for r in run:
    d = r.detections
    boxes += len(d)
    d.xyxy, d.conf, d.cls  # the arrays a user's loop reads
    if frames:
        r.frame.shape
    n += 1
with open(profile_out, "w") as f:
    json.dump({"frames": n, "boxes": boxes, "e2e_fps": run.profile["e2e_fps"]}, f)
"""


def timed(cmd, env=None):
    """Wall seconds, and CPU seconds (user + system, all threads) of the child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=os.path.join(ROOT, "models", "tiny_synth_v8.onnx"))
    p.add_argument("--source", default=os.path.join(ROOT, "samples", "shapes_640x360.mp4"))
    p.add_argument("--streamdet", default=os.path.join(ROOT, "build", "streamdet"))
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    import streamdet  # the module the loop will use: its folder goes on the child's path
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(streamdet.__file__)))
    rows = {"command": [], "python": [], "python frames=True": []}
    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "p.json")
        for r in range(a.rounds):
            order = list(rows) if r % 2 == 0 else list(reversed(rows))  # alternating which goes first
            for name in order:
                if name == "command":
                    cmd = [a.streamdet, "run", "--model", a.model, "--source", a.source, "-q", "--profile-json", prof]
                else:
                    cmd = [sys.executable, "-c", LOOP, a.model, a.source, prof, "1" if "frames" in name else "0"]
                wall, cpu = timed(cmd, env=env)
                got = json.load(open(prof))
                rows[name].append((got["e2e_fps"], got["frames"] / wall, cpu * 1000 / got["frames"]))
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1][0]:.1f} fps (process {v[-1][1]:.1f} fps, {v[-1][2]:.2f} CPU ms/frame)"
                                                 for k, v in rows.items()), flush=True)
    base = statistics.median(e for e, _, _ in rows["command"])
    base_wall = statistics.median(w for _, w, _ in rows["command"])
    base_cpu = statistics.median(c for _, _, c in rows["command"])
    for name, v in rows.items():
        e2e, wall, cpu = (statistics.median(x[i] for x in v) for i in range(3))
        # Each round's own ratio too: the load of the machine changes between rounds more than within one.
        paired = statistics.median(x[0] / c[0] for x, c in zip(v, rows["command"]))
        print(f"median {name}: e2e {e2e:.1f} fps ({e2e / base:.3f} of the command; median of the rounds' ratios "
              f"{paired:.3f}), process {wall:.1f} fps ({wall / base_wall:.3f}), CPU {cpu:.2f} ms/frame "
              f"({cpu - base_cpu:+.2f})")


if __name__ == "__main__":
    main()
