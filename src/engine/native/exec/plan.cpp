#include "engine/native/exec/plan.h"

#include "core/human_bytes.h"
#include "core/memory_budget.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "engine/native/layout_attrs.h"
#include "engine/native/passes/passes.h"

namespace sd::native::exec {
namespace {

enum class OpClass { kConv, kPool, kUnary, kBinary, kConcat, kSplit, kSlice, kResize, kAlias, kOther };

OpClass classify(const std::string& op) {
  static const std::set<std::string> unary = {"Sigmoid", "Relu", "LeakyRelu", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs",
                                              "HardSigmoid", "HardSwish", "Clip", "Erf", "Softplus", "Elu", "Identity", "Reciprocal"};
  static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean"};
  if (op == "Conv" || op == "FusedConv") return OpClass::kConv;
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") return OpClass::kPool;
  if (unary.count(op)) return OpClass::kUnary;
  if (binary.count(op)) return OpClass::kBinary;
  if (op == "Concat") return OpClass::kConcat;
  if (op == "Split") return OpClass::kSplit;
  if (op == "Slice") return OpClass::kSlice;
  if (op == "Resize" || op == "Upsample") return OpClass::kResize;
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") return OpClass::kAlias;
  return OpClass::kOther;
}

// Logical NCHW axis -> its position in the physical NHWC order.
constexpr int kToPhysical[4] = {0, 3, 1, 2};
Shape physical_of(const Shape& s) { return Shape{s[0], s[2], s[3], s[1]}; }

Shape pad_to_rank4(const Shape& s) {
  Shape out{1, 1, 1, 1};
  for (int i = 0; i < s.rank; ++i) out[4 - s.rank + i] = s[i];
  return out;
}

// A plain tensor whose bytes are already in NHWC order when seen as [n,c,h,w]: c == 1 or h*w == 1.
bool layout_neutral(const Shape& s) {
  if (s.rank > 4) return false;
  Shape p = pad_to_rank4(s);
  return p[1] == 1 || (p[2] == 1 && p[3] == 1);
}

// Copies a tensor between two backends' memory (one of them the host's), on the stream of the
// backend that is not the host.
class CopyKernel final : public Kernel {
 public:
  CopyKernel(const Backend& backend, Device dst, Device src) : backend_(backend), dst_(dst), src_(src) {}
  Status run(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, const ExecContext& ctx) override {
    return backend_.copy(outputs[0].data, dst_, inputs[0].data, src_, outputs[0].bytes(), ctx.stream);
  }
  std::string implementation() const override { return src_.str() + " -> " + dst_.str(); }

 private:
  const Backend& backend_;
  Device dst_, src_;
};

struct ValueState {
  ValueType logical;
  bool nhwc = false;                      // stored channels-last (4-D only)
  std::shared_ptr<HostTensor> constant;   // known at plan time
  const void* uploaded = nullptr;         // a constant's copy in a device backend's memory
  int home = -1;                          // the backend whose memory holds it (-1: the host's)
  int input = -1;                         // a graph input
  int root = -1;                          // buffer owner (itself, or what it aliases)
  size_t alias_offset = 0;                // bytes into the root's buffer (a Split part)
  int first_step = -1, last_step = -1;    // lifetime in steps
  bool defined = false;
};

class Planner {
 public:
  Planner(const Graph& g, const OpRegistry& r, std::span<const Backend* const> backends, const PlanOptions& options)
      : g_(g), registry_(r), backends_(backends.begin(), backends.end()), states_(g.values.size()),
        channels_last_(options.channels_last), memory_limit_(options.memory_limit_bytes) {}

