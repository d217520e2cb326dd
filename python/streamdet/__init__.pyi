# Type stubs for streamdet (the compiled _streamdet extension re-exported by __init__.py).
from collections.abc import Iterator, Sequence
from os import PathLike
from typing import Literal, TypedDict

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

class _DetectionDict(TypedDict):
    xyxy: tuple[float, float, float, float]
    conf: float
    cls: int
    name: str

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
