"""Where the command and streamdet_synth are: given by CTest (tests/CMakeLists.txt) on the pytest
command line, defaulting to build/ for a run by hand:
    PYTHONPATH=build/python /usr/bin/python3 -m pytest python/tests -q
"""
import os
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_addoption(parser):
    parser.addoption("--streamdet", default=os.path.join(ROOT, "build", "streamdet"), help="the streamdet command")
    parser.addoption("--streamdet-synth", default=os.path.join(ROOT, "build", "tools", "streamdet_synth"),
                     help="streamdet_synth (writes the test frames)")


@pytest.fixture(scope="session")
def streamdet_bin(request):
    return request.config.getoption("--streamdet")


@pytest.fixture(scope="session")
def synth_bin(request):
    return request.config.getoption("--streamdet-synth")


@pytest.fixture(scope="session")
def model_path():
    return os.path.join(ROOT, "models", "tiny_synth_v8.onnx")


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


@pytest.fixture(scope="session")
def frames_dir(tmp_path_factory, synth_bin):
    d = tmp_path_factory.mktemp("frames")
    for i in FRAME_INDICES:
        subprocess.run([synth_bin, "still", "--width", "640", "--height", "360", "--frames", "150", "--index", str(i),
                        "--image", str(d / f"f{i:03d}.ppm")], check=True, stdout=subprocess.DEVNULL)
    return d
