#include "conformance/op_cases.h"

#include <algorithm>
#include <cmath>

#include "onnx_builder.h"

namespace sd::native::conformance {
namespace {

using test::OnnxBuilder;

int64_t pick(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
bool coin(Rng& rng) { return pick(rng, 0, 1) == 1; }

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

HostTensor random_input(const std::vector<int64_t>& dims, Rng& rng, float lo = -2.f, float hi = 2.f) {
  HostTensor t(DType::kFloat32, Shape::from(dims.begin(), dims.end()));
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = u(rng);
  return t;
}

// Builds a case around one op: graph inputs x0..xk, optionally a 1x1 Conv in front of x0 (4-D
// only), the op, one output per op output.
class CaseBuilder {
 public:
  explicit CaseBuilder(Rng& rng, int opset = 17) : rng_(rng), b_(opset) {}

  // A data input; returns the name the op should read.
  std::string data(const std::vector<int64_t>& dims, bool behind_conv = false, float lo = -2.f, float hi = 2.f) {
    const std::string name = "x" + std::to_string(inputs_.size());
    b_.input(name, dims);
    inputs_.push_back(random_input(dims, rng_, lo, hi));
    what_ += name + dims_text(dims) + " ";
    if (!behind_conv || dims.size() != 4) return name;
    const int64_t c = dims[1];
    std::vector<float> w(static_cast<size_t>(c * c), 0.f);
    for (int64_t i = 0; i < c; ++i) w[static_cast<size_t>(i * c + i)] = 1.f;  // identity, plus a little mixing
    for (auto& v : w) v += std::uniform_real_distribution<float>(-0.1f, 0.1f)(rng_);
    b_.initializer("w_" + name, {c, c, 1, 1}, w);
    b_.node("Conv", {name, "w_" + name}, {"c_" + name});
    what_ += "(behind a 1x1 conv) ";
    return "c_" + name;
  }
  void ints(const std::string& name, const std::vector<int64_t>& v) { b_.initializer_i64(name, {static_cast<int64_t>(v.size())}, v); }
  void floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) { b_.initializer(name, dims, v); }
  // `unnamed`: an output slot left blank (nobody reads it: ONNX's optional outputs).
  onnx::NodeProto* op(const std::string& type, std::vector<std::string> ins, int outputs = 1, int unnamed = -1) {
    std::vector<std::string> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back(i == unnamed ? "" : "y" + std::to_string(i));
    for (auto& o : outs)
      if (!o.empty()) b_.output(o);
    return b_.node(type, std::move(ins), std::move(outs));
  }
  void note(const std::string& s) { what_ += s + " "; }
  OpCase done() { return OpCase{what_, b_.bytes(), std::move(inputs_)}; }
  OnnxBuilder& builder() { return b_; }

 private:
  Rng& rng_;
  OnnxBuilder b_;
  std::vector<HostTensor> inputs_;
  std::string what_;
};

std::vector<int64_t> random_dims(Rng& rng, int rank, int64_t lo = 1, int64_t hi = 9) {
  std::vector<int64_t> d;
  for (int i = 0; i < rank; ++i) d.push_back(pick(rng, lo, hi));
  return d;
}

OpCase conv_case(Rng& rng, bool fused) {
  CaseBuilder c(rng);
  const int64_t n = pick(rng, 1, 2), k = std::vector<int64_t>{1, 3, 3, 5}[static_cast<size_t>(pick(rng, 0, 3))];
  const int64_t stride = pick(rng, 1, 2), dil = k > 1 && coin(rng) ? 2 : 1, pad = pick(rng, 0, k / 2 * dil);
  const bool depthwise = k > 1 && pick(rng, 0, 3) == 0;
  const int64_t ch = depthwise ? pick(rng, 4, 24) : pick(rng, 1, 20);
  const int64_t oc = depthwise ? ch : pick(rng, 1, 24);
  const int64_t span = (k - 1) * dil + 1;
  const int64_t h = pick(rng, std::max<int64_t>(span - 2 * pad, 1), 18), w = pick(rng, std::max<int64_t>(span - 2 * pad, 1), 18);
  const std::string x = c.data({n, ch, h, w}, !depthwise && coin(rng), -1.f, 1.f);
  c.builder().random_initializer("w", {oc, depthwise ? 1 : ch, k, k}, -0.5f, 0.5f);
  std::vector<std::string> ins{x, "w"};
  if (coin(rng)) {
    c.builder().random_initializer("b", {oc}, -0.5f, 0.5f);
    ins.push_back("b");
  }
  const std::string conv_out = fused ? "conv" : "y0";
  auto* node = c.builder().node("Conv", ins, {conv_out});
  OnnxBuilder::attr_ints(node, "kernel_shape", {k, k});
  OnnxBuilder::attr_ints(node, "strides", {stride, stride});
  OnnxBuilder::attr_ints(node, "dilations", {dil, dil});
  OnnxBuilder::attr_ints(node, "pads", {pad, pad, pad, pad});
  if (depthwise) OnnxBuilder::attr_int(node, "group", ch);
  c.note("k=" + std::to_string(k) + " s=" + std::to_string(stride) + " d=" + std::to_string(dil) + " p=" + std::to_string(pad) +
         " oc=" + std::to_string(oc) + (depthwise ? " depthwise" : ""));
  if (!fused) {
    c.builder().output("y0");
    return c.done();
  }
  // What the fusion passes make one FusedConv: an activation, SiLU as x * Sigmoid(x), and a
  // residual sum with a tensor of the output's shape.
  const int act = static_cast<int>(pick(rng, 0, 4));
  std::string out = "conv";
  if (act == 0) c.builder().node("Relu", {out}, {"act"}), c.note("relu");
  if (act == 1) {
    auto* lr = c.builder().node("LeakyRelu", {out}, {"act"});
    OnnxBuilder::attr_float(lr, "alpha", 0.1f);
    c.note("leaky");
  }
  if (act == 2) c.builder().node("Sigmoid", {out}, {"sig"}), c.builder().node("Mul", {out, "sig"}, {"act"}), c.note("silu");
  if (act == 3) c.builder().node("Sigmoid", {out}, {"act"}), c.note("sigmoid");
  if (act == 4) c.builder().node("HardSwish", {out}, {"act"}), c.note("hardswish");
  out = "act";
  if (coin(rng) && stride == 1 && 2 * pad == span - 1 && oc == ch && !depthwise) {
    c.builder().node("Add", {out, x}, {"y0"});
    c.note("+residual");
  } else {
    c.builder().node("Identity", {out}, {"y0"});
  }
  c.builder().output("y0");
  return c.done();
}

OpCase unary_case(Rng& rng, const std::string& op) {
  CaseBuilder c(rng);
  const int rank = static_cast<int>(pick(rng, 1, 4));
  auto dims = random_dims(rng, rank);
  if (rank == 4) dims[1] = pick(rng, 1, 20);
  const std::string x = c.data(dims, coin(rng), op == "Exp" ? -4.f : -6.f, op == "Exp" ? 4.f : 6.f);
  auto* n = c.op(op, {x});
  if (op == "LeakyRelu") OnnxBuilder::attr_float(n, "alpha", std::uniform_real_distribution<float>(0.01f, 0.5f)(rng));
  if (op == "Clip") {
    const float lo = std::uniform_real_distribution<float>(-3.f, 0.f)(rng), hi = std::uniform_real_distribution<float>(0.f, 3.f)(rng);
    c.floats("lo", {}, {lo});
    c.floats("hi", {}, {hi});
    n->add_input("lo");
    n->add_input("hi");
    c.note("clip " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return c.done();
}

// Numpy broadcasting: each dim of the second operand 1 or the first's, some leading ones dropped.
OpCase binary_case(Rng& rng, const std::string& op) {
  CaseBuilder c(rng);
  const int rank = static_cast<int>(pick(rng, 1, 4));
  auto a = random_dims(rng, rank);
  std::vector<int64_t> b;
  const int drop = static_cast<int>(pick(rng, 0, rank - 1));
  for (int i = drop; i < rank; ++i) b.push_back(coin(rng) ? a[static_cast<size_t>(i)] : 1);
  if (coin(rng)) std::swap(a, b);
  const bool behind = a.size() == 4 && coin(rng);
  const std::string x = c.data(a, behind);
  const std::string y = op == "Div" ? c.data(b, false, 0.5f, 2.f) : c.data(b);
  c.op(op, {x, y});
  return c.done();
}

OpCase concat_case(Rng& rng) {
  CaseBuilder c(rng);
  const int rank = static_cast<int>(pick(rng, 1, 4));
  auto dims = random_dims(rng, rank);
  const int64_t axis = pick(rng, -rank, rank - 1);
  const int parts = static_cast<int>(pick(rng, 2, 4));
  std::vector<std::string> ins;
  const bool behind = rank == 4 && coin(rng);
  // Now and then an empty piece (extent 0 on the axis, never behind a convolution): it must
  // take no room in the output.
  const int empty = !behind && coin(rng) ? static_cast<int>(pick(rng, 0, parts - 1)) : -1;
  for (int i = 0; i < parts; ++i) {
    auto d = dims;
    d[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = i == empty ? 0 : pick(rng, 1, 7);
    ins.push_back(c.data(d, behind));
  }
  OnnxBuilder::attr_int(c.op("Concat", ins), "axis", axis);
  c.note("axis=" + std::to_string(axis) + (empty >= 0 ? " empty piece " + std::to_string(empty) : ""));
  return c.done();
}

OpCase split_case(Rng& rng) {
  CaseBuilder c(rng);
  const int rank = static_cast<int>(pick(rng, 1, 4));
  auto dims = random_dims(rng, rank, 2, 9);
  const int64_t axis = pick(rng, 0, rank - 1);
  const int64_t extent = dims[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  for (int64_t left = extent; left > 0;) {
    const int64_t s = pick(rng, 1, left);
    sizes.push_back(s);
    left -= s;
  }
  // Now and then an empty piece, and an output nobody reads (unnamed: the pieces after it must
  // still come from their own slabs).
  if (coin(rng)) sizes.insert(sizes.begin() + pick(rng, 0, static_cast<int64_t>(sizes.size())), 0);
  const int unnamed = sizes.size() > 1 && coin(rng) ? static_cast<int>(pick(rng, 0, static_cast<int64_t>(sizes.size()) - 2)) : -1;
  const std::string x = c.data(dims, rank == 4 && coin(rng));
  c.ints("sizes", sizes);
  OnnxBuilder::attr_int(c.op("Split", {x, "sizes"}, static_cast<int>(sizes.size()), unnamed), "axis", axis);
  c.note("axis=" + std::to_string(axis) + " sizes=" + dims_text(sizes) + (unnamed >= 0 ? " unnamed " + std::to_string(unnamed) : ""));
  return c.done();
}

OpCase slice_case(Rng& rng) {
  CaseBuilder c(rng);
  const int rank = static_cast<int>(pick(rng, 1, 4));
  auto dims = random_dims(rng, rank, 1, 10);
  std::vector<int64_t> starts, ends, axes, steps;
  for (int a = 0; a < rank; ++a) {
    if (!coin(rng) && !(a == rank - 1 && axes.empty())) continue;
    const int64_t n = dims[static_cast<size_t>(a)], step = std::vector<int64_t>{1, 1, 2, -1, -2}[static_cast<size_t>(pick(rng, 0, 4))];
    int64_t s = pick(rng, -n, n - 1), e = pick(rng, -n - 1, n + 1);
    if (step < 0) std::swap(s, e);
    axes.push_back(coin(rng) ? a : a - rank);
    starts.push_back(s);
    ends.push_back(e);
    steps.push_back(step);
  }
  const std::string x = c.data(dims, rank == 4 && coin(rng));
  c.ints("starts", starts);
  c.ints("ends", ends);
  c.ints("axes", axes);
  c.ints("steps", steps);
  c.op("Slice", {x, "starts", "ends", "axes", "steps"});
  c.note("starts=" + dims_text(starts) + " ends=" + dims_text(ends) + " axes=" + dims_text(axes) + " steps=" + dims_text(steps));
  return c.done();
}

OpCase transpose_case(Rng& rng) {
  CaseBuilder c(rng);
  const int rank = static_cast<int>(pick(rng, 2, 5));
  auto dims = random_dims(rng, rank, 1, 12);
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  const std::string x = c.data(dims, rank == 4 && coin(rng));
  OnnxBuilder::attr_ints(c.op("Transpose", {x}), "perm", perm);
  c.note("perm=" + dims_text(perm));
  return c.done();
}

OpCase reshape_case(Rng& rng) {
  CaseBuilder c(rng);
  auto dims = random_dims(rng, 4, 1, 6);
  const int64_t total = dims[0] * dims[1] * dims[2] * dims[3];
  std::vector<int64_t> target = coin(rng) ? std::vector<int64_t>{dims[0], -1} : std::vector<int64_t>{-1, dims[3], 1};
  if (total % (target.size() == 2 ? dims[0] : dims[3]) != 0) target = {total};
  const std::string x = c.data(dims, coin(rng));
  c.ints("shape", target);
  c.op("Reshape", {x, "shape"});
  c.note("to " + dims_text(target));
  return c.done();
}

OpCase resize_case(Rng& rng) {
  CaseBuilder c(rng);
  auto dims = random_dims(rng, 4, 1, 9);
  dims[2] = std::max<int64_t>(dims[2], 2), dims[3] = std::max<int64_t>(dims[3], 2);  // downsampled, not to nothing
  const bool linear = coin(rng);
  // Integer scales (YOLO's upsampling, what the CUDA kernel takes) and, in a third of the cases,
  // another on one dim: 2.1 upsamples 5 to 10 as 2 does, but the source index differs
  // (floor(x / 2.1)); 0.5 and 0.75 downsample.
  float sh = static_cast<float>(pick(rng, 1, 3)), sw = static_cast<float>(pick(rng, 1, 3));
  if (pick(rng, 0, 2) == 0) {
    const float other = std::vector<float>{1.5f, 2.1f, 2.5f, 0.5f, 0.75f}[static_cast<size_t>(pick(rng, 0, 4))];
    (coin(rng) ? sh : sw) = other;
  }
  const std::string x = c.data(dims, coin(rng));
  c.floats("scales", {4}, {1.f, 1.f, sh, sw});
  auto* n = c.op("Resize", {x, "", "scales"});
  OnnxBuilder::attr_string(n, "mode", linear ? "linear" : "nearest");
  const std::string nm = linear ? "" : coin(rng) ? "floor" : "round_prefer_floor";
  if (!linear) OnnxBuilder::attr_string(n, "nearest_mode", nm);
  const std::string ct = std::vector<std::string>{"asymmetric", "asymmetric", "half_pixel", "align_corners"}[static_cast<size_t>(pick(rng, 0, 3))];
  OnnxBuilder::attr_string(n, "coordinate_transformation_mode", ct);
  c.note(std::string(linear ? "linear" : "nearest " + nm) + " " + ct + " x" + std::to_string(sh) + "," + std::to_string(sw));
  return c.done();
}

OpCase pool_case(Rng& rng, const std::string& op) {
  CaseBuilder c(rng);
  auto dims = random_dims(rng, 4, 1, 12);
  dims[1] = pick(rng, 1, 20);
  const int64_t k = pick(rng, 1, std::min<int64_t>(5, std::min(dims[2], dims[3]) + 1)), s = pick(rng, 1, 2);
  const int64_t pad = pick(rng, 0, (k - 1) / 2);
  if (dims[2] + 2 * pad < k) dims[2] = k;
  if (dims[3] + 2 * pad < k) dims[3] = k;
  const std::string x = c.data(dims, coin(rng));
  auto* n = c.op(op, {x});
  OnnxBuilder::attr_ints(n, "kernel_shape", {k, k});
  OnnxBuilder::attr_ints(n, "strides", {s, s});
  OnnxBuilder::attr_ints(n, "pads", {pad, pad, pad, pad});
  if (op == "AveragePool") OnnxBuilder::attr_int(n, "count_include_pad", pick(rng, 0, 1));
  c.note("k=" + std::to_string(k) + " s=" + std::to_string(s) + " p=" + std::to_string(pad));
  return c.done();
}

OpCase global_pool_case(Rng& rng, const std::string& op) {
  CaseBuilder c(rng);
  auto dims = random_dims(rng, 4, 1, 12);
  dims[1] = pick(rng, 1, 20);
  const std::string x = c.data(dims, coin(rng));
  c.op(op, {x});
  return c.done();
}

// Opset 9's Upsample: nearest, integer and other scales on the spatial dims.
OpCase upsample_case(Rng& rng) {
  CaseBuilder c(rng, 9);
  auto dims = random_dims(rng, 4, 1, 8);
  const std::string x = c.data(dims, coin(rng));
  const std::vector<float> choices{1.f, 2.f, 3.f, 1.5f, 2.1f};  // the last two: not integers
  const float sh = choices[static_cast<size_t>(pick(rng, 0, 4))], sw = choices[static_cast<size_t>(pick(rng, 0, 4))];
  c.floats("scales", {4}, {1.f, 1.f, sh, sw});
  OnnxBuilder::attr_string(c.op("Upsample", {x, "scales"}), "mode", "nearest");
  c.note("x" + std::to_string(sh) + "," + std::to_string(sw));
  return c.done();
}

// YOLOv8's DFL as its exports write it (opset 12: softmax over the last axis between transposes;
// 17: over axis 1), which the passes make one BinExpectation node; the reference runs the plain
// graph.
OpCase bin_expectation_case(Rng& rng) {
  const int opset = coin(rng) ? 12 : 17;
  CaseBuilder c(rng, opset);
  const int64_t n = pick(rng, 1, 2), a = pick(rng, 1, 40);
  const std::string x = c.data({n, 64, a}, false, -6.f, 6.f);
  OnnxBuilder& b = c.builder();
  b.initializer_i64("shape4", {4}, {n, 4, 16, a});
  b.initializer_i64("shape3", {3}, {n, 4, a});
  b.random_initializer("w", {1, 16, 1, 1}, -2.f, 3.f);
  const bool bias = coin(rng);
  if (bias) b.random_initializer("b", {1}, -1.f, 1.f);
  b.node("Reshape", {x, "shape4"}, {"r"});
  if (opset < 13) {
    OnnxBuilder::attr_ints(b.node("Transpose", {"r"}, {"t0"}), "perm", {0, 3, 1, 2});
    OnnxBuilder::attr_int(b.node("Softmax", {"t0"}, {"sm"}), "axis", 3);
    OnnxBuilder::attr_ints(b.node("Transpose", {"sm"}, {"t1"}), "perm", {0, 3, 2, 1});
  } else {
    OnnxBuilder::attr_ints(b.node("Transpose", {"r"}, {"t0"}), "perm", {0, 2, 1, 3});
    OnnxBuilder::attr_int(b.node("Softmax", {"t0"}, {"t1"}), "axis", 1);
  }
  if (bias) b.node("Conv", {"t1", "w", "b"}, {"c"});
  else b.node("Conv", {"t1", "w"}, {"c"});
  b.node("Reshape", {"c", "shape3"}, {"y0"});
  b.output("y0");
  c.note("opset " + std::to_string(opset) + (bias ? " bias" : ""));
  return c.done();
}

OpCase softmax_case(Rng& rng) {
  CaseBuilder c(rng);
  const int rank = static_cast<int>(pick(rng, 1, 4));
  auto dims = random_dims(rng, rank, 1, 17);
  const int64_t axis = pick(rng, -rank, rank - 1);
  const std::string x = c.data(dims, false, -8.f, 8.f);
  OnnxBuilder::attr_int(c.op("Softmax", {x}), "axis", axis);
  c.note("axis=" + std::to_string(axis));
  return c.done();
}

OpCase matmul_case(Rng& rng) {
  CaseBuilder c(rng);
  const int64_t m = pick(rng, 1, 12), k = pick(rng, 1, 12), n = pick(rng, 1, 12);
  std::vector<int64_t> a{m, k}, b{k, n};
  if (coin(rng)) {
    const int64_t batch = pick(rng, 1, 3);
    a.insert(a.begin(), batch);
    if (coin(rng)) b.insert(b.begin(), batch);
  }
  const std::string x = c.data(a), y = c.data(b);
  c.op("MatMul", {x, y});
  return c.done();
}

}  // namespace

const std::map<std::string, Generator>& generators() {
  static const std::map<std::string, Generator> g = [] {
    std::map<std::string, Generator> m;
    m["Conv"] = [](Rng& r) { return conv_case(r, false); };
    m["FusedConv"] = [](Rng& r) { return conv_case(r, true); };
    for (const char* op : {"Relu", "Sigmoid", "LeakyRelu", "HardSwish", "HardSigmoid", "Tanh", "Clip", "Neg", "Abs", "Exp", "Identity"})
      m[op] = [op = std::string(op)](Rng& r) { return unary_case(r, op); };
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) m[op] = [op = std::string(op)](Rng& r) { return binary_case(r, op); };
    m["Concat"] = concat_case;
    m["Split"] = split_case;
    m["Slice"] = slice_case;
    m["Transpose"] = transpose_case;
    m["Reshape"] = reshape_case;
    m["Resize"] = resize_case;
    m["MaxPool"] = [](Rng& r) { return pool_case(r, "MaxPool"); };
    m["AveragePool"] = [](Rng& r) { return pool_case(r, "AveragePool"); };
    m["Softmax"] = softmax_case;
    m["GlobalAveragePool"] = [](Rng& r) { return global_pool_case(r, "GlobalAveragePool"); };
    m["GlobalMaxPool"] = [](Rng& r) { return global_pool_case(r, "GlobalMaxPool"); };
    m["Upsample"] = upsample_case;
    m["BinExpectation"] = bin_expectation_case;
    m["MatMul"] = matmul_case;
    return m;
  }();
  return g;
}

CaseRun run_case(const OpCase& c, bool reference, const std::shared_ptr<const Backend>& backend, bool device_fp16) {
  CaseRun r;
  LoadOptions lo;
  lo.optimize = !reference;
  auto model = NativeModel::load_from_bytes(c.model.data(), c.model.size(), ".", lo);
  if (!model) {
    r.error = "load: " + model.error().message;
    return r;
  }
  SessionOptions so;
  so.threads = reference ? 1 : 2;
  so.channels_last = !reference;
  if (backend) so.backends = {backend};
  so.device_fp16 = device_fp16 && !reference;
  auto session = NativeSession::create(*model, so);
  if (!session) {
    r.error = session.error().message;
    return r;
  }
  std::vector<Shape> shapes;
  std::vector<TensorRef> refs;
  for (const auto& t : c.inputs) shapes.push_back(t.shape()), refs.push_back(t.ref());
  auto summary = (*session)->plan_summary(shapes);
  if (!summary) {
    r.error = "plan: " + summary.error().message;
    return r;
  }
  r.summary = *summary;
  auto st = (*session)->run(refs, r.outputs);
  if (!st) r.error = "run: " + st.error().message;
  return r;
}

OpResult check_op(const std::string& backend_name, const std::string& op, const std::shared_ptr<const Backend>& backend,
                  int cases, double atol, double rtol, bool device_fp16) {
  OpResult result;
  result.backend = backend_name;
  result.op = op;
  Rng rng(static_cast<uint32_t>(std::hash<std::string>{}(backend_name + "/" + op) & 0xffffffffu));
  const std::string expected_backend = backend ? backend->name() : "cpu";
  for (int i = 0; i < cases; ++i) {
    const OpCase c = generators().at(op)(rng);
    ++result.cases;
    const std::string where = op + " case " + std::to_string(i) + ": " + c.what + ": ";
    CaseRun ref = run_case(c, true, nullptr);
    if (!ref.error.empty()) {
      result.failure = where + "the reference failed: " + ref.error;
      return result;
    }
    CaseRun got = run_case(c, false, backend, device_fp16);
    if (!got.error.empty()) {
      result.failure = where + "the backend failed: " + got.error;
      return result;
    }
    // The op (or, for FusedConv, what the passes made of the chain) ran on the backend under
    // test, or nowhere (a view of its input, as Reshape is); otherwise this shape or attribute is
    // not the backend's and the CPU ran it.
    for (const auto& b : got.summary.backends)
      if (b.name == expected_backend) result.device_float = b.precision;
    bool elsewhere = false;
    for (const auto& st : got.summary.steps)
      if (!st.copy && st.label.rfind(op + " node", 0) == 0 && st.backend != expected_backend) elsewhere = true;
    if (elsewhere) continue;
    ++result.ran_on_backend;
    if (got.outputs.size() != ref.outputs.size()) {
      result.failure = where + std::to_string(got.outputs.size()) + " outputs, the reference has " + std::to_string(ref.outputs.size());
      return result;
    }
    for (size_t o = 0; o < ref.outputs.size(); ++o) {
      const HostTensor &a = got.outputs[o], &b = ref.outputs[o];
      if (a.shape() != b.shape()) {
        result.failure = where + "output " + std::to_string(o) + " has shape " + a.shape().str() + ", the reference " + b.shape().str();
        return result;
      }
      for (int64_t k = 0; k < a.numel(); ++k) {
        const double x = a.as<float>()[k], y = b.as<float>()[k], err = std::fabs(x - y);
        if (!(err <= atol + rtol * std::fabs(y))) {  // NaN fails
          result.failure = where + "output " + std::to_string(o) + " element " + std::to_string(k) + ": " + std::to_string(x) +
                           " against " + std::to_string(y);
          return result;
        }
        result.max_abs_error = std::max(result.max_abs_error, err);
        result.max_rel_error = std::max(result.max_rel_error, err / std::max(std::fabs(y), 1e-3));
      }
    }
  }
  return result;
}

}  // namespace sd::native::conformance
