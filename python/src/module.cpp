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
#include "app/run_command_options.h"
#include "core/log.h"
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

// A numpy array as it is (never converted: a conversion would be a copy behind the caller's back).
py::array as_array(const py::object& o) {
  if (!py::isinstance<py::array>(o))
    throw py::type_error("frame: expected a numpy uint8 array of H x W x 3 (BGR, as OpenCV reads it), got " +
                         py::str(py::type::of(o).attr("__name__")).cast<std::string>());
  return o.cast<py::array>();
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
  PyDetector(const std::string& model, const std::string& device, const std::string& precision, float conf, float iou,
             const py::object& input_size, const py::object& classes, int threads, bool rgb) {
    ModelOptions o;
    o.model = model;
    o.device = device;
    o.precision = precision;
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

  // One frame (an array) or several (a list or tuple of arrays: a list of Detections back).
  py::object call(const py::object& frames) {
    if (py::isinstance<py::list>(frames) || py::isinstance<py::tuple>(frames)) return py::cast(detect_batch(frames.cast<py::sequence>()));
    return py::cast(detect(frames));
  }

  PyDetections detect(const py::object& frame) {
    cv::Mat mat = wrap_frame(as_array(frame));  // `frame` stays referenced (and its memory alive) for the call
    Result<Detections> r;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);  // one frame at a time per Detector; taken without the GIL held
      r = detector_->detect(mat);
    }
    return PyDetections{value_or_raise(std::move(r)), names_};
  }

  // Every frame checked before any is inferred; then the model's batch (kMaxBatch frames a call
  // at most), or one call per frame for a model of a fixed batch of 1.
  std::vector<PyDetections> detect_batch(const py::sequence& frames) {
    std::vector<cv::Mat> mats;
    for (size_t i = 0; i < frames.size(); ++i) {
      try {
        mats.push_back(wrap_frame(as_array(frames[i])));  // the list holds the arrays for the call
      } catch (py::type_error& e) {
        throw py::type_error("frames[" + std::to_string(i) + "]: " + e.what());
      }
    }
    Result<std::vector<Detections>> r = std::vector<Detections>{};
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      for (size_t at = 0; at < mats.size() && r; at += kMaxBatch) {
        const size_t end = std::min(mats.size(), at + static_cast<size_t>(kMaxBatch));
        Result<std::vector<Detections>> part = detector_->detect_batch(std::vector<cv::Mat>(mats.begin() + static_cast<std::ptrdiff_t>(at), mats.begin() + static_cast<std::ptrdiff_t>(end)));
        if (!part) r = tl::unexpected(part.error());
        else for (Detections& d : *part) r->push_back(std::move(d));
      }
    }
    std::vector<Detections> all = value_or_raise(std::move(r));
    std::vector<PyDetections> out;
    out.reserve(all.size());
    for (Detections& d : all) out.push_back(PyDetections{std::move(d), names_});
    return out;
  }

  bool batch_capable() const { return detector_->batch_capable(); }

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
  py::object frame;  // numpy H x W x 3 uint8 BGR with frames=True, else None
};

// A frame the queue's sink copied for Python, handed over without another copy: the array owns
// the cv::Mat (and so its pixels) through a capsule.
py::object frame_array(cv::Mat frame) {
  if (frame.empty()) return py::none();
  auto* owned = new cv::Mat(std::move(frame));
  py::capsule owner(owned, [](void* p) { delete static_cast<cv::Mat*>(p); });
  return py::array_t<uint8_t>({static_cast<py::ssize_t>(owned->rows), static_cast<py::ssize_t>(owned->cols), py::ssize_t{3}},
                              {static_cast<py::ssize_t>(owned->step[0]), py::ssize_t{3}, py::ssize_t{1}}, owned->data, owner);
}

// A keyword's value as the command line's text: str as it is, True/False as true/false, a
// number as Python prints it (the shortest text that reads back the same), a list or tuple as one
// value per item (an option that repeats, e.g. sink=[...]), anything else (a Path) by str().
std::vector<std::string> option_texts(const py::handle& v) {
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    std::vector<std::string> all;
    for (const py::handle& item : v)
      for (std::string& t : option_texts(item)) all.push_back(std::move(t));
    return all;
  }
  if (py::isinstance<py::bool_>(v)) return {v.cast<bool>() ? "true" : "false"};
  if (py::isinstance<py::float_>(v)) return {py::repr(v).cast<std::string>()};
  return {py::str(v).cast<std::string>()};
}

// What streamdet.run's keywords ask of the run: its RunOptions, parsed and checked by the
// command's own options (app/run_command_options.h), and what only Python has (frames=).
struct PyRunRequest {
  RunOptions options;
  bool frames = false;  // each result carries its frame as a numpy array
};