  Result<std::unique_ptr<Plan>> build(const std::vector<ValueType>& inputs, const std::vector<const HostTensor*>& fixed) {
    plan_ = std::make_unique<Plan>();
    for (size_t b = 0; b < backends_.size(); ++b)
      if (backends_[b] && backends_[b]->device().is_host() && host_ < 0) host_ = static_cast<int>(b);
    if (host_ < 0) return fail(ErrorCode::kInternal, "no host backend to plan the model on");
    plan_->backends = backends_;
    plan_->memory.resize(backends_.size());
    for (const auto& t : inputs) plan_->input_shapes.push_back(t.shape);
    for (size_t v = 0; v < g_.values.size(); ++v) {
      const Value& val = g_.values[v];
      if (val.constant) {
        states_[v].constant = std::make_shared<HostTensor>(*val.constant);
        states_[v].logical = {val.constant->dtype(), val.constant->shape()};
        states_[v].defined = true;
      }
    }
    for (size_t i = 0; i < g_.inputs.size(); ++i) {
      ValueState& s = states_[static_cast<size_t>(g_.inputs[i])];
      s.logical = inputs[i];
      s.defined = true;
      if (i < fixed.size() && fixed[i]) {
        s.constant = std::make_shared<HostTensor>(fixed[i]->clone());
        continue;
      }
      s.input = static_cast<int>(i);
      s.root = g_.inputs[i];
    }
    for (const Node& n : g_.nodes) SD_TRY(plan_node(n));
    for (int o : g_.outputs) {
      SD_ASSIGN_OR_RETURN(int v, as_plain(o));
      SD_ASSIGN_OR_RETURN(v, on_backend(v, host_));  // outputs are handed over in host memory
      ValueState& s = states_[static_cast<size_t>(v)];
      if (s.constant || s.input >= 0) {
        // A constant or an input as an output: copy it through an Identity step into the arena.
        SD_ASSIGN_OR_RETURN(v, copy_to_arena(v));
      }
      plan_->output_types.push_back(states_[static_cast<size_t>(v)].logical);
      output_values_.push_back(v);
    }
    // Every output lives to the end, past the conversion and copy steps that later outputs added.
    for (int v : output_values_) use(v, static_cast<int>(steps_.size()));
    allocate();
    for (size_t i = 0; i < steps_.size(); ++i) {
      Step& st = plan_->steps.emplace_back();
      st.kernel = std::move(steps_[i].kernel);
      st.backend = steps_[i].backend;
      st.copy = steps_[i].copy;
      if (st.copy) ++plan_->copies;
      size_t& scratch = plan_->memory[static_cast<size_t>(st.backend)].scratch_bytes;
      scratch = std::max(scratch, st.kernel->scratch_bytes());
      st.label = steps_[i].label;
      for (size_t k = 0; k < steps_[i].ins.size(); ++k) {
        st.in_bufs.push_back(buffer_of(steps_[i].ins[k]));
        st.in_refs.push_back(TensorRef{steps_[i].in_types[k].dtype, steps_[i].in_types[k].shape, nullptr, device_of(steps_[i].ins[k])});
      }
      for (size_t k = 0; k < steps_[i].outs.size(); ++k) {
        st.out_bufs.push_back(buffer_of(steps_[i].outs[k]));
        st.out_refs.push_back(TensorRef{steps_[i].out_types[k].dtype, steps_[i].out_types[k].shape, nullptr, device_of(steps_[i].outs[k])});
      }
    }
    for (const BackendMemory& m : plan_->memory) plan_->scratch_bytes += m.scratch_bytes;
    for (int v : output_values_) plan_->output_bufs.push_back(buffer_of(v));
    for (auto& s : states_)
      if (s.constant) plan_->keep_alive.push_back(s.constant);
    for (auto& m : made_constants_) plan_->keep_alive.push_back(m);
    return std::move(plan_);
  }

 private:
  struct PendingStep {
    std::unique_ptr<Kernel> kernel;
    std::vector<int> ins, outs;  // value ids (-1: omitted)
    std::vector<ValueType> in_types, out_types;  // physical
    std::string label;
    int backend = 0;
    bool copy = false;
  };

  // A kernel for the node from the first backend that supports it. A backend other than the last
  // that fails to build one leaves the node to the next (the CPU's, last, runs every op).
  struct Placed {
    std::unique_ptr<Kernel> kernel;
    int backend = 0;
  };
  Result<Placed> create_kernel(const OpContext& ctx) {
    Error last{ErrorCode::kModel, ctx.describe() + ": no backend supports it"};
    for (size_t b = 0; b < backends_.size(); ++b) {
      const Backend& backend = *backends_[b];
      if (!backend.supports(ctx)) continue;
      auto kernel = backend.create_kernel(ctx);
      if (kernel) return Placed{std::move(*kernel), static_cast<int>(b)};
      last = kernel.error();
      if (static_cast<int>(b) == host_) break;
    }
    return tl::unexpected(last);
  }
  // The backend that would run the node (its layout preferences shape the plan around it).
  const Backend& preferred_backend(const OpContext& ctx) const {
    for (const Backend* b : backends_)
      if (b->supports(ctx)) return *b;
    return *backends_[static_cast<size_t>(host_)];
  }

  Device device_of(int v) const { return v < 0 ? Device{} : backends_[static_cast<size_t>(home_of(v))]->device(); }

  int home_of(int v) const {
    const ValueState& s = states_[static_cast<size_t>(v)];
    if (s.home >= 0) return s.home;
    return host_;
  }

  // The value in the memory of backend `b`: itself, or a copy made by a step (cached, so that
  // every reader on `b` shares one), or a constant uploaded now.
  Result<int> on_backend(int v, int b) {
    if (v < 0 || home_of(v) == b) return v;
    if (auto it = moved_.find({v, b}); it != moved_.end()) return it->second;
    const ValueState src = states_[static_cast<size_t>(v)];
    const Backend& to = *backends_[static_cast<size_t>(b)];
    const int from = home_of(v);
    if (from != host_ && b != host_) {  // between two devices: through the host
      SD_ASSIGN_OR_RETURN(int h, on_backend(v, host_));
      SD_ASSIGN_OR_RETURN(int nv, on_backend(h, b));
      moved_[{v, b}] = nv;
      return nv;
    }
    int nv = new_value(src.logical, src.nhwc);
    states_[static_cast<size_t>(nv)].home = b;
    if (src.constant && b != host_) {
      const size_t bytes = src.constant->bytes();
      SD_ASSIGN_OR_RETURN(DeviceBuffer buf, to.allocate(std::max<size_t>(bytes, 1)));
      SD_TRY(to.copy(buf.data(), to.device(), src.constant->data(), Device{}, bytes, nullptr));
      states_[static_cast<size_t>(nv)].uploaded = buf.data();
      states_[static_cast<size_t>(nv)].root = -1;
      plan_->device_constants.push_back(std::move(buf));
    } else {
      // The device side's backend does the copy, on its stream.
      const Backend& device_side = b == host_ ? *backends_[static_cast<size_t>(from)] : to;
      auto kernel = std::make_unique<CopyKernel>(device_side, backends_[static_cast<size_t>(b)]->device(),
                                                 backends_[static_cast<size_t>(from)]->device());
      const int side = b == host_ ? from : b;
      ValueType t = physical_type(v);
      push_step(std::move(kernel), side, true, {v}, {t}, {nv}, {t}, "copy to " + to.name(), b);
    }
    moved_[{v, b}] = nv;
    return nv;
  }

