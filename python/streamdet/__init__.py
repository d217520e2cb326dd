"""streamdet from Python: numpy frames in, detections out, on streamdet's own engine.

    import streamdet
    det = streamdet.Detector("models/tiny_synth_v8.onnx")
    for d in det(frame):          # frame: numpy uint8 H x W x 3, BGR
        print(d.name, d.conf, d.xyxy)

    for r in streamdet.run("models/tiny_synth_v8.onnx", "clip.mp4", frames=True):   # the whole pipeline
        print(r.frame_index, len(r.detections), r.frame.shape)   # any `streamdet run` option as a keyword

Errors raise streamdet.Error subclasses by kind (ModelError, SourceError, OutputError,
UsageError, UnsupportedError) with the command's one-line message.
"""

from ._streamdet import (
    Detection,
    Detections,
    Detector,
    Error,
    ModelError,
    OutputError,
    Run,
    RunResult,
    SourceError,
    UnsupportedError,
    UsageError,
    run,
)

__all__ = [
    "Detection",
    "Detections",
    "Detector",
    "Error",
    "ModelError",
    "OutputError",
    "Run",
    "RunResult",
    "SourceError",
    "UnsupportedError",
    "UsageError",
    "run",
]