PyRunRequest run_request_from(const std::string& model, const py::object& source, const py::kwargs& kw) {
  PyRunRequest request;
  std::vector<std::string> sources;
  if (py::isinstance<py::str>(source)) sources.push_back(source.cast<std::string>());
  else sources = option_texts(source);
  if (sources.empty()) raise(Error{ErrorCode::kUsage, "source: no source given"});
  std::vector<RunKeyword> keywords;
  for (auto [key_handle, value] : kw) {
    const std::string key = py::str(key_handle);
    if (value.is_none()) continue;  // None: the option's default
    if (key == "frames") {
      // Python's own: the frames themselves. The command's --frames (a count) is max_frames here.
      if (!py::isinstance<py::bool_>(value))
        raise(Error{ErrorCode::kUsage, "frames: must be True or False (hand each result its frame); the number of frames to "
                                       "read is max_frames="});
      request.frames = value.cast<bool>();
      continue;
    }
    if (key == "quiet") raise(Error{ErrorCode::kUsage, "quiet: a run from Python is always quiet (no progress line, no table)"});
    if (key == "track" && py::isinstance<py::bool_>(value)) {
      keywords.push_back({key, {value.cast<bool>() ? "bytetrack" : "off"}});
      continue;
    }
    keywords.push_back({key, option_texts(value)});
  }
  Result<RunOptions> options = run_options_from_keywords(model, sources, keywords);
  request.options = value_or_raise(std::move(options));
  request.options.quiet = true;  // no progress line on the terminal of a Python program
  request.options.redis_password = redis_password_from_environment();
  return request;
}

// The whole pipeline on a thread of its own, its results popped one by one. The GIL is released
// while waiting for the next one; every 100 ms the wait looks for a signal (Ctrl-C raises
// KeyboardInterrupt in the loop). Leaving the loop early (close(), the iterator's end of life)
// asks the run to stop, as Ctrl-C does the command: it drains, finalizes its outputs, and is joined.
class PyRun {
 public:
  // Results ready ahead of the Python loop: enough that the pipeline does not wait whenever the
  // loop's thread waits for a core or the GIL; fewer with frames=True, each holding a frame.
  static constexpr size_t kQueueCapacity = 32, kQueueCapacityWithFrames = 8;