  ValueType physical_type(int v) const {
    const ValueState& s = states_[static_cast<size_t>(v)];
    return s.nhwc ? ValueType{s.logical.dtype, physical_of(s.logical.shape)} : s.logical;
  }

  int new_value(const ValueType& t, bool nhwc) {
    ValueState s;
    s.logical = t;
    s.nhwc = nhwc;
    s.defined = true;
    states_.push_back(s);
    int id = static_cast<int>(states_.size() - 1);
    states_[static_cast<size_t>(id)].root = id;
    return id;
  }

  void use(int v, int step) {
    if (v < 0) return;
    ValueState& s = states_[static_cast<size_t>(states_[static_cast<size_t>(v)].root >= 0 ? states_[static_cast<size_t>(v)].root : v)];
    s.last_step = std::max(s.last_step, step);
  }

  // A step on the backend that made its kernel: inputs held elsewhere are copied there first.
  Status add_step(Placed placed, std::vector<int> ins, std::vector<ValueType> in_types, std::vector<int> outs,
                  std::vector<ValueType> out_types, std::string label) {
    for (int& v : ins) {
      SD_ASSIGN_OR_RETURN(v, on_backend(v, placed.backend));
    }
    push_step(std::move(placed.kernel), placed.backend, false, std::move(ins), std::move(in_types), std::move(outs),
              std::move(out_types), std::move(label));
    return ok();
  }

  // The outputs live in the memory of `out_home` (-1: the step's backend; a copy's destination).
  void push_step(std::unique_ptr<Kernel> k, int backend, bool copy, std::vector<int> ins, std::vector<ValueType> in_types,
                 std::vector<int> outs, std::vector<ValueType> out_types, std::string label, int out_home = -1) {
    const int idx = static_cast<int>(steps_.size());
    for (int v : ins) use(v, idx);
    for (int v : outs)
      if (v >= 0) {
        ValueState& s = states_[static_cast<size_t>(v)];
        s.root = v;
        s.home = out_home >= 0 ? out_home : backend;
        s.first_step = idx;
        s.last_step = std::max(s.last_step, idx);
      }
    steps_.push_back(PendingStep{std::move(k), std::move(ins), std::move(outs), std::move(in_types), std::move(out_types),
                                 std::move(label), backend, copy});
  }

  // A transpose step between layouts (or a constant converted now). A layout-neutral tensor
  // (one channel, or 1x1 spatial) has the same bytes in both: it becomes an alias instead.
  Result<int> convert(int v, bool to_nhwc) {
    auto& cache = to_nhwc ? nhwc_copy_ : plain_copy_;
    if (auto it = cache.find(v); it != cache.end()) return it->second;
    const ValueState src = states_[static_cast<size_t>(v)];
    if (src.logical.shape.rank == 4 && layout_neutral(src.logical.shape) && !src.constant) {
      int nv = new_value(src.logical, to_nhwc);
      ValueState& a = states_[static_cast<size_t>(nv)];
      a.input = src.input;
      a.root = src.root >= 0 ? src.root : v;
      a.alias_offset = src.alias_offset;
      a.home = home_of(v);
      a.uploaded = src.uploaded;
      cache[v] = nv;
      return nv;
    }
    Node t;
    t.op_type = "Transpose";
    t.name = "layout conversion";
    Attribute perm;
    perm.kind = Attribute::Kind::kInts;
    perm.ints = to_nhwc ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 3, 1, 2};
    t.attrs.set("perm", perm);
    ValueType in_t = physical_type(v);
    ValueType out_t{src.logical.dtype, to_nhwc ? physical_of(src.logical.shape) : src.logical.shape};
    const OpSchema* schema = registry_.find("Transpose", g_.opset);
    std::vector<ValueType> ins{in_t}, outs{out_t};
    std::vector<const HostTensor*> consts{src.constant.get()};
    OpContext ctx{t, g_.opset, ins, consts, outs};
    int nv = new_value(src.logical, to_nhwc);
    if (src.constant) {  // converted now, on the host
      SD_ASSIGN_OR_RETURN(auto kernel, schema->create(ctx));
      auto c = std::make_shared<HostTensor>(out_t.dtype, out_t.shape);
      TensorRef in_ref = src.constant->ref(), out_ref = c->ref();
      SD_TRY(run_once(*kernel, std::span<const TensorRef>(&in_ref, 1), std::span<const TensorRef>(&out_ref, 1)));
      states_[static_cast<size_t>(nv)].constant = c;
    } else {
      SD_ASSIGN_OR_RETURN(auto placed, create_kernel(ctx));
      SD_TRY(add_step(std::move(placed), {v}, {in_t}, {nv}, {out_t}, "layout conversion"));
    }
    cache[v] = nv;
    return nv;
  }

