"""streamdet.run: the whole pipeline from a Python loop, against the command on the same source."""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

import streamdet

SOURCE = "synth:w=320,h=192,frames=30,seed=3"
# Long enough that a run which does not stop would outlast the tests by far (minutes).
ENDLESS = "synth:w=320,h=192,frames=1000000,seed=3"


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def command_lines(streamdet_bin, model_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("cmd") / "out.jsonl"
    subprocess.run([streamdet_bin, "run", "-m", model_path, "-s", SOURCE, "-d", str(out), "-q"], check=True)
    return read_jsonl(out)


def test_run_yields_every_frame_in_order_with_the_commands_detections(model_path, command_lines, tmp_path):
    jsonl = tmp_path / "py.jsonl"
    results = list(streamdet.run(model_path, SOURCE, detections=str(jsonl)))
    assert [r.frame_index for r in results] == list(range(30))
    assert [line["frame"] for line in command_lines] == list(range(30))
    total = 0
    for r, line in zip(results, command_lines):
        assert r.source == SOURCE == line["source"]
        assert r.timestamp_ms == pytest.approx(line["timestamp_ms"], abs=0.05 + 1e-6)
        expected = line["detections"]
        assert len(r.detections) == len(expected)
        total += len(expected)
        if not expected:
            continue
        # The JSONL writes boxes to 0.1 px and scores to 1e-4.
        np.testing.assert_allclose(r.detections.xyxy, np.array([e["box"] for e in expected]), rtol=0, atol=0.05 + 1e-4)
        np.testing.assert_allclose(r.detections.conf, np.array([e["confidence"] for e in expected]), rtol=0,
                                   atol=0.5e-4 + 1e-6)
        assert r.detections.cls.tolist() == [e["class_id"] for e in expected]
        assert r.detections.track_id.tolist() == [e.get("track_id", -1) for e in expected]
    assert total >= 30  # the model sees the shapes: the comparison is not of empty lists
    # detections= is the command's -d: the same lines.
    assert read_jsonl(jsonl) == command_lines


def test_profile_is_the_commands_profile_json_once_the_run_ends(model_path):
    run = streamdet.run(model_path, SOURCE, max_frames=10, track="off")
    assert run.profile is None or run.profile["frames"] <= 10  # None while the run goes
    results = list(run)
    assert len(results) == 10
    assert all(len(r.detections.track_id) == 0 or set(r.detections.track_id.tolist()) == {-1} for r in results)
    profile = run.profile
    assert profile["frames"] == 10
    assert profile["verdict"]
    assert "python" in profile["outputs"]


def test_breaking_out_of_the_loop_stops_the_run_promptly(model_path):
    start = time.monotonic()
    seen = []
    for r in streamdet.run(model_path, ENDLESS):
        seen.append(r.frame_index)
        if len(seen) == 5:
            break  # the iterator goes away here: the run is stopped and joined
    assert seen == [0, 1, 2, 3, 4]
    # Measured under 1 s on an idle 2-core machine; a run that went on would take many minutes.
    assert time.monotonic() - start < 30

    with streamdet.run(model_path, ENDLESS) as run:
        for r in run:
            if r.frame_index == 4:
                break
    profile = run.profile  # joined at the with block's end: the profile is there
    assert 5 <= profile["frames"] < 1000
    assert list(run) == []  # a closed run yields nothing more


def test_errors_raise_by_kind(model_path, tmp_path):
    with pytest.raises(streamdet.ModelError, match="missing.onnx"):
        list(streamdet.run(str(tmp_path / "missing.onnx"), SOURCE))
    with pytest.raises(streamdet.UsageError, match="colour"):
        streamdet.run(model_path, SOURCE, colour="red")
    with pytest.raises(streamdet.UsageError, match="conf"):
        streamdet.run(model_path, SOURCE, conf=2.0)
    with pytest.raises(streamdet.SourceError):
        list(streamdet.run(model_path, str(tmp_path / "missing.mp4")))


CTRL_C_CHILD = r"""
import signal, sys
import streamdet
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job may start with SIGINT ignored
n = 0
try:
    for r in streamdet.run(sys.argv[1], sys.argv[2]):
        n += 1
        if n == 3:
            print("started", flush=True)
except KeyboardInterrupt:
    print("interrupted after", n, flush=True)
"""


def test_ctrl_c_raises_keyboard_interrupt_in_the_loop_and_stops_the_run(model_path):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(streamdet.__file__)))
    child = subprocess.Popen([sys.executable, "-c", CTRL_C_CHILD, model_path, ENDLESS], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "started"
        start = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
        # Measured at 0.1 s on a loaded 2-core machine; a run that went on would take many minutes.
        assert time.monotonic() - start < 30
    finally:
        child.kill()
    assert out.startswith("interrupted after"), out
    assert child.returncode == 0


SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "samples",
                      "shapes_640x360.mp4")


