"""The loop of every seed script, with streamdet: read a video, detect, draw, write.

    python3 examples/detect_video.py models/tiny_synth_v8.onnx samples/shapes_640x360.mp4 out.mp4

Needs OpenCV's Python module (Debian: python3-opencv) for reading, drawing and writing.
(streamdet.run(model, video, output="out.mp4") does all of it in C++ without a Python loop.)
"""
import sys

import cv2
import streamdet

model, video, out = sys.argv[1:4]
det = streamdet.Detector(model)
cap = cv2.VideoCapture(video)
writer = cv2.VideoWriter(out, cv2.VideoWriter_fourcc(*"mp4v"), cap.get(cv2.CAP_PROP_FPS) or 30,
                         (int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))))
while True:
    ok, frame = cap.read()
    if not ok:
        break
    for d in det(frame):  # the frame is read in place: no copy
        x1, y1, x2, y2 = map(int, d.xyxy)
        cv2.rectangle(frame, (x1, y1), (x2, y2), (0, 255, 0), 2)
        cv2.putText(frame, f"{d.name} {d.conf:.2f}", (x1, max(y1 - 4, 10)), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 255, 0))
    writer.write(frame)
cap.release()
writer.release()