  Result<int> as_plain(int v) {
    if (v < 0 || !states_[static_cast<size_t>(v)].nhwc) return v;
    return convert(v, false);
  }

  Result<int> copy_to_arena(int v) {
    const ValueState src = states_[static_cast<size_t>(v)];
    Node t;
    t.op_type = "Identity";
    t.name = "output copy";
    std::vector<ValueType> ins{src.logical}, outs{src.logical};
    std::vector<const HostTensor*> consts{nullptr};
    OpContext ctx{t, g_.opset, ins, consts, outs};
    // On the host: the output is handed over from there.
    SD_ASSIGN_OR_RETURN(auto kernel, backends_[static_cast<size_t>(host_)]->create_kernel(ctx));
    int nv = new_value(src.logical, false);
    SD_TRY(add_step(Placed{std::move(kernel), host_}, {v}, ins, {nv}, outs, "output copy"));
    return nv;
  }

  Status plan_node(const Node& original) {
    const std::string what = g_.describe(original);
    const OpSchema* schema = registry_.find(original.op_type, g_.opset);
    if (!schema) return fail(ErrorCode::kModel, what + ": not supported by the native engine");
    SD_TRY(check_arity(*schema, original, what));
    // Every output the kernel writes gets a buffer, also those the model omits or leaves out.
    filled_.push_back(std::make_unique<Node>(original));
    const Node& n = *filled_.back();
    for (int in : n.inputs)
      if (in >= 0 && !states_[static_cast<size_t>(in)].defined) return fail(ErrorCode::kModel, what + ": an input is not defined");

    // Logical shape inference.
    std::vector<ValueType> lin;
    std::vector<const HostTensor*> lconst;
    bool all_const = true;
    for (int in : n.inputs) {
      if (in < 0) {
        lin.push_back({});
        lconst.push_back(nullptr);
        continue;
      }
      const ValueState& s = states_[static_cast<size_t>(in)];
      lin.push_back(s.logical);
      // A constant stored NHWC is not what the logical kernels expect; they never see it here
      // because constants are only converted for a physical step.
      lconst.push_back(s.constant.get());
      if (!s.constant) all_const = false;
    }
    OpContext lctx{n, g_.opset, lin, lconst, {}};
    auto out_types = schema->infer(lctx);
    if (!out_types) return fail(out_types.error().code, out_types.error().message);
    SD_TRY(check_output_types(*out_types, what));
    if (memory_limit_ != 0 && total_bytes(*out_types) > memory_limit_)
      return fail(ErrorCode::kModel, what + ": its outputs need " + human_bytes(total_bytes(*out_types)) + ", " +
                                         *over_budget(total_bytes(*out_types), memory_limit_));
    if (out_types->size() < n.outputs.size()) out_types->resize(n.outputs.size());
    {
      Node& fill = *filled_.back();
      fill.outputs.resize(out_types->size(), -1);
      for (size_t k = 0; k < fill.outputs.size(); ++k)
        if (fill.outputs[k] < 0) fill.outputs[k] = new_value((*out_types)[k], false);
    }

    const OpClass cls = classify(n.op_type);
    const bool shape_only = n.op_type == "Shape" || n.op_type == "Size";
    if (shape_only || all_outputs_empty(*out_types)) return fold(n, *schema, lin, lconst, *out_types);
    if (all_const) {
      const size_t bytes = total_bytes(*out_types);
      if (bytes <= kFoldNodeLimitBytes && folded_bytes_ + bytes <= kFoldTotalBudgetBytes) {
        folded_bytes_ += bytes;
        return fold(n, *schema, lin, lconst, *out_types);
      }
      // Too large to keep as a constant: computed by a step on every run like any other node.
    }

    if (n.op_type == "Split" && try_split_alias(n, *out_types)) return ok();
    switch (cls) {
      case OpClass::kConv:
      case OpClass::kPool: return plan_conv_like(n, lin, lconst, *out_types, cls);
      case OpClass::kUnary:
      case OpClass::kBinary:
      case OpClass::kConcat:
      case OpClass::kSplit:
      case OpClass::kSlice:
      case OpClass::kResize: return plan_layout_aware(n, *schema, lin, lconst, *out_types, cls);
      case OpClass::kAlias: return plan_alias(n, *out_types);
      case OpClass::kOther: break;
    }
    return plan_plain(n, *schema, *out_types);
  }

