"""`pip install .` for the Python module: runs the project's CMake (scripts/build.sh's build/
folder, Release, Ninja) for the _streamdet target and packages python/streamdet with it.
Offline, with Debian's python3, pip and setuptools:

    /usr/bin/python3 -m pip install --no-build-isolation --no-index .

(in a virtual environment made with --system-site-packages, for Debian's numpy; Debian's own
python3 refuses system-wide pip installs, PEP 668).
"""
import os
import re
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(ROOT, "build")


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(streamdet VERSION ([0-9.]+)", f.read()).group(1)


class CMakeBuild(build_ext):
    """Builds _streamdet with CMake, then puts it where setuptools expects the extension."""

    def build_extension(self, ext):
        subprocess.run(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                        "-DSTREAMDET_PYTHON_MODULE=ON"], check=True)
        subprocess.run(["ninja", "-C", BUILD, "_streamdet"], check=True)
        package_dir = os.path.join(BUILD, "python", "streamdet")
        built = [f for f in os.listdir(package_dir) if f.startswith("_streamdet.") and f.endswith(".so")]
        if len(built) != 1:
            raise RuntimeError(f"expected one _streamdet*.so in {package_dir}, found {built}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(package_dir, built[0]), target)


setup(
    name="streamdet",
    version=project_version(),
    description="Real-time object detection for video: numpy frames in, detections out",
    packages=["streamdet"],
    package_dir={"streamdet": "python/streamdet"},
    package_data={"streamdet": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension("streamdet._streamdet", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
    # setuptools' own build folder inside CMake's, not beside it.
    options={"build": {"build_base": os.path.join("build", "setuptools")}},
)
