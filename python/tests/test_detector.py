"""streamdet.Detector against the command, its numpy contract, its errors and the GIL."""
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import streamdet

# Frames of the bundled sample's kind (streamdet_synth scenes of shapes at its size, 640x360),
# written losslessly as PPM: the command reads them as an image folder and Python reads the same
# pixels, so both see identical BGR frames. (The sample itself is an H.264 file the command decodes
# to YUV; Python has no decoder of its own here, python3-opencv being optional.)
FRAME_INDICES = [0, 30, 60, 90, 120]


def read_ppm(path):
    """A binary PPM (P6, 8-bit) as an H x W x 3 RGB array."""
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos)
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    assert fields[0] == b"P6" and fields[3] == b"255", fields
    width, height = int(fields[1]), int(fields[2])
    pixels = np.frombuffer(data, dtype=np.uint8, count=width * height * 3, offset=pos + 1)
    return pixels.reshape(height, width, 3)


@pytest.fixture(scope="module")
def frames_dir(tmp_path_factory, synth_bin):
    d = tmp_path_factory.mktemp("frames")
    for i in FRAME_INDICES:
        subprocess.run([synth_bin, "still", "--width", "640", "--height", "360", "--frames", "150", "--index", str(i),
                        "--image", str(d / f"f{i:03d}.ppm")], check=True, stdout=subprocess.DEVNULL)
    return d


def run_command(streamdet_bin, model, frames_dir, out):
    subprocess.run([streamdet_bin, "run", "-m", model, "-s", str(frames_dir), "-d", str(out), "--track", "off",
                    "--workers", "1", "-q"], check=True)
    lines = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {rec["frame"]: rec["detections"] for rec in lines}


@pytest.fixture(scope="module")
def command_detections(frames_dir, streamdet_bin, model_path, tmp_path_factory):
    return run_command(streamdet_bin, model_path, frames_dir, tmp_path_factory.mktemp("cmd") / "out.jsonl")


def bgr_frame(frames_dir, i):
    return np.ascontiguousarray(read_ppm(frames_dir / f"f{i:03d}.ppm")[:, :, ::-1])


@pytest.fixture(scope="module")
def detector(model_path):
    return streamdet.Detector(model_path, threads=1)


def assert_same(dets, expected):
    """Equal to the command's detections as its JSONL writes them: boxes to 0.1 px, scores to 1e-4
    (so within half the last written digit, plus float rounding)."""
    assert len(dets) == len(expected)
    if not expected:
        return
    np.testing.assert_allclose(dets.xyxy, np.array([e["box"] for e in expected]), rtol=0, atol=0.05 + 1e-4)
    np.testing.assert_allclose(dets.conf, np.array([e["confidence"] for e in expected]), rtol=0, atol=0.5e-4 + 1e-6)
    assert dets.cls.tolist() == [e["class_id"] for e in expected]
    assert [d.name for d in dets] == [e["class_name"] for e in expected]


def test_detections_equal_the_commands(detector, frames_dir, command_detections):
    assert sorted(command_detections) == list(range(len(FRAME_INDICES)))
    total = 0
    for k, i in enumerate(FRAME_INDICES):
        dets = detector(bgr_frame(frames_dir, i))
        assert_same(dets, command_detections[k])
        total += len(dets)
    assert total >= len(FRAME_INDICES)  # the model sees the shapes: the comparison is not of empty lists


def test_dynamic_model_sizes_its_input_from_the_first_frame_as_the_command_does(model_path, frames_dir, streamdet_bin,
                                                                                 tmp_path):
    dynamic = os.path.join(os.path.dirname(model_path), "tiny_synth_v8_dynamic.onnx")
    expected = run_command(streamdet_bin, dynamic, frames_dir, tmp_path / "out.jsonl")
    det = streamdet.Detector(dynamic, threads=1)
    for k, i in enumerate(FRAME_INDICES[:2]):
        assert_same(det(bgr_frame(frames_dir, i)), expected[k])
    assert det.input_size == (640, 384)  # 640x360 rounded up to the stride 32


def test_input_size_and_classes_take_the_commands_forms(model_path):
    dynamic = os.path.join(os.path.dirname(model_path), "tiny_synth_v8_dynamic.onnx")
    assert streamdet.Detector(dynamic, input_size=256).input_size == (256, 256)
    assert streamdet.Detector(dynamic, input_size=(320, 192)).input_size == (320, 192)
    assert streamdet.Detector(dynamic, input_size="320,192").input_size == (320, 192)
    with pytest.raises(streamdet.UsageError, match="fixed input of 256x256"):
        streamdet.Detector(model_path, input_size=(320, 192))
    assert streamdet.Detector(model_path, classes=["a", "b", "c", "d"]).names == ["a", "b", "c", "d"]
    names_file = os.path.join(os.path.dirname(model_path), "tiny_synth_v8.names")
    assert streamdet.Detector(model_path, classes=names_file).names == ["disc", "square", "triangle", "cross"]


def test_rgb_frames_with_rgb_true_give_the_same_detections(model_path, frames_dir, command_detections):
    det = streamdet.Detector(model_path, threads=1, rgb=True)
    rgb = np.ascontiguousarray(read_ppm(frames_dir / f"f{FRAME_INDICES[1]:03d}.ppm"))
    assert_same(det(rgb), command_detections[1])