  Status fold(const Node& n, const OpSchema& schema, const std::vector<ValueType>& lin, const std::vector<const HostTensor*>& lconst,
              const std::vector<ValueType>& out_types) {
    std::vector<ValueType> ins = lin;
    std::vector<const HostTensor*> consts = lconst;
    std::vector<std::shared_ptr<HostTensor>> plain_inputs;
    std::vector<TensorRef> in_refs, out_refs;
    for (size_t k = 0; k < n.inputs.size(); ++k) in_refs.push_back(consts[k] ? consts[k]->ref() : TensorRef{});
    std::vector<std::shared_ptr<HostTensor>> outs;
    for (const auto& t : out_types) {
      outs.push_back(std::make_shared<HostTensor>(t.dtype, t.shape));
      out_refs.push_back(outs.back()->ref());
    }
    if (!all_outputs_empty(out_types)) {  // empty outputs: constants with nothing in them, no kernel
      OpContext ctx{n, g_.opset, ins, consts, out_types};
      SD_ASSIGN_OR_RETURN(auto kernel, schema.create(ctx));
      SD_TRY(run_once(*kernel, in_refs, out_refs));
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      int o = n.outputs[k];
      if (o < 0) continue;
      ValueState& s = states_[static_cast<size_t>(o)];
      s.logical = out_types[k];
      s.constant = outs[k];
      s.defined = true;
    }
    return ok();
  }

  void define_outputs(const Node& n, const std::vector<ValueType>& out_types, bool nhwc) {
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      int o = n.outputs[k];
      if (o < 0) continue;
      ValueState& s = states_[static_cast<size_t>(o)];
      s.logical = out_types[k];
      s.nhwc = nhwc && out_types[k].shape.rank == 4;
      s.defined = true;
      s.root = o;
    }
  }

  // Inputs of a step as physical types and (possibly converted) constants.
  Status gather(const std::vector<int>& ids, std::vector<ValueType>& types, std::vector<const HostTensor*>& consts) {
    for (int v : ids) {
      if (v < 0) {
        types.push_back({});
        consts.push_back(nullptr);
      } else {
        types.push_back(physical_type(v));
        consts.push_back(states_[static_cast<size_t>(v)].constant.get());
      }
    }
    return ok();
  }

  Status plan_plain(const Node& n, const OpSchema& schema, const std::vector<ValueType>& out_types) {
    std::vector<int> ins;
    for (int in : n.inputs) {
      SD_ASSIGN_OR_RETURN(int v, as_plain(in));
      ins.push_back(v);
    }
    std::vector<ValueType> types;
    std::vector<const HostTensor*> consts;
    SD_TRY(gather(ins, types, consts));
    OpContext ctx{n, g_.opset, types, consts, out_types};
    SD_ASSIGN_OR_RETURN(auto placed, create_kernel(ctx));
    define_outputs(n, out_types, false);
    return add_step(std::move(placed), ins, types, n.outputs, out_types, g_.describe(n));
  }

  // A plain Split whose axis has nothing but ones before it cuts its input into contiguous parts:
  // the outputs alias the input at offsets, no copy.
  bool try_split_alias(const Node& n, const std::vector<ValueType>& out_types) {
    const int in = n.inputs[0];
    const ValueState& src = states_[static_cast<size_t>(in)];
    if (src.nhwc || src.constant || src.input >= 0) return false;
    const Shape& s = src.logical.shape;
    int64_t axis = n.attrs.get_int("axis", 0);
    if (axis < 0) axis += s.rank;
    if (axis < 0 || axis >= s.rank) return false;
    for (int d = 0; d < axis; ++d)
      if (s[d] != 1) return false;
    size_t offset = 0;
    const size_t es = dtype_size(src.logical.dtype);
    for (size_t k = 0; k < n.outputs.size() && k < out_types.size(); ++k) {
      ValueState& o = states_[static_cast<size_t>(n.outputs[k])];
      o.logical = out_types[k];
      o.defined = true;
      o.root = src.root >= 0 ? src.root : in;
      o.home = home_of(in);
      o.alias_offset = src.alias_offset + offset;
      offset += static_cast<size_t>(out_types[k].shape.numel()) * es;
    }
    use(in, static_cast<int>(steps_.size()));
    return true;
  }

  Status plan_alias(const Node& n, const std::vector<ValueType>& out_types) {
    SD_ASSIGN_OR_RETURN(int in, as_plain(n.inputs[0]));
    int o = n.outputs[0];
    ValueState& src = states_[static_cast<size_t>(in)];
    ValueState& s = states_[static_cast<size_t>(o)];
    s.logical = out_types[0];
    s.defined = true;
    if (src.constant) {
      s.constant = std::make_shared<HostTensor>(src.constant->reshaped(out_types[0].shape));
      return ok();
    }
    if (src.input >= 0) s.input = src.input;
    s.root = src.root >= 0 ? src.root : in;
    s.home = home_of(in);
    s.uploaded = src.uploaded;
    s.alias_offset = src.alias_offset;
    use(in, static_cast<int>(steps_.size()));
    return ok();
  }

