# Type stubs for streamdet (the compiled _streamdet extension re-exported by __init__.py).
from collections.abc import Iterator, Sequence
from os import PathLike
from typing import Any, Literal, TypedDict, overload

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
        precision: Literal["auto", "fp32", "fp16", "bf16"] = "auto",
        conf: float = 0.25,
        iou: float = 0.45,
        input_size: Literal["auto"] | str | int | tuple[int, int] = "auto",
        classes: str | Sequence[str] | None = None,
        threads: int = 0,
        rgb: bool = False,
    ) -> None: ...
    @overload
    def __call__(self, frame: npt.NDArray[np.uint8]) -> Detections: ...
    @overload
    def __call__(self, frame: list[npt.NDArray[np.uint8]] | tuple[npt.NDArray[np.uint8], ...]) -> list[Detections]: ...
    @property
    def batch(self) -> bool: ...  # a dynamic batch axis: a list of frames is one inference call
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
    @property
    def frame(self) -> npt.NDArray[np.uint8] | None: ...  # H x W x 3 BGR, as decoded, with frames=True

class Run:
    """A pipeline run in its own threads; iterate for its results (in order per source)."""
    def __iter__(self) -> Run: ...
    def __next__(self) -> RunResult: ...
    def close(self) -> None: ...
    def __enter__(self) -> Run: ...
    def __exit__(self, *args: object) -> None: ...
    @property
    def web_view_url(self) -> str | None: ...  # with serve=: http://host:port/ (the port bound for serve=0)
    @property
    def profile(self) -> dict[str, Any] | None: ...  # the --profile-json object once the run ended

_Path = str | PathLike[str]

# Every option of `streamdet run` is a keyword: its long name with underscores for dashes, None for
# its default, True/False for a flag, a list for an option that repeats (docs/options.md).
def run(
    model: _Path,
    source: _Path | Sequence[_Path],
    *,
    frames: bool = False,  # Python's own: each result's .frame (the command's --frames is max_frames)
    # the model
    weights: _Path | None = ...,
    engine: Literal["auto", "native", "opencv"] | None = ...,
    device: Literal["auto", "cpu", "cuda"] | str | None = ...,
    threads: int | None = ...,
    input_size: Literal["auto"] | str | int | None = ...,
    layout: Literal["auto", "yolov8", "yolov5", "yolov10", "yolox", "ssd", "darknet"] | None = ...,
    preprocess: str | None = ...,
    classes: _Path | None = ...,
    conf: float | None = ...,
    iou: float | None = ...,
    max_memory: str | None = ...,
    engine_profile: int | None = ...,
    agnostic: bool = ...,
    max_det: int | None = ...,
    # outputs
    output: _Path | None = ...,
    detections: _Path | None = ...,
    sink: str | Sequence[str] | None = ...,  # a video, a .jsonl, redis://host:port/STREAM
    profile_json: _Path | None = ...,
    report: _Path | None = ...,
    trace: _Path | None = ...,
    events: _Path | None = ...,
    max_frames: int | None = ...,
    verbose: bool = ...,
    # the runtime
    workers: int | None = ...,
    decode_threads: int | None = ...,
    batch: int | None = ...,
    batch_wait: float | None = ...,
    policy: Literal["auto", "block", "latest", "drop-oldest"] | None = ...,
    queue: int | None = ...,
    every: int | None = ...,
    max_age: float | None = ...,
    claim_after: int | None = ...,
    max_pixels: int | None = ...,
    show: bool = ...,
    serve: str | int | None = ...,  # [host:]port; 0: any free port (Run.web_view_url)
    serve_fps: float | None = ...,
    serve_token: str | None = ...,
    drain_timeout: float | None = ...,
    # live sources
    reconnect: Literal["auto", "never"] | None = ...,
    stall_timeout: float | None = ...,
    reconnect_for: float | None = ...,
    # tracking, lines and zones
    track: Literal["auto", "bytetrack", "iou", "off"] | bool | None = ...,
    track_thresh: float | None = ...,
    track_low: float | None = ...,
    new_track_thresh: float | None = ...,
    match_thresh: float | None = ...,
    track_buffer: float | None = ...,
    track_reid_buffer: float | None = ...,
    track_split_box: float | None = ...,
    track_agnostic: bool = ...,
    track_appearance: Literal["on", "off"] | None = ...,
    line: str | Sequence[str] | None = ...,
    zone: str | Sequence[str] | None = ...,
) -> Run: ...