def test_frames_true_hands_each_result_its_decoded_frame(model_path, frames_dir):
    from conftest import FRAME_INDICES, read_ppm
    expected = [np.ascontiguousarray(read_ppm(frames_dir / f"f{i:03d}.ppm")[:, :, ::-1]) for i in FRAME_INDICES]
    # An image folder: the frames are exactly the files' pixels, also when output= draws on the
    # frames it writes (Python's are copied before the drawing).
    for options in ({}, {"output": str(frames_dir.parent / "annotated.mp4")}):
        results = list(streamdet.run(model_path, str(frames_dir), frames=True, **options))
        assert [r.frame_index for r in results] == list(range(len(FRAME_INDICES)))
        assert sum(len(r.detections) for r in results) > 0  # so that output= did draw boxes
        for r, e in zip(results, expected):
            assert r.frame.dtype == np.uint8 and r.frame.shape == e.shape
            np.testing.assert_array_equal(r.frame, e)
    assert all(r.frame is None for r in streamdet.run(model_path, str(frames_dir)))


def test_frames_of_a_video_come_in_order_and_match_an_independent_decode(model_path):
    cv2 = pytest.importorskip("cv2")
    results = list(streamdet.run(model_path, SAMPLE, frames=True))
    assert [r.frame_index for r in results] == list(range(150))
    cap = cv2.VideoCapture(SAMPLE)
    for r in results:  # every frame kept until now: each array owns its pixels, none was reused
        ok, reference = cap.read()
        assert ok and r.frame.shape == reference.shape == (360, 640, 3)
        # OpenCV converts YUV to BGR with FFmpeg's swscale, streamdet with its own BT.601 formula:
        # within a few levels of each other (measured: mean 0.3, max 4), never another picture.
        diff = np.abs(r.frame.astype(np.int16) - reference.astype(np.int16))
        assert diff.mean() < 1.5 and np.percentile(diff, 99.9) <= 8, (r.frame_index, diff.mean(), diff.max())
    assert not cap.read()[0]


def test_the_commands_other_options_are_keywords_checked_by_its_parser(model_path, tmp_path):
    results = list(streamdet.run(model_path, SOURCE, policy="block", max_age=5000, queue=2, every=2, agnostic=True,
                                 max_frames=12, profile_json=str(tmp_path / "p.json")))
    assert [r.frame_index for r in results] == list(range(0, 12, 2))  # every=2: every other frame inferred
    assert json.loads((tmp_path / "p.json").read_text())["frames"] >= 6
    # latest: the newest frame each time, older ones dropped: in order, none twice.
    seen = [r.frame_index for r in streamdet.run(model_path, SOURCE, policy="latest")]
    assert seen and seen == sorted(set(seen)) and seen[-1] <= 29
    with pytest.raises(streamdet.UsageError, match="unknown --policy 'sideways'"):
        streamdet.run(model_path, SOURCE, policy="sideways")
    with pytest.raises(streamdet.UsageError, match="max-age"):
        streamdet.run(model_path, SOURCE, max_age=-1)
    with pytest.raises(streamdet.UsageError, match="agnostic: must be True or False"):
        streamdet.run(model_path, SOURCE, agnostic="yes")
    with pytest.raises(streamdet.UsageError, match="unknown option 'max_ages'"):
        streamdet.run(model_path, SOURCE, max_ages=5)
    with pytest.raises(streamdet.UsageError, match="frames: must be True or False"):
        streamdet.run(model_path, SOURCE, frames=10)


def test_serve_0_gives_a_working_health_endpoint_while_the_loop_runs(model_path):
    with streamdet.run(model_path, ENDLESS, serve=0) as run:
        for r in run:
            if r.frame_index == 3:
                url = run.web_view_url
                assert url.startswith("http://127.0.0.1:") and not url.endswith(":0/")
                with urllib.request.urlopen(url + "health", timeout=10) as response:
                    assert response.status == 200
                    health = json.loads(response.read())
                assert health, health
                break
    assert run.profile["frames"] >= 4
    assert streamdet.run(model_path, SOURCE, max_frames=1).web_view_url is None