  // Convolutions and pooling: the backend that runs them decides the layout around them.
  Status plan_conv_like(const Node& n, const std::vector<ValueType>& lin, const std::vector<const HostTensor*>& lconst,
                        const std::vector<ValueType>& out_types, OpClass cls) {
    Node copy = n;
    std::vector<int> ins = n.inputs;
    const OpContext lctx{n, g_.opset, lin, lconst, out_types};
    const Backend& backend = preferred_backend(lctx);
    const bool conv_nhwc = channels_last_ && backend.preferred_layout() == Layout::kNhwc;
    // Fast channels-last convolutions want it on both sides (oneDNN, given a plain NCHW source
    // and an NHWC destination, falls back to its slow reference kernel): convert the source once,
    // unless the backend reads it as it is (an image into the CPU's stem kernel).
    const bool plain_source = cls == OpClass::kConv && backend.conv_reads_plain_source(lctx);
    if (conv_nhwc && cls == OpClass::kConv && !plain_source && !states_[static_cast<size_t>(ins[0])].nhwc) {
      SD_ASSIGN_OR_RETURN(ins[0], convert(ins[0], true));
    }
    const int x = ins[0];
    const bool src_nhwc = states_[static_cast<size_t>(x)].nhwc;
    const bool dst_nhwc = cls == OpClass::kConv ? conv_nhwc : src_nhwc;
    Attribute a;
    a.kind = Attribute::Kind::kInt;
    a.i = src_nhwc;
    copy.attrs.set(kSrcNhwc, a);
    a.i = dst_nhwc;
    copy.attrs.set(kDstNhwc, a);
    if (cls == OpClass::kConv && ins.size() > 3 && ins[3] >= 0) {
      // Fused before shapes were known, the sum operand broadcasts: an Add of its own after all.
      if (states_[static_cast<size_t>(ins[3])].logical.shape != out_types[0].shape) return plan_split_sum(n);
      // The sum operand must be in the destination's layout.
      if (states_[static_cast<size_t>(ins[3])].nhwc != dst_nhwc) {
        SD_ASSIGN_OR_RETURN(ins[3], convert(ins[3], dst_nhwc));
      }
    }
    OpContext ctx{copy, g_.opset, lin, lconst, out_types};
    SD_ASSIGN_OR_RETURN(auto placed, create_kernel(ctx));
    define_outputs(n, out_types, dst_nhwc);
    std::vector<ValueType> types;
    std::vector<const HostTensor*> consts;
    SD_TRY(gather(ins, types, consts));
    std::vector<ValueType> phys_out;
    for (int o : n.outputs) phys_out.push_back(o >= 0 ? physical_type(o) : ValueType{});
    return add_step(std::move(placed), ins, types, n.outputs, phys_out, g_.describe(n));
  }

  Status plan_split_sum(const Node& fused) {
    auto fresh = [this] { return new_value(ValueType{}, false); };
    auto scalar = [this](float v) {
      auto t = std::make_shared<HostTensor>(DType::kFloat32, Shape{});
      *t->as<float>() = v;
      const int id = new_value(ValueType{t->dtype(), t->shape()}, false);
      states_[static_cast<size_t>(id)].constant = t;
      states_[static_cast<size_t>(id)].root = -1;
      return id;
    };
    for (const Node& part : passes::split_fused_sum(fused, g_.opset, fresh, scalar)) SD_TRY(plan_node(part));
    return ok();
  }