  explicit PyRun(PyRunRequest request)
      : options_(std::move(request.options)), queue_(std::make_shared<ResultQueue>(request.frames ? kQueueCapacityWithFrames : kQueueCapacity)) {
    thread_ = std::thread([this, frames = request.frames] {
      RunEmbedding embedding;
      embedding.make_sink = [q = queue_, frames](const SinkContext& context) -> std::unique_ptr<Sink> {
        return std::make_unique<QueueSink>(q, context, frames);
      };
      embedding.stop_requested = [this] { return stop_.load(std::memory_order_relaxed); };
      embedding.web_view_started = [this](const std::string& url) {
        std::lock_guard lock(url_mutex_);
        web_view_url_ = url;
      };
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
        return PyRunResult{std::move(r.source), r.frame_index, r.timestamp_ms, PyDetections{std::move(r.detections), r.names},
                           frame_array(std::move(r.frame))};
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

  // The web view's address with serve=: known before the first result; None without.
  py::object web_view_url() {
    std::lock_guard lock(url_mutex_);
    return web_view_url_.empty() ? py::object(py::none()) : py::object(py::str(web_view_url_));
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
  std::mutex url_mutex_;
  std::string web_view_url_;
  RunOutcome outcome_;
  std::thread thread_;  // last: started once everything it uses exists
};

}  // namespace
}  // namespace sd::python

PYBIND11_MODULE(_streamdet, m) {
  using namespace sd;
  using namespace sd::python;
  m.doc() = "streamdet's compiled core; import streamdet instead.";
  // A library prints no progress or information lines (the command's --quiet); warnings, and the
  // notices a user needs (the web view's address), still go to stderr.
  set_log_quiet(true);
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

Detector(model, *, device="auto", precision="auto", conf=0.25, iou=0.45, input_size="auto", classes=None, threads=0, rgb=False)

model: an ONNX file (or a Darknet .cfg with its .weights beside it), as `streamdet run -m`.
device: "auto" (CUDA when usable), "cpu", "cuda" or "cuda:N".
precision: "auto" (fp16 on a CUDA GPU, float32 on the CPU), "fp32", "fp16" (the GPU's tensors in
  fp16; UsageError on the CPU), "bf16" (the CPU's convolutions in bfloat16, on processors with
  avx512_bf16 or AMX; UsageError elsewhere), as `streamdet run --precision`.
conf, iou: the score threshold and the NMS IoU threshold.
input_size: "auto" (the model's own, or the first frame's size rounded up to the stride for a
  dynamic model), an int N (N x N) or a (width, height) pair.
classes: a class-names file (one per line) or a list of names; default the model's own.
threads: inference threads (0: every core).
rgb: frames are RGB rather than OpenCV's BGR.
Raises ModelError, UsageError or UnsupportedError with the command's one-line message.)doc")
      .def(py::init<const std::string&, const std::string&, const std::string&, float, float, const py::object&,
                    const py::object&, int, bool>(),
           py::arg("model"), py::kw_only(), py::arg("device") = "auto", py::arg("precision") = "auto", py::arg("conf") = 0.25f,
           py::arg("iou") = 0.45f, py::arg("input_size") = "auto", py::arg("classes") = py::none(),
           py::arg("threads") = 0, py::arg("rgb") = false)
      .def("__call__", &PyDetector::call, py::arg("frame"),
           R"doc(Detects objects in one frame, or in a list of frames as one batch.

frame: a numpy uint8 array of H x W x 3 (BGR unless rgb=True) -> Detections; or a list (or
tuple) of such arrays, of any sizes -> a list of Detections, in the same order. A list is
inferred in one call of the model's batch when the model has a dynamic batch axis
(Detector.batch is True), else frame by frame; the detections are the same as one call per frame.

Arrays are read in place, never copied; an array of another dtype or shape, or whose pixels are
not contiguous within each row, raises TypeError (for a list, naming its index). The GIL is
released while frames are preprocessed, inferred and their boxes suppressed, so other Python
threads run meanwhile. Calls on one Detector are serialized; use one Detector per thread for
parallel inference.)doc")
      .def_property_readonly("batch", &PyDetector::batch_capable,
                             "whether the model has a dynamic batch axis (a list of frames is then one inference call)")
      .def_property_readonly("names", &PyDetector::names, "the model's class names, by id")
      .def_property_readonly("input_size", &PyDetector::input_size, "the network input (width, height)");

  py::class_<PyRunResult>(m, "RunResult", "One frame's results from streamdet.run.")
      .def_readonly("source", &PyRunResult::source, "the source as given (its URI or path)")
      .def_readonly("frame_index", &PyRunResult::frame_index, "0-based position of the frame in its source")
      .def_readonly("timestamp_ms", &PyRunResult::timestamp_ms, "position in the stream (file) or time since start (live), ms")
      .def_readonly("detections", &PyRunResult::detections, "the frame's Detections, in its pixels")
      .def_readonly("frame", &PyRunResult::frame,
                    "with frames=True: the frame as decoded, a numpy H x W x 3 uint8 BGR array of its own (not drawn on, "
                    "even with output= or serve=); else None")
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
      .def_property_readonly("web_view_url", &PyRun::web_view_url,
                             "With serve=: the web view's address (http://host:port/, the port bound for serve=0), known "
                             "by the first result; None otherwise.")
      .def_property_readonly("profile", &PyRun::profile,
                             "The run's profile (as --profile-json writes it) once the run has ended; None before.");

  m.def("run", [](const std::string& model, const py::object& source, const py::kwargs& options) {
    return std::make_unique<PyRun>(run_request_from(model, source, options));
  }, py::arg("model"), py::arg("source"), R"doc(Runs the whole pipeline (streamdet run) on its own threads; iterate for each frame's results.

run(model, source, **options) -> Run

model: as Detector's (streamdet run -m). source: one source as the command takes it (a video
file, an image, a folder of images, a camera, a stream URI, redis://..., synth:...) or a list.

options: every option of `streamdet run`, by its long name with underscores for dashes
(--max-age is max_age=, --serve is serve=), parsed and checked by the command's own parser, with
its messages. Values: str, int, float; True/False for a flag (agnostic=True); a list for an
option that repeats (sink=[...], line=[...]); None for the default. For example: conf, iou,
device, threads, workers, batch, max_frames (the command's --frames), policy ("auto", "block",
"latest", "drop-oldest"), queue, every, max_age (ms), output (-o), detections (-d), sink
(e.g. "redis://host:6379/detections"), serve ("[host:]port"; 0: any free port, see
Run.web_view_url), track ("auto", "bytetrack", "iou", "off", or True/False), line, zone,
events, profile_json, report, trace, reconnect, drain_timeout.
Python's own: frames=True hands each result its decoded frame (RunResult.frame); it costs one
copy of each frame, and nothing when False (the default). quiet is always on.
An unknown keyword or a bad value raises UsageError here, naming it.

Each result has .source, .frame_index, .timestamp_ms, .detections (with .track_id when
tracked) and .frame. The run starts at once; a model or source that cannot be opened raises
ModelError / SourceError from the loop.)doc");
}
