"""examples/: the scripts run as a user runs them, on the bundled sample."""
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

import streamdet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "samples", "shapes_640x360.mp4")


def python_env():
    return dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(streamdet.__file__)))


def test_detect_video_writes_every_frame_with_boxes_drawn(model_path, tmp_path):
    cv2 = pytest.importorskip("cv2")  # the example reads, draws and writes with OpenCV
    out = tmp_path / "out.mp4"
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "detect_video.py"), model_path, SAMPLE, str(out)],
                   check=True, env=python_env(), timeout=300)
    written, source = cv2.VideoCapture(str(out)), cv2.VideoCapture(SAMPLE)
    frames, changed = 0, 0
    while True:
        ok, frame = written.read()
        if not ok:
            break
        ok_source, original = source.read()
        assert ok_source and frame.shape == original.shape == (360, 640, 3)
        # Green boxes where the detections are: the pure green the example draws is rare in the clip.
        green = (frame[:, :, 1] > 200) & (frame[:, :, 0] < 60) & (frame[:, :, 2] < 60)
        green_before = (original[:, :, 1] > 200) & (original[:, :, 0] < 60) & (original[:, :, 2] < 60)
        changed += int(green.sum() > green_before.sum() + 100)
        frames += 1
    assert frames == 150
    assert changed >= 140  # boxes drawn on (nearly) every frame: the shapes are in every one


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_redis_consumer_prints_every_published_frames_detections(model_path, streamdet_bin, tmp_path):
    if not shutil.which("redis-server"):
        pytest.skip("redis-server not installed (Debian: redis-server)")
    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--dir", str(tmp_path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        subprocess.run([streamdet_bin, "publish", "--source", SAMPLE, "--sink", f"redis://127.0.0.1:{port}/frames",
                        "--source-id", "cam1", "--fps", "max"], check=True, stderr=subprocess.DEVNULL, timeout=120)
        out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "redis_consumer.py"), model_path,
                              f"redis://127.0.0.1:{port}/frames?group=detectors&consumer=py1&drain=1"],
                             check=True, env=python_env(), capture_output=True, text=True, timeout=300).stdout
    finally:
        server.kill()
        server.wait()
    lines = out.splitlines()
    assert [line.split(":")[0] for line in lines] == [f"cam1 frame {i}" for i in range(150)]
    assert all(int(line.split(": ")[1].split(" ")[0]) > 0 for line in lines)  # the shapes are detected
