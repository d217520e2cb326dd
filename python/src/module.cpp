// streamdet._streamdet: the compiled half of the Python module (python/streamdet/__init__.py
// re-exports it). numpy frames in without a copy, detections out as numpy arrays, errors as
// streamdet.Error subclasses by kind. The GIL is released while a frame is preprocessed, inferred
// and its boxes decoded and suppressed.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "runtime/frame_detector.h"
#include "result_queue.h"
#include "runtime/pipeline.h"
#include "runtime/worker_plan.h"

namespace py = pybind11;

namespace sd::python {
namespace {

// The exception classes, made once at import (streamdet.Error and its subclasses by kind). Held
// for the life of the process: never released, so nothing touches them after Python finalizes.
struct ErrorClasses {
  PyObject *base = nullptr, *model = nullptr, *source = nullptr, *output = nullptr, *usage = nullptr,
           *unsupported = nullptr;
};
ErrorClasses& error_classes() {
  static ErrorClasses classes;
  return classes;
}

[[noreturn]] void raise(const Error& e) {
  const ErrorClasses& c = error_classes();
  PyObject* cls = c.base;
  switch (e.code) {
    case ErrorCode::kModel: cls = c.model; break;
    case ErrorCode::kSource:
    case ErrorCode::kDamagedSource:
    case ErrorCode::kCorruptFrame: cls = c.source; break;
    case ErrorCode::kOutput: cls = c.output; break;
    case ErrorCode::kUsage: cls = c.usage; break;
    case ErrorCode::kUnsupported: cls = c.unsupported; break;
    default: break;
  }
  PyErr_SetString(cls, e.message.c_str());
  throw py::error_already_set();
}

template <class T>
T value_or_raise(Result<T> r) {
  if (!r) raise(r.error());
  return std::move(*r);
}

// A frame as a cv::Mat header over the array's own memory. Only layouts OpenCV can address
// without a copy are taken: uint8, H x W x 3, pixels packed within each row (a C-contiguous
// array, or a band of rows or columns cut from one); anything else is a TypeError, never a silent copy.
cv::Mat wrap_frame(const py::array& a) {
  const std::string got = " (got dtype " + py::str(a.dtype()).cast<std::string>() + ", shape " +
                          py::str(py::cast(std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()))).cast<std::string>() + ")";
  if (a.dtype().kind() != 'u' || a.itemsize() != 1)
    throw py::type_error("frame: expected a numpy uint8 array of H x W x 3 (BGR, as OpenCV reads it)" + got);
  if (a.ndim() != 3 || a.shape(2) != 3 || a.shape(0) < 1 || a.shape(1) < 1)
    throw py::type_error("frame: expected an array of H x W x 3 pixels" + got);
  if (a.strides(2) != 1 || a.strides(1) != 3 || a.strides(0) < 3 * a.shape(1))
    throw py::type_error("frame: the array's pixels are not contiguous within rows (a strided view, e.g. "
                         "frame[:, ::2]); pass numpy.ascontiguousarray(frame) to copy it on purpose" + got);
  return cv::Mat(static_cast<int>(a.shape(0)), static_cast<int>(a.shape(1)), CV_8UC3,
                 const_cast<void*>(a.data()), static_cast<size_t>(a.strides(0)));
}

// The result of one frame. Arrays are made on access (N is small).
struct PyDetections {
  Detections items;
  std::shared_ptr<const std::vector<std::string>> names;

  std::string name_of(int cls) const {
    return cls >= 0 && static_cast<size_t>(cls) < names->size() ? (*names)[static_cast<size_t>(cls)] : std::to_string(cls);
  }
};

struct PyDetection {
  float x1, y1, x2, y2, conf;
  int cls;
  std::string name;
  int64_t track_id;
};

class PyDetector {
 public:
  PyDetector(const std::string& model, const std::string& device, float conf, float iou,
             const py::object& input_size, const py::object& classes, int threads, bool rgb) {
    ModelOptions o;
    o.model = model;
    o.device = device;
    o.conf = conf;
    o.iou = iou;
    o.threads = threads;
    o.input_size = input_size_spec(input_size);
    std::optional<std::vector<std::string>> class_list;
    if (!classes.is_none()) {
      if (py::isinstance<py::str>(classes))
        o.classes_file = classes.cast<std::string>();
      else
        class_list = classes.cast<std::vector<std::string>>();
    }
    Result<std::unique_ptr<FrameDetector>> loaded = [&] {
      py::gil_scoped_release release;  // loading and probing the model takes a while
      return FrameDetector::load(o, rgb);
    }();
    detector_ = value_or_raise(std::move(loaded));
    // The class names are the model's (or the caller's): a reload for the first frame's size keeps them.
    names_ = std::make_shared<const std::vector<std::string>>(class_list ? *class_list : detector_->class_names());
  }

