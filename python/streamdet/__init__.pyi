# Type stubs for streamdet (the compiled _streamdet extension re-exported by __init__.py).
from collections.abc import Iterator, Sequence
from os import PathLike
from typing import Any, Literal, TypedDict

import numpy as np
import numpy.typing as npt

class Error(RuntimeError):
    """A streamdet error; its message is the command's one-line message."""

class ModelError(Error): ...
class SourceError(Error): ...
class OutputError(Error): ...
class UsageError(Error): ...
class UnsupportedError(Error): ...

class Detection:
    """One detected object: its box in frame pixels, score, class id and name."""
    @property
    def xyxy(self) -> tuple[float, float, float, float]: ...
    @property
    def conf(self) -> float: ...
    @property
    def cls(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def track_id(self) -> int: ...  # -1 when not tracked

class _DetectionDict(TypedDict, total=False):
    xyxy: tuple[float, float, float, float]
    conf: float
    cls: int
    name: str
    track_id: int  # only when tracked

class _DetectionsDict(TypedDict):
    detections: list[_DetectionDict]

class Detections:
    """The detections of one frame, highest score first."""
    @property
    def xyxy(self) -> npt.NDArray[np.float32]: ...  # N x 4
    @property
    def conf(self) -> npt.NDArray[np.float32]: ...  # N
    @property
    def cls(self) -> npt.NDArray[np.int64]: ...  # N
    @property
    def track_id(self) -> npt.NDArray[np.int64]: ...  # N; -1 where not tracked
    @property
    def names(self) -> list[str]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Detection: ...
    def __iter__(self) -> Iterator[Detection]: ...
    def to_dict(self) -> _DetectionsDict: ...

class Detector:
    """A loaded model that detects objects in numpy frames (uint8 H x W x 3, BGR unless rgb=True)."""
    def __init__(
        self,
        model: str | PathLike[str],
        *,
        device: Literal["auto", "cpu", "cuda"] | str = "auto",
        conf: float = 0.25,
        iou: float = 0.45,
        input_size: Literal["auto"] | str | int | tuple[int, int] = "auto",
        classes: str | Sequence[str] | None = None,
        threads: int = 0,
        rgb: bool = False,
    ) -> None: ...
    def __call__(self, frame: npt.NDArray[np.uint8]) -> Detections: ...
    @property
    def names(self) -> list[str]: ...
    @property
    def input_size(self) -> tuple[int, int]: ...

class RunResult:
    """One frame's results from streamdet.run."""
    @property
    def source(self) -> str: ...
    @property
    def frame_index(self) -> int: ...
    @property
    def timestamp_ms(self) -> float: ...
    @property
    def detections(self) -> Detections: ...

class Run:
    """A pipeline run in its own threads; iterate for its results (in order per source)."""
    def __iter__(self) -> Run: ...
    def __next__(self) -> RunResult: ...
    def close(self) -> None: ...
    def __enter__(self) -> Run: ...
    def __exit__(self, *args: object) -> None: ...
    @property
    def profile(self) -> dict[str, Any] | None: ...  # the --profile-json object once the run ended

def run(
    model: str,
    source: str | Sequence[str],
    *,
    conf: float = ...,
    iou: float = ...,
    device: str = ...,
    threads: int = ...,
    workers: int = ...,
    batch: int = ...,
    frames: int | None = ...,
    max_frames: int | None = ...,
    track: Literal["auto", "bytetrack", "iou", "off"] | bool = ...,
    detections: str = ...,
    output: str = ...,
) -> Run: ...