  Status plan_layout_aware(const Node& n, const OpSchema& schema, const std::vector<ValueType>& lin,
                           const std::vector<const HostTensor*>& lconst, const std::vector<ValueType>& out_types, OpClass cls) {
    // Channels-last only when a 4-D data input already is, and every output is 4-D.
    const int data_inputs = cls == OpClass::kUnary || cls == OpClass::kSplit || cls == OpClass::kSlice || cls == OpClass::kResize
                                ? 1 : static_cast<int>(n.inputs.size());
    bool any_nhwc = false;
    for (int k = 0; k < data_inputs; ++k) {
      int v = n.inputs[static_cast<size_t>(k)];
      if (v >= 0 && states_[static_cast<size_t>(v)].nhwc) any_nhwc = true;
    }
    for (const auto& t : out_types)
      if (t.shape.rank != 4) any_nhwc = false;
    // The linear Resize kernel interpolates the last two dims only: channels-last would put W and
    // C there.
    if (cls == OpClass::kResize && n.attrs.get_string("mode", "nearest") != "nearest") any_nhwc = false;
    // An operand of lower rank broadcasts against the trailing logical dims; unless it is
    // layout-neutral (per-channel or a scalar, seen in NHWC order below) it has no NHWC form.
    if (cls == OpClass::kBinary)
      for (int k = 0; k < data_inputs; ++k) {
        const int v = n.inputs[static_cast<size_t>(k)];
        if (v < 0) continue;
        const Shape& s = states_[static_cast<size_t>(v)].logical.shape;
        if (s.rank != 4 && !layout_neutral(s)) any_nhwc = false;
      }
    if (!any_nhwc) return plan_plain(n, schema, out_types);
    (void)lin;
    (void)lconst;

    Node copy = n;
    std::vector<int> ins = n.inputs;
    std::vector<ValueType> types;
    std::vector<const HostTensor*> consts;
    std::vector<std::shared_ptr<HostTensor>> made;  // remapped constant inputs

    auto remap_axis_attr = [&](const char* name, int64_t def) -> Status {
      int64_t ax = n.attrs.get_int(name, def);
      if (ax < 0) ax += 4;
      if (ax < 0 || ax > 3) return fail(ErrorCode::kModel, g_.describe(n) + ": axis out of range");
      Attribute a;
      a.kind = Attribute::Kind::kInt;
      a.i = kToPhysical[ax];
      copy.attrs.set(name, a);
      return ok();
    };

    if (cls == OpClass::kUnary || cls == OpClass::kBinary || cls == OpClass::kConcat) {
      for (int k = 0; k < data_inputs; ++k) {
        int v = ins[static_cast<size_t>(k)];
        if (v < 0) continue;
        ValueState& s = states_[static_cast<size_t>(v)];
        if (s.nhwc) continue;
        if (cls != OpClass::kConcat && layout_neutral(s.logical.shape)) continue;  // viewed as NHWC below
        SD_ASSIGN_OR_RETURN(ins[static_cast<size_t>(k)], convert(v, true));
      }
      if (cls == OpClass::kConcat) SD_TRY(remap_axis_attr("axis", 0));
      SD_TRY(gather(ins, types, consts));
      for (int k = 0; k < data_inputs; ++k) {
        int v = ins[static_cast<size_t>(k)];
        if (v < 0 || states_[static_cast<size_t>(v)].nhwc) continue;
        // Layout-neutral plain tensor: the same bytes seen with NHWC dims.
        types[static_cast<size_t>(k)].shape = physical_of(pad_to_rank4(states_[static_cast<size_t>(v)].logical.shape));
      }
    } else if (cls == OpClass::kSplit) {
      SD_TRY(remap_axis_attr("axis", 0));
      SD_TRY(gather(ins, types, consts));
    } else if (cls == OpClass::kSlice) {
      SD_TRY(gather(ins, types, consts));
      if (g_.opset < 10) {
        auto axes = n.attrs.get_ints("axes");
        if (axes.empty())
          for (size_t i = 0; i < n.attrs.get_ints("starts").size(); ++i) axes.push_back(static_cast<int64_t>(i));
        for (auto& a : axes) a = kToPhysical[a < 0 ? a + 4 : a];
        Attribute at;
        at.kind = Attribute::Kind::kInts;
        at.ints = axes;
        copy.attrs.set("axes", at);
      } else {
        std::vector<int64_t> axes;
        if (ins.size() > 3 && ins[3] >= 0) {
          if (!consts[3]) return plan_plain(n, schema, out_types);
          axes = consts[3]->to_int64_vector();
        } else {
          if (!consts[1]) return plan_plain(n, schema, out_types);
          for (int64_t i = 0; i < consts[1]->numel(); ++i) axes.push_back(i);
        }
        auto t = std::make_shared<HostTensor>(DType::kInt64, Shape{static_cast<int64_t>(axes.size())});
        for (size_t i = 0; i < axes.size(); ++i) {
          int64_t a = axes[i] < 0 ? axes[i] + 4 : axes[i];
          if (a < 0 || a > 3) return fail(ErrorCode::kModel, g_.describe(n) + ": axis out of range");
          t->as<int64_t>()[i] = kToPhysical[a];
        }
        made.push_back(t);
        while (types.size() < 4) types.push_back({}), consts.push_back(nullptr);
        types[3] = {DType::kInt64, t->shape()};
        consts[3] = t.get();
      }
    } else if (cls == OpClass::kResize) {
      SD_TRY(gather(ins, types, consts));
      // scales / sizes are per logical dim: permute them to the physical order.
      for (size_t k = 1; k < consts.size(); ++k) {
        if (!consts[k] || consts[k]->numel() != 4) continue;
        auto t = std::make_shared<HostTensor>(consts[k]->clone());
        const size_t es = dtype_size(t->dtype());
        const auto* src = static_cast<const unsigned char*>(consts[k]->data());
        auto* dst = static_cast<unsigned char*>(t->data());
        for (int d = 0; d < 4; ++d) std::memcpy(dst + static_cast<size_t>(kToPhysical[d]) * es, src + static_cast<size_t>(d) * es, es);
        made.push_back(t);
        consts[k] = t.get();
      }
    }
    std::vector<ValueType> phys_out;
    for (const auto& t : out_types) phys_out.push_back({t.dtype, physical_of(t.shape)});
    OpContext ctx{copy, g_.opset, types, consts, phys_out};
    SD_ASSIGN_OR_RETURN(auto placed, create_kernel(ctx));
    for (auto& m : made) made_constants_.push_back(m);
    define_outputs(n, out_types, true);
    return add_step(std::move(placed), ins, types, n.outputs, phys_out, g_.describe(n));
  }