  PyDetections detect(const py::array& frame) {
    cv::Mat mat = wrap_frame(frame);  // `frame` stays referenced (and its memory alive) for the call
    Result<Detections> r;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);  // one frame at a time per Detector; taken without the GIL held
      r = detector_->detect(mat);
    }
    return PyDetections{value_or_raise(std::move(r)), names_};
  }

  std::vector<std::string> names() const { return *names_; }
  std::pair<int, int> input_size() const { return {detector_->input_size().width, detector_->input_size().height}; }

 private:
  static std::string input_size_spec(const py::object& v) {
    if (py::isinstance<py::str>(v)) return v.cast<std::string>();
    if (py::isinstance<py::int_>(v)) return std::to_string(v.cast<int>());
    auto wh = v.cast<std::pair<int, int>>();  // (width, height)
    return std::to_string(wh.first) + "," + std::to_string(wh.second);
  }

  std::unique_ptr<FrameDetector> detector_;
  std::shared_ptr<const std::vector<std::string>> names_;
  std::mutex mutex_;
};

py::array_t<float> xyxy_of(const PyDetections& d) {
  py::array_t<float> out({static_cast<py::ssize_t>(d.items.size()), py::ssize_t{4}});
  auto m = out.mutable_unchecked<2>();
  for (size_t i = 0; i < d.items.size(); ++i) {
    const Detection& x = d.items[i];
    const auto r = static_cast<py::ssize_t>(i);
    m(r, 0) = x.x1, m(r, 1) = x.y1, m(r, 2) = x.x2, m(r, 3) = x.y2;
  }
  return out;
}

PyDetection detection_at(const PyDetections& d, size_t i) {
  const Detection& x = d.items[i];
  return PyDetection{x.x1, x.y1, x.x2, x.y2, x.score, x.class_id, d.name_of(x.class_id), x.track_id};
}

// One frame's results from streamdet.run.
struct PyRunResult {
  std::string source;
  int64_t frame_index;
  double timestamp_ms;
  PyDetections detections;
};

// streamdet.run's keywords, as the command's options (app/cli.cpp) fill RunOptions.
RunOptions run_options_from(const std::string& model, const py::object& source, const py::kwargs& kw) {
  RunOptions o;
  o.model.model = model;
  o.quiet = true;  // no progress line on the terminal of a Python program
  if (py::isinstance<py::str>(source)) o.sources.push_back(source.cast<std::string>());
  else o.sources = source.cast<std::vector<std::string>>();
  if (o.sources.empty()) raise(Error{ErrorCode::kUsage, "source: no source given"});
  for (auto [key_handle, value] : kw) {
    const std::string key = py::str(key_handle);
    if (key == "conf") o.model.conf = value.cast<float>();
    else if (key == "iou") o.model.iou = value.cast<float>();
    else if (key == "device") o.model.device = value.cast<std::string>();
    else if (key == "threads") o.model.threads = value.cast<int>();
    else if (key == "workers") o.workers = value.cast<int>();
    else if (key == "batch") o.batch = value.cast<int>();
    else if (key == "frames" || key == "max_frames") o.max_frames = value.is_none() ? -1 : value.cast<int64_t>();
    else if (key == "detections") o.detections = value.cast<std::string>();
    else if (key == "output") o.output = value.cast<std::string>();
    else if (key == "track") {
      if (py::isinstance<py::bool_>(value)) {
        o.track = value.cast<bool>() ? TrackMode::kByteTrack : TrackMode::kOff;
        continue;
      }
      const std::string mode = value.cast<std::string>();
      bool known = false;
      for (TrackMode m : {TrackMode::kAuto, TrackMode::kByteTrack, TrackMode::kIou, TrackMode::kOff})
        if (mode == track_mode_name(m)) o.track = m, known = true;
      if (!known) raise(Error{ErrorCode::kUsage, "track: unknown mode '" + mode + "' (auto|bytetrack|iou|off, or True/False)"});
    } else {
      raise(Error{ErrorCode::kUsage, "run: unknown option '" + key +
                                         "' (conf, iou, device, threads, workers, batch, frames, track, detections, output)"});
    }
  }
  if (auto st = check_model_options(o.model); !st) raise(st.error());
  if (o.workers < 0 || o.workers > kMaxThreads)
    raise(Error{ErrorCode::kUsage, "workers: must be a whole number from 0 to " + std::to_string(kMaxThreads) + ", got " +
                                       std::to_string(o.workers)});
  if (o.batch < 1 || o.batch > 64)
    raise(Error{ErrorCode::kUsage, "batch: must be a whole number from 1 to 64, got " + std::to_string(o.batch)});
  if (o.max_frames < -1) raise(Error{ErrorCode::kUsage, "frames: must be 0 or more, got " + std::to_string(o.max_frames)});
  return o;
}

