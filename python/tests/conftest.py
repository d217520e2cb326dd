"""Where the command and streamdet_synth are: given by CTest (tests/CMakeLists.txt) on the pytest
command line, defaulting to build/ for a run by hand:
    PYTHONPATH=build/python /usr/bin/python3 -m pytest python/tests -q
"""
import os

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
