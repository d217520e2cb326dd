"""A detection worker in Python on a Redis stream of frames (docs/scale-out.md): streamdet reads
the frames from a consumer group, detects, and hands each frame's detections to this loop, which
prints them as one line per frame (or does whatever the application needs with them).

    redis-server --port 6400 --save '' --daemonize yes --dir /tmp
    streamdet publish --source samples/shapes_640x360.mp4 --sink redis://127.0.0.1:6400/frames --source-id cam1
    python3 examples/redis_consumer.py models/tiny_synth_v8.onnx \
        'redis://127.0.0.1:6400/frames?group=detectors&consumer=py1&drain=1'

Several such workers with the same group share the frames (each entry goes to one of them). An
entry is acknowledged once its results have left the loop's queue: a worker that dies loses nothing.
Any option of `streamdet run` is a keyword, e.g. sink="redis://127.0.0.1:6400/detections" to also
write the detections to a stream for other consumers, or max_age=2000 to skip frames gone stale.
"""
import sys

import streamdet

model, frames_uri = sys.argv[1:3]
with streamdet.run(model, frames_uri) as run:
    for r in run:  # r.source: the producer's --source-id; Ctrl-C stops the worker cleanly
        labels = ", ".join(f"{d.name} {d.conf:.2f}" for d in r.detections)
        print(f"{r.source} frame {r.frame_index}: {len(r.detections)} [{labels}]", flush=True)