  // Greedy offsets: the largest tensors first, each at the lowest offset that does not overlap
  // a placed tensor alive at the same time.
  // One arena per backend, each placed on its own.
  void allocate() {
    struct Item { int v; size_t size; int first, last; size_t offset; };
    std::vector<std::vector<Item>> items(backends_.size());
    for (size_t v = 0; v < states_.size(); ++v) {
      const ValueState& s = states_[v];
      if (!s.defined || s.constant || s.uploaded || s.input >= 0 || s.root != static_cast<int>(v) || s.first_step < 0) continue;
      ValueType t = s.logical;
      size_t bytes = static_cast<size_t>(std::max<int64_t>(t.shape.numel(), 0)) * dtype_size(t.dtype);
      bytes = (bytes + 63) / 64 * 64;
      items[static_cast<size_t>(home_of(static_cast<int>(v)))].push_back({static_cast<int>(v), bytes, s.first_step, s.last_step, 0});
      plan_->total_intermediate_bytes += bytes;
    }
    for (size_t b = 0; b < items.size(); ++b) {
      std::sort(items[b].begin(), items[b].end(), [](const Item& x, const Item& y) { return x.size > y.size; });
      std::vector<const Item*> placed;
      size_t arena = 0;
      for (Item& it : items[b]) {
        std::vector<std::pair<size_t, size_t>> busy;
        for (const Item* p : placed)
          if (!(p->last < it.first || it.last < p->first)) busy.push_back({p->offset, p->offset + p->size});
        std::sort(busy.begin(), busy.end());
        size_t offset = 0;
        for (auto [begin, end] : busy) {
          if (offset + it.size <= begin) break;
          offset = std::max(offset, end);
        }
        it.offset = offset;
        arena = std::max(arena, offset + it.size);
        placed.push_back(&it);
        offsets_[it.v] = offset;
      }
      plan_->memory[b].arena_bytes = arena;
      plan_->arena_bytes += arena;
    }
  }

  BufferRef buffer_of(int v) const {
    BufferRef b;
    if (v < 0) return b;
    const ValueState& s = states_[static_cast<size_t>(v)];
    if (s.uploaded) {
      b.kind = BufferRef::Kind::kConstant;
      b.constant = static_cast<const unsigned char*>(s.uploaded) + s.alias_offset;
      return b;
    }
    if (s.constant) {
      b.kind = BufferRef::Kind::kConstant;
      b.constant = s.constant->data();
      return b;
    }
    if (s.input >= 0) {
      b.kind = BufferRef::Kind::kInput;
      b.input = s.input;
      return b;
    }
    b.kind = BufferRef::Kind::kArena;
    int root = s.root >= 0 ? s.root : v;
    const ValueState& r = states_[static_cast<size_t>(root)];
    if (r.input >= 0) {
      b.kind = BufferRef::Kind::kInput;
      b.input = r.input;
      return b;
    }
    auto it = offsets_.find(root);
    b.backend = home_of(root);
    b.offset = (it == offsets_.end() ? 0 : it->second) + s.alias_offset;
    return b;
  }

  const Graph& g_;
  const OpRegistry& registry_;
  std::vector<const Backend*> backends_;
  int host_ = -1;  // index of the host's backend in backends_
  std::map<std::pair<int, int>, int> moved_;  // (value, backend) -> its copy there
  std::vector<ValueState> states_;
  std::vector<PendingStep> steps_;
  std::unique_ptr<Plan> plan_;
  std::map<int, int> nhwc_copy_, plain_copy_;
  std::map<int, size_t> offsets_;
  std::vector<int> output_values_;
  std::vector<std::shared_ptr<HostTensor>> made_constants_;
  size_t folded_bytes_ = 0;  // constants this plan folded (bounded by kFoldTotalBudgetBytes)
  std::vector<std::unique_ptr<Node>> filled_;  // nodes as planned (kernels may keep references)
  bool channels_last_ = true;
  size_t memory_limit_ = 0;  // 0: none
};

}  // namespace

Result<std::unique_ptr<Plan>> build_plan(const Graph& g, const std::vector<ValueType>& inputs, const OpRegistry& registry,
                                         std::span<const Backend* const> backends,
                                         const std::vector<const HostTensor*>& fixed_inputs, const PlanOptions& options) {
  Planner p(g, registry, backends, options);
  try {
    return p.build(inputs, fixed_inputs);
  } catch (const std::exception& e) {  // a library refusing (bad_alloc, length_error): an error, not a crash
    return fail(ErrorCode::kModel, std::string("planning the model failed: ") + e.what());
  }
}

std::vector<bool> plan_time_inputs(const Graph& g) {
  static const std::map<std::string, std::vector<size_t>> slots = {
      {"Reshape", {1}}, {"Resize", {1, 2, 3}}, {"Upsample", {1}}, {"ReduceSum", {1}}, {"ReduceMax", {1}}, {"ReduceMin", {1}},
      {"ReduceMean", {1}}, {"ReduceProd", {1}}, {"ReduceL2", {1}}, {"ReduceSumSquare", {1}}, {"Slice", {1, 2, 3, 4}},
      {"Unsqueeze", {1}}, {"Squeeze", {1}}, {"Split", {1}}, {"TopK", {1}}, {"Pad", {1, 3}}, {"ConstantOfShape", {0}},
      {"Tile", {1}}, {"Expand", {1}}, {"Range", {0, 1, 2}}, {"Conv", {1, 2}}, {"FusedConv", {1, 2}}, {"Dropout", {1, 2}}};
  std::vector<bool> fixed(g.inputs.size(), false);
  for (const Node& n : g.nodes) {
    auto it = slots.find(n.op_type);
    if (it == slots.end()) continue;
    for (size_t k : it->second) {
      if (k >= n.inputs.size() || n.inputs[k] < 0) continue;
      for (size_t i = 0; i < g.inputs.size(); ++i)
        if (g.inputs[i] == n.inputs[k]) fixed[i] = true;
    }
  }
  return fixed;
}

}  // namespace sd::native::exec
