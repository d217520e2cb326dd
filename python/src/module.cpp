// streamdet._streamdet: the compiled half of the Python module (python/streamdet/__init__.py
// re-exports it). numpy frames in without a copy, detections out as numpy arrays, errors as
// streamdet.Error subclasses by kind. The GIL is released while a frame is preprocessed, inferred
// and its boxes decoded and suppressed.
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "frame_detector.h"

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
  return PyDetection{x.x1, x.y1, x.x2, x.y2, x.score, x.class_id, d.name_of(x.class_id)};
}

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
}