// The whole pipeline on a thread of its own, its results popped one by one. The GIL is released
// while waiting for the next one; every 100 ms the wait looks for a signal (Ctrl-C raises
// KeyboardInterrupt in the loop). Leaving the loop early (close(), the iterator's end of life)
// asks the run to stop, as Ctrl-C does the command: it drains, finalizes its outputs, and is joined.
class PyRun {
 public:
  static constexpr size_t kQueueCapacity = 8;  // frames ready ahead of the Python loop

  explicit PyRun(RunOptions options) : options_(std::move(options)), queue_(std::make_shared<ResultQueue>(kQueueCapacity)) {
    thread_ = std::thread([this] {
      RunEmbedding embedding;
      embedding.make_sink = [q = queue_](const SinkContext& context) -> std::unique_ptr<Sink> {
        return std::make_unique<QueueSink>(q, context);
      };
      embedding.stop_requested = [this] { return stop_.load(std::memory_order_relaxed); };
      outcome_ = run_detection(options_, embedding);  // read by the Python side after join() only
      queue_->end_of_run();
    });
  }
  ~PyRun() { close(); }
  PyRun(const PyRun&) = delete;
  PyRun& operator=(const PyRun&) = delete;

  PyRunResult next() {
    RunResult r;
    while (thread_.joinable()) {
      ResultQueue::Pop got;
      {
        py::gil_scoped_release release;
        got = queue_->pop(r, std::chrono::milliseconds(100));
      }
      if (got == ResultQueue::Pop::kResult)
        return PyRunResult{std::move(r.source), r.frame_index, r.timestamp_ms, PyDetections{std::move(r.detections), r.names}};
      if (got == ResultQueue::Pop::kEnd) {
        join();
        if (!outcome_.status) raise(outcome_.status.error());
        break;
      }
      if (PyErr_CheckSignals() != 0) {
        py::error_already_set interrupted;  // takes the KeyboardInterrupt while the run is stopped
        close();
        throw interrupted;
      }
    }
    throw py::stop_iteration();
  }

  // Stops the run (when it still goes) and waits for it to finalize its outputs.
  void close() {
    if (!thread_.joinable()) return;
    stop_ = true;
    queue_->reader_gone();
    join();
  }

  // The profile JSON (`--profile-json`) as a dict once the run has ended; None before.
  py::object profile() const {
    if (thread_.joinable() || !outcome_.started) return py::none();
    return py::module_::import("json").attr("loads")(profile_to_json(outcome_.profile).dump());
  }

 private:
  void join() {
    py::gil_scoped_release release;
    thread_.join();
  }

  RunOptions options_;
  std::shared_ptr<ResultQueue> queue_;
  std::atomic<bool> stop_{false};
  RunOutcome outcome_;
  std::thread thread_;  // last: started once everything it uses exists
};

}  // namespace
}  // namespace sd::python

