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
from conftest import FRAME_INDICES, read_ppm

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


def assert_equal_detections(a, b, atol):
    assert len(a) == len(b)
    np.testing.assert_allclose(a.xyxy, b.xyxy, rtol=0, atol=atol)
    np.testing.assert_allclose(a.conf, b.conf, rtol=0, atol=atol)
    assert a.cls.tolist() == b.cls.tolist()


@pytest.mark.parametrize("model_name", ["tiny_synth_v8.onnx", "tiny_synth_v8_dynamic.onnx"])
def test_a_list_of_frames_is_one_batch_with_the_detections_of_one_call_per_frame(model_path, frames_dir, model_name):
    det = streamdet.Detector(os.path.join(os.path.dirname(model_path), model_name), threads=1)
    # A fixed batch-1 model runs a list frame by frame; a dynamic batch axis takes it in one call.
    assert det.batch == (model_name == "tiny_synth_v8_dynamic.onnx")
    frames = [bgr_frame(frames_dir, i) for i in FRAME_INDICES]
    frames.append(np.ascontiguousarray(frames[1][40:300, 100:500]))  # another size, letterboxed on its own
    one_by_one = [det(f) for f in frames]
    batched = det(frames)
    assert isinstance(batched, list) and len(batched) == len(frames)
    assert sum(len(d) for d in batched) >= len(frames)  # the comparison is not of empty results
    # The batched convolutions may sum in another order than one image's: equal to float rounding.
    for a, b in zip(batched, one_by_one):
        assert_equal_detections(a, b, atol=1e-3)
    for a, b in zip(det(tuple(frames[:2])), one_by_one[:2]):
        assert_equal_detections(a, b, atol=1e-3)
    assert det([]) == []
    with pytest.raises(TypeError, match=r"frames\[1\].*uint8"):
        det([frames[0], frames[0].astype(np.float32)])


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
                         (dict(precision="fp8"), "--precision fp8: expected auto, fp32, fp16 or bf16"),
                         (dict(precision="fp16", device="cpu"), "--precision fp16: fp16 runs on a CUDA GPU"),
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


def cpu_has_bf16():
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    return " avx512_bf16" in flags or " amx_bf16" in flags


def test_precision_bf16_finds_the_same_objects_or_is_refused_in_one_line(model_path, frames_dir):
    frame = bgr_frame(frames_dir, FRAME_INDICES[0])
    if not cpu_has_bf16():
        with pytest.raises(streamdet.UsageError, match="no bf16 instructions"):
            streamdet.Detector(model_path, precision="bf16")
        return
    # Both at a low threshold, then compared object by object: every object either side finds
    # with a score of 0.3 or more has its match on the other side (same class, box within 2 px,
    # score within 0.03). Not a comparison of the lists as they come: they are sorted by score,
    # and bf16's error (bf16 Winograd, chosen by timing at load, is the least exact kernel) may
    # swap two objects 0.001 apart or move one near the threshold across it; CI saw both.
    fp32 = streamdet.Detector(model_path, precision="fp32", conf=0.1)(frame)
    bf16 = streamdet.Detector(model_path, precision="bf16", conf=0.1)(frame)
    assert np.count_nonzero(fp32.conf >= 0.3) > 0

    def unmatched(want, have):
        missing = []
        for i in np.flatnonzero(want.conf >= 0.3):
            near = (have.cls == want.cls[i]) & (np.abs(have.xyxy - want.xyxy[i]).max(axis=1) <= 2.0) & \
                   (np.abs(have.conf - want.conf[i]) <= 0.03)
            if not near.any():
                missing.append((int(want.cls[i]), float(want.conf[i]), want.xyxy[i].round(1).tolist()))
        return missing

    assert unmatched(fp32, bf16) == []
    assert unmatched(bf16, fp32) == []