def test_detections_object(detector, frames_dir):
    dets = detector(bgr_frame(frames_dir, FRAME_INDICES[0]))
    n = len(dets)
    assert n > 0
    assert dets.xyxy.dtype == np.float32 and dets.xyxy.shape == (n, 4)
    assert dets.conf.dtype == np.float32 and dets.conf.shape == (n,)
    assert np.issubdtype(dets.cls.dtype, np.integer) and dets.cls.shape == (n,)
    assert list(dets.conf) == sorted(dets.conf, reverse=True)
    assert dets.names == detector.names and len(dets.names) > 0
    items = list(dets)
    assert len(items) == n
    assert items[0].xyxy == pytest.approx(tuple(dets.xyxy[0]))
    assert items[0].conf == pytest.approx(float(dets.conf[0]))
    assert items[0].cls == int(dets.cls[0]) and items[0].name == dets.names[items[0].cls]
    assert dets[-1].conf == pytest.approx(float(dets.conf[-1]))
    with pytest.raises(IndexError):
        dets[n]
    d = dets.to_dict()
    assert len(d["detections"]) == n
    assert d["detections"][0]["cls"] == items[0].cls and d["detections"][0]["name"] == items[0].name
    json.dumps(d)  # plain Python values


def test_strided_or_mistyped_frames_raise_type_error_not_a_copy(detector, frames_dir):
    frame = bgr_frame(frames_dir, FRAME_INDICES[0])
    with pytest.raises(TypeError, match="not contiguous within rows"):
        detector(frame[:, ::2])
    with pytest.raises(TypeError, match="uint8"):
        detector(frame.astype(np.float32))
    with pytest.raises(TypeError, match="H x W x 3"):
        detector(frame[:, :, 0].copy())
    with pytest.raises(TypeError, match="H x W x 3"):
        detector(np.zeros((64, 64, 4), np.uint8))
    with pytest.raises(TypeError):
        detector(frame.tolist())


def test_a_band_of_columns_is_read_in_place(detector, frames_dir):
    # Rows of a C-contiguous frame are addressable with a row step: no copy needed, same result.
    frame = bgr_frame(frames_dir, FRAME_INDICES[2])
    band = frame[:, 100:500]
    assert not band.flags.c_contiguous
    a, b = detector(band), detector(np.ascontiguousarray(band))
    assert len(a) == len(b)
    np.testing.assert_array_equal(a.xyxy, b.xyxy)


def test_errors_raise_by_kind_with_the_commands_message(model_path, tmp_path):
    missing = str(tmp_path / "nope.onnx")
    with pytest.raises(streamdet.ModelError) as e:
        streamdet.Detector(missing)
    assert isinstance(e.value, streamdet.Error) and missing in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(streamdet.UsageError, match="--input-size"):
        streamdet.Detector(model_path, input_size="abc")
    for bad, message in [(dict(conf=float("nan")), "conf: must be a number in \\[0, 1\\], got nan"),
                         (dict(iou=0.0), "iou: must be a number in \\(0, 1\\]"),
                         (dict(threads=-1), "threads: must be a whole number from 0 to 1024, got -1"),
                         (dict(device="bogus"), "--device bogus"),
                         (dict(classes=str(tmp_path / "none.names")), "cannot read class names")]:
        with pytest.raises(streamdet.UsageError, match=message):
            streamdet.Detector(model_path, **bad)
    with pytest.raises(streamdet.ModelError, match="unknown extension"):
        streamdet.Detector(__file__)
    for cls in (streamdet.ModelError, streamdet.SourceError, streamdet.OutputError, streamdet.UsageError,
                streamdet.UnsupportedError):
        assert issubclass(cls, streamdet.Error) and cls.__module__ == "streamdet"


def test_other_python_threads_run_while_a_frame_is_detected(model_path):
    # A large frame through the dynamic model (network sized to the frame) keeps det() busy for tens
    # of milliseconds. With the GIL held the main thread could not run at all inside a call; with
    # it released it keeps stamping the clock there.
    det = streamdet.Detector(os.path.join(os.path.dirname(model_path), "tiny_synth_v8_dynamic.onnx"), threads=1)
    frame = np.random.default_rng(1).integers(0, 255, (1088, 1920, 3), dtype=np.uint8)
    det(frame)  # the first frame sizes the network
    calls, stamps, done = [], [], threading.Event()

    def worker():
        for _ in range(5):
            t0 = time.perf_counter()
            det(frame)
            calls.append((t0, time.perf_counter()))
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        t = threading.Thread(target=worker)
        t.start()
        while not done.is_set():
            stamps.append(time.perf_counter())
        t.join()
    finally:
        sys.setswitchinterval(old)
    stamps = np.array(stamps)
    # Only the middle of each call counts: a thread switch just before det() starts may let the main
    # thread run briefly at its edges even with the GIL held.
    inside = [int(np.count_nonzero((stamps > t0 + 0.3 * (t1 - t0)) & (stamps < t1 - 0.3 * (t1 - t0))))
              for t0, t1 in calls]
    durations_ms = [round((t1 - t0) * 1000, 1) for t0, t1 in calls]
    assert sum(1 for n in inside if n > 0) >= 1, f"no progress inside det(): {inside}, calls {durations_ms} ms"