PYBIND11_MODULE(_streamdet, m) {
  using namespace sd;
  using namespace sd::python;
  m.doc() = "streamdet's compiled core; import streamdet instead.";
  ErrorClasses& c = error_classes();
  auto make = [&](const char* name, PyObject* base, const char* doc) {
    PyObject* cls = PyErr_NewExceptionWithDoc((std::string("streamdet.") + name).c_str(), doc, base, nullptr);
    if (cls == nullptr) throw py::error_already_set();
    m.attr(name) = py::reinterpret_borrow<py::object>(cls);
    return cls;
  };
  c.base = make("Error", PyExc_RuntimeError,
                "A streamdet error; its message is the command's one-line message.");
  c.model = make("ModelError", c.base, "Missing, unreadable, unloadable or unsupported model (the command's exit code 3).");
  c.source = make("SourceError", c.base, "Missing or unreadable source, broken stream (exit code 4).");
  c.output = make("OutputError", c.base, "Unwritable output, failed write (exit code 5).");
  c.usage = make("UsageError", c.base, "A bad option value (exit code 2).");
  c.unsupported = make("UnsupportedError", c.base, "A valid request this build cannot serve, e.g. a device (exit code 6).");

  py::class_<PyDetection>(m, "Detection", "One detected object: its box in frame pixels, score, class id and name.")
      .def_property_readonly("xyxy", [](const PyDetection& d) { return py::make_tuple(d.x1, d.y1, d.x2, d.y2); },
                             "(x1, y1, x2, y2) in frame pixels")
      .def_readonly("conf", &PyDetection::conf, "score, 0..1")
      .def_readonly("cls", &PyDetection::cls, "class id")
      .def_readonly("name", &PyDetection::name, "class name (the id as text when the model has no names)")
      .def_readonly("track_id", &PyDetection::track_id, "the object's identity when tracked (streamdet.run with track), else -1")
      .def("__repr__", [](const PyDetection& d) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "Detection(xyxy=(%.1f, %.1f, %.1f, %.1f), conf=%.3f, cls=%d, name=", d.x1, d.y1,
                      d.x2, d.y2, d.conf, d.cls);
        return std::string(buf) + py::repr(py::str(d.name)).cast<std::string>() + ")";
      });

  py::class_<PyDetections>(m, "Detections", "The detections of one frame, highest score first.")
      .def_property_readonly("xyxy", &xyxy_of, "N x 4 float32: x1, y1, x2, y2 in frame pixels")
      .def_property_readonly("conf", [](const PyDetections& d) {
        py::array_t<float> out(static_cast<py::ssize_t>(d.items.size()));
        for (size_t i = 0; i < d.items.size(); ++i) out.mutable_at(static_cast<py::ssize_t>(i)) = d.items[i].score;
        return out;
      }, "N float32 scores")
      .def_property_readonly("cls", [](const PyDetections& d) {
        py::array_t<int64_t> out(static_cast<py::ssize_t>(d.items.size()));
        for (size_t i = 0; i < d.items.size(); ++i) out.mutable_at(static_cast<py::ssize_t>(i)) = d.items[i].class_id;
        return out;
      }, "N int64 class ids")
      .def_property_readonly("track_id", [](const PyDetections& d) {
        py::array_t<int64_t> out(static_cast<py::ssize_t>(d.items.size()));
        for (size_t i = 0; i < d.items.size(); ++i) out.mutable_at(static_cast<py::ssize_t>(i)) = d.items[i].track_id;
        return out;
      }, "N int64 track ids when tracked (streamdet.run with track), -1 where not")
      .def_property_readonly("names", [](const PyDetections& d) { return *d.names; }, "the model's class names, by id")
      .def("__len__", [](const PyDetections& d) { return d.items.size(); })
      .def("__getitem__", [](const PyDetections& d, py::ssize_t i) {
        const auto n = static_cast<py::ssize_t>(d.items.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) throw py::index_error("detection index out of range");
        return detection_at(d, static_cast<size_t>(i));
      })
      .def("to_dict", [](const PyDetections& d) {
        py::list dets;
        for (size_t i = 0; i < d.items.size(); ++i) {
          const Detection& x = d.items[i];
          py::dict one;
          one["xyxy"] = py::make_tuple(x.x1, x.y1, x.x2, x.y2);
          one["conf"] = x.score;
          one["cls"] = x.class_id;
          one["name"] = d.name_of(x.class_id);
          if (x.track_id >= 0) one["track_id"] = x.track_id;
          dets.append(one);
        }
        py::dict out;
        out["detections"] = dets;
        return out;
      }, "{'detections': [{'xyxy': (x1, y1, x2, y2), 'conf': float, 'cls': int, 'name': str}, ...]}")
      .def("__repr__", [](const PyDetections& d) { return "<Detections: " + std::to_string(d.items.size()) + ">"; });

  py::class_<PyDetector>(m, "Detector", R"doc(A loaded model that detects objects in numpy frames.

Detector(model, *, device="auto", conf=0.25, iou=0.45, input_size="auto", classes=None, threads=0, rgb=False)

model: an ONNX file (or a Darknet .cfg with its .weights beside it), as `streamdet run -m`.
device: "auto" (CUDA when usable), "cpu", "cuda" or "cuda:N".
conf, iou: the score threshold and the NMS IoU threshold.
input_size: "auto" (the model's own, or the first frame's size rounded up to the stride for a
  dynamic model), an int N (N x N) or a (width, height) pair.
classes: a class-names file (one per line) or a list of names; default the model's own.
threads: inference threads (0: every core).
rgb: frames are RGB rather than OpenCV's BGR.
Raises ModelError, UsageError or UnsupportedError with the command's one-line message.)doc")
      .def(py::init<const std::string&, const std::string&, float, float, const py::object&, const py::object&, int, bool>(),
           py::arg("model"), py::kw_only(), py::arg("device") = "auto", py::arg("conf") = 0.25f,
           py::arg("iou") = 0.45f, py::arg("input_size") = "auto", py::arg("classes") = py::none(),
           py::arg("threads") = 0, py::arg("rgb") = false)
      .def("__call__", &PyDetector::detect, py::arg("frame"),
           R"doc(Detects objects in one frame: a numpy uint8 array of H x W x 3 (BGR unless rgb=True).

The array is read in place, never copied; an array of another dtype or shape, or whose pixels are
not contiguous within each row, raises TypeError. The GIL is released while the frame is
preprocessed, inferred and its boxes suppressed, so other Python threads run meanwhile. Calls on
one Detector are serialized; use one Detector per thread for parallel inference.)doc")
      .def_property_readonly("names", &PyDetector::names, "the model's class names, by id")
      .def_property_readonly("input_size", &PyDetector::input_size, "the network input (width, height)");

  py::class_<PyRunResult>(m, "RunResult", "One frame's results from streamdet.run.")
      .def_readonly("source", &PyRunResult::source, "the source as given (its URI or path)")
      .def_readonly("frame_index", &PyRunResult::frame_index, "0-based position of the frame in its source")
      .def_readonly("timestamp_ms", &PyRunResult::timestamp_ms, "position in the stream (file) or time since start (live), ms")
      .def_readonly("detections", &PyRunResult::detections, "the frame's Detections, in its pixels")
      .def("__repr__", [](const PyRunResult& r) {
        return "<RunResult " + r.source + " frame " + std::to_string(r.frame_index) + ": " +
               std::to_string(r.detections.items.size()) + " detections>";
      });

  py::class_<PyRun>(m, "Run", R"doc(A pipeline run in its own threads, iterated for its results in source order (per source).

Made by streamdet.run(). Leaving the loop early (break, close(), or the `with` block's end) asks the
run to stop as Ctrl-C asks the command: frames in flight are finished, the outputs finalized,
and the threads joined. An error of the run raises its Error subclass when the iteration ends.)doc")
      .def("__iter__", [](PyRun& r) -> PyRun& { return r; })
      .def("__next__", &PyRun::next)
      .def("close", &PyRun::close, "Stops the run (if still going) and waits for its outputs to be finalized.")
      .def("__enter__", [](PyRun& r) -> PyRun& { return r; })
      .def("__exit__", [](PyRun& r, const py::args&) { r.close(); })
      .def_property_readonly("profile", &PyRun::profile,
                             "The run's profile (as --profile-json writes it) once the run has ended; None before.");

  m.def("run", [](const std::string& model, const py::object& source, const py::kwargs& options) {
    return std::make_unique<PyRun>(run_options_from(model, source, options));
  }, py::arg("model"), py::arg("source"), R"doc(Runs the whole pipeline (streamdet run) on its own threads; iterate for each frame's results.

run(model, source, **options) -> Run

model: as Detector's (streamdet run -m). source: one source as the command takes it (a video
file, an image, a camera, a stream URI, synth:...) or a list of them.
options (the command's): conf, iou, device, threads, workers, batch, frames (max_frames: the
same; per source), track ("auto", "bytetrack", "iou", "off", or True/False), detections (a
JSON Lines path, -d), output (an annotated video path, -o). Any other keyword raises UsageError.

Each result has .source, .frame_index, .timestamp_ms and .detections (with .track_id when
tracked). The run starts at once; a bad option raises UsageError here, a model or source that
cannot be opened raises ModelError / SourceError from the loop.)doc");
}
