// The planner's Concat in place (planner.h): a Concat's inputs written by their producers straight
// into its output, so that the Concat copies only what is left, or has no step at all.
//
// Two cases, both in CPU-only plans and only where PlanOptions::concat_in_place is on:
//  - Contiguous parts: a Concat whose output has nothing but ones before its axis (YOLOv8's last
//    Concats of the head at batch 1: boxes and class scores, [1,4,8400] and [1,80,8400] on
//    axis 1) holds each input as one block of bytes. Any input that owns its buffer (or is a
//    Reshape-like alias of a whole buffer) moves into it: the producer writes there, whatever
//    it is, and other readers read the same bytes there. No kernel changes.
//  - Channels of a channels-last Concat (the int8 plan's C2f, SPPF and PAN Concats): each input
//    is a column of the output's rows. An elementwise int8 kernel (Int8Table, Int8AddTables, a
//    per-tensor QuantizeLinear: the requantizations to the Concat's scale that a QDQ model puts
//    in front of every Concat) writes its rows that far apart (kDstPixelStride) when nothing but
//    the Concat reads its output; its kernel is made again with the stride.
// The copying plan (concat_in_place off) is the reference: tests/concat_in_place_test.cpp
// compares them bit for bit.
#include <algorithm>

#include "engine/native/exec/planner.h"
#include "engine/native/conv_choice.h"
#include "engine/native/layout_attrs.h"
#include "engine/native/precision.h"

namespace sd::native::exec {

void Planner::count_readers() {
  readers_.assign(g_.values.size(), 0);
  for (const Node& n : g_.nodes) {
    // Shape and Size read no data: plan_node folds them from the planned shapes (YOLOv8's head
    // takes the Reshape targets from a Shape of the scale-0 Concat, which then had two readers
    // and was copied into the head's rows instead of converted there).
    if (n.op_type == "Shape" || n.op_type == "Size") continue;
    for (int in : n.inputs)
      if (in >= 0) ++readers_[static_cast<size_t>(in)];
  }
  for (int o : g_.outputs)
    if (o >= 0) ++readers_[static_cast<size_t>(o)];
}

void Planner::record_strided_producer(const Node& planned, const std::vector<ValueType>& types,
                                      const std::vector<const HostTensor*>& consts, const std::vector<ValueType>& out_types) {
  if (!concat_in_place_ || planned.outputs.size() != 1 || out_types.size() != 1 || steps_.empty()) return;
  const int v = planned.outputs[0];
  if (v < 0 || static_cast<size_t>(v) >= readers_.size() || readers_[static_cast<size_t>(v)] != 1) return;
  const bool elementwise = planned.op_type == "Int8Table" || planned.op_type == "Int8AddTables" ||
                           (planned.op_type == "QuantizeLinear" && !types.empty() && types[0].dtype == DType::kFloat32);
  // A nearest upsampling (the neck's, beside a backbone output in a Concat): rows copied anyway.
  const bool nearest = planned.op_type == "Resize" && planned.attrs.get_string("mode", "nearest") == "nearest";
  if ((!elementwise && !nearest) || steps_.back().backend != host_ || out_types[0].shape.rank != 4) return;
  if (elementwise)
    for (const auto& t : types)
      if (t.shape.rank != 0 && t.shape.numel() != 1 && t.shape != out_types[0].shape) return;  // broadcasts: dense only
  filled_.push_back(std::make_unique<Node>(planned));
  strided_producers_[v] = ProducerRecord{static_cast<int>(steps_.size()) - 1, -1, out_types[0].shape[3], kDstPixelStride,
                                         filled_.back().get(), types, out_types, consts};
}

void Planner::record_conv_producer(const Node& planned, const std::vector<ValueType>& lin, const std::vector<const HostTensor*>& lconst,
                                   const std::vector<ValueType>& out_types) {
  if (!concat_in_place_ || planned.outputs.size() != 1 || out_types.size() != 1 || steps_.empty()) return;
  const int v = planned.outputs[0];
  if (v < 0 || static_cast<size_t>(v) >= readers_.size() || readers_[static_cast<size_t>(v)] != 1) return;
  const bool bf16 = out_types[0].dtype == DType::kBFloat16;
  if ((planned.op_type != "Conv" && planned.op_type != "FusedConv") || steps_.back().backend != host_ ||
      planned.attrs.get_int(kDstNhwc, 0) == 0 || (out_types[0].dtype != DType::kFloat32 && !bf16) || out_types[0].shape.rank != 4)
    return;
  // Our Winograd (its output transform stores each pixel where it is told) or our 1x1 kernel (its
  // epilogue does); the kernel the step has (timed when it was made) is named so that the kernel
  // made again is the same. Under --precision bf16: a bf16 result from a kernel that writes bf16
  // itself (the AVX-512 Winograd variants, our bf16 1x1 kernel on a bf16 source), and the
  // Winograd's GEMM named too (kWinoGemmChoice).
  const std::string impl = steps_.back().kernel->implementation();
  const bool wino = impl.rfind("streamdet:wino_", 0) == 0, pointwise = impl.rfind("streamdet:pointwise:", 0) == 0;
  if (!wino && !pointwise) return;
  const bool bf16_compute = planned.attrs.get_int(kBf16Compute, 0) != 0;
  if (pointwise && impl.find("bf16") != std::string::npos && impl.find("on bf16") == std::string::npos) return;  // converts its source
  if (bf16 && !(wino ? impl.find(":avx512") != std::string::npos : impl.find("avx512_bf16") != std::string::npos)) return;
  if (!bf16_compute && impl.find("bf16") != std::string::npos) return;
  Node strided = planned;
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = static_cast<int64_t>(pointwise                                  ? Conv3x3Choice::kPointwise
                             : impl.find("wino_6x3") != std::string::npos ? Conv3x3Choice::kWinograd6x6
                                                                           : Conv3x3Choice::kWinograd);
  strided.attrs.set(kConv3x3Choice, a);
  if (wino && bf16_compute) {
    a.i = impl.find("avx512_bf16") != std::string::npos ? 1 : 0;
    strided.attrs.set(kWinoGemmChoice, a);
  }
  filled_.push_back(std::make_unique<Node>(std::move(strided)));
  strided_producers_[v] = ProducerRecord{static_cast<int>(steps_.size()) - 1, -1, out_types[0].shape[1], kDstPixelStride,
                                         filled_.back().get(), lin, out_types, lconst};
}

void Planner::record_row_producer(int out, int source, const Node& planned, const ValueType& in, const ValueType& out_type) {
  if (!concat_in_place_ || steps_.empty() || steps_.back().backend != host_ || dtype_size(out_type.dtype) != 4 || out_type.shape.rank != 4) return;
  filled_.push_back(std::make_unique<Node>(planned));
  ProducerRecord rec{static_cast<int>(steps_.size()) - 1, source, out_type.shape[2] * out_type.shape[3], kDstRowStride,
                     filled_.back().get(), {in}, {out_type}, {nullptr}};
  strided_producers_[out] = std::move(rec);
}

bool Planner::reads_strided(const Node& n, size_t k) {
  if (n.op_type == "Int8Table") return k == 0;
  if (n.op_type == "Int8AddTables") return k <= 2;
  if (n.op_type == "Concat") return true;
  return (n.op_type == "Conv" || n.op_type == "FusedConv") && (k == 0 || k == 3);
}

Result<int> Planner::dense_copy(int v) {
  if (auto it = dense_copy_.find(v); it != dense_copy_.end()) return it->second;
  const ValueState src = states_[static_cast<size_t>(v)];
  // A Concat of one input, read strided: a copy of its rows.
  Node copy;
  copy.op_type = "Concat";
  copy.name = "dense copy";
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = 3;
  copy.attrs.set("axis", a);
  Attribute s;
  s.kind = Attribute::Kind::kInts;
  s.ints = {src.pixel_stride};
  copy.attrs.set(kSrcPixelStrides, s);
  filled_.push_back(std::make_unique<Node>(std::move(copy)));
  const ValueType t = physical_type(v);
  const std::vector<ValueType> ins{t}, outs{t};
  const std::vector<const HostTensor*> consts{nullptr};
  OpContext ctx{*filled_.back(), g_.opset, ins, consts, outs};
  SD_ASSIGN_OR_RETURN(auto placed, create_kernel(ctx));
  const int nv = new_value(src.logical, true);
  SD_TRY(add_step(std::move(placed), {v}, ins, {nv}, outs, "dense copy"));
  dense_copy_[v] = nv;
  return nv;
}

Status Planner::dense_copies(std::vector<int>& ins) {
  for (int& v : ins)
    if (v >= 0 && states_[static_cast<size_t>(v)].pixel_stride != 0) {
      SD_ASSIGN_OR_RETURN(v, dense_copy(v));
    }
  return ok();
}

bool Planner::try_split_views(const Node& n, const std::vector<int>& ins, const std::vector<ValueType>& types,
                              const std::vector<ValueType>& out_types, int64_t axis) {
  if (!concat_in_place_ || ins.empty() || ins[0] < 0 || types.empty() || types[0].shape.rank != 4 || axis != 3) return false;
  const bool bytes = dtype_size(types[0].dtype) == 1;
  if (!bytes && types[0].dtype != DType::kFloat32 && types[0].dtype != DType::kBFloat16) return false;
  for (const Backend* b : backends_)
    if (!b->device().is_host()) return false;
  const ValueState& src = states_[static_cast<size_t>(ins[0])];
  if (src.constant || src.uploaded || src.input >= 0 || src.root < 0 || home_of(ins[0]) != host_) return false;
  // Bytes: every reader of every output an Int8Table or Int8AddTables (which read it strided).
  // Float32 or bf16: a Concat or a convolution reads some part strided, and any other reader a
  // dense copy of its part (plan_node), never more bytes copied than the Split's. No graph output
  // either way.
  bool any_strided = false;
  for (int o : n.outputs) {
    if (o < 0 || static_cast<size_t>(o) >= readers_.size()) return false;
    int nodes = 0;
    for (const Node& r : g_.nodes)
      for (size_t k = 0; k < r.inputs.size(); ++k)
        if (r.inputs[k] == o) {
          const bool strided = reads_strided(r, k) && (r.op_type.rfind("Int8", 0) == 0) == bytes;
          if (bytes && !strided) return false;
          any_strided = any_strided || strided;
          ++nodes;
        }
    if (nodes == 0 || nodes != readers_[static_cast<size_t>(o)]) return false;
  }
  if (!any_strided) return false;
  int64_t stride = src.pixel_stride != 0 ? src.pixel_stride : types[0].shape[3];
  if (!bytes && src.pixel_stride == 0 && src.root == ins[0])
    if (const int64_t wide = preplace_in_concat(n, ins[0], out_types); wide != 0) stride = wide;
  size_t offset = src.alias_offset;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    ValueState& o = states_[static_cast<size_t>(n.outputs[k])];
    o.logical = out_types[k];
    o.nhwc = true;
    o.defined = true;
    o.root = src.root;
    o.home = host_;
    o.alias_offset = offset;
    o.pixel_stride = stride;
    offset += static_cast<size_t>(out_types[k].shape[1]) * dtype_size(types[0].dtype);  // logical NCHW: channels
  }
  use(ins[0], static_cast<int>(steps_.size()));
  return true;
}

int64_t Planner::preplace_in_concat(const Node& split, int root, const std::vector<ValueType>& out_types) {
  // The producer: the step just made, a convolution that writes rows strided (recorded), read by
  // this Split alone.
  if (static_cast<size_t>(root) >= readers_.size() || readers_[static_cast<size_t>(root)] != 1) return 0;
  auto rec_it = strided_producers_.find(root);
  if (rec_it == strided_producers_.end() || rec_it->second.source >= 0 || rec_it->second.step != static_cast<int>(steps_.size()) - 1 ||
      (rec_it->second.node->op_type != "Conv" && rec_it->second.node->op_type != "FusedConv"))
    return 0;
  // The Concat along the channels that reads the Split's parts as consecutive inputs, in order.
  const Node* cat = nullptr;
  size_t first = 0;
  for (const Node& r : g_.nodes) {
    if (r.op_type != "Concat" || r.outputs.size() != 1 || r.outputs[0] < 0) continue;
    int64_t axis = r.attrs.get_int("axis", 0);
    if (axis < 0) axis += 4;
    if (axis != 1) continue;
    for (size_t k = 0; k + split.outputs.size() <= r.inputs.size(); ++k) {
      bool all = true;
      for (size_t j = 0; j < split.outputs.size() && all; ++j) all = r.inputs[k + j] == split.outputs[j];
      if (all) {
        cat = &r;
        first = k;
        break;
      }
    }
    if (cat) break;
  }
  if (!cat) return 0;
  // Its width, from what is known before it is planned: the parts, values planned already, and
  // convolutions' outputs (their weights' first dimension) planned later.
  auto channels_of = [&](int v) -> int64_t {
    if (v < 0) return -1;
    for (size_t j = 0; j < split.outputs.size(); ++j)
      if (split.outputs[j] == v) return out_types[j].shape.rank == 4 ? out_types[j].shape[1] : -1;
    const ValueState& s = states_[static_cast<size_t>(v)];
    if (s.defined) return s.logical.shape.rank == 4 && !s.constant && s.logical.dtype == out_types[0].dtype ? s.logical.shape[1] : -1;
    for (const Node& p : g_.nodes)
      for (int o : p.outputs)
        if (o == v) {
          if ((p.op_type != "Conv" && p.op_type != "FusedConv") || p.outputs.size() != 1 || p.inputs.size() < 2 || p.inputs[1] < 0) return -1;
          const ValueState& w = states_[static_cast<size_t>(p.inputs[1])];
          return w.constant && w.logical.shape.rank == 4 ? w.logical.shape[0] : -1;
        }
    return -1;
  };
  int64_t width = 0, before = 0;
  for (size_t k = 0; k < cat->inputs.size(); ++k) {
    const int64_t c = channels_of(cat->inputs[k]);
    if (c <= 0) return 0;
    if (k < first) before += c;
    width += c;
  }
  // The producer's kernel made again with rows that wide (refused: the parts stay in its own buffer).
  const ProducerRecord& rec = rec_it->second;
  Node strided = *rec.node;
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = width;
  strided.attrs.set(rec.stride_attr, a);
  filled_.push_back(std::make_unique<Node>(std::move(strided)));
  OpContext ctx{*filled_.back(), g_.opset, rec.types, rec.consts, rec.out_types};
  auto kernel = backends_[static_cast<size_t>(host_)]->create_kernel(ctx);
  if (!kernel) return 0;
  steps_[static_cast<size_t>(rec.step)].kernel = std::move(*kernel);
  strided_producers_.erase(rec_it);
  preplaced_[root] = Preplaced{cat->outputs[0], static_cast<size_t>(before) * dtype_size(out_types[0].dtype)};
  return width;
}

void Planner::reroot(int r, int out, size_t offset) {
  const ValueState old = states_[static_cast<size_t>(r)];
  for (ValueState& w : states_)
    if (w.root == r) {
      w.root = out;
      w.alias_offset += offset;
      w.home = host_;
    }
  ValueState& o = states_[static_cast<size_t>(out)];
  if (old.first_step >= 0) o.first_step = o.first_step < 0 ? old.first_step : std::min(o.first_step, old.first_step);
  o.last_step = std::max(o.last_step, old.last_step);
}

const Node* Planner::sole_reader(int v, size_t& input) const {
  if (v < 0 || static_cast<size_t>(v) >= readers_.size() || readers_[static_cast<size_t>(v)] != 1) return nullptr;
  for (const Node& n : g_.nodes)
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (n.inputs[k] == v) {
        input = k;
        return &n;
      }
  return nullptr;  // read by a graph output alone
}

int Planner::parts_reader(int v, const ValueType& t) const {
  if (!concat_in_place_ || host_ < 0) return 0;
  for (const Backend* b : backends_)
    if (!b->device().is_host()) return 0;
  size_t input = 0;
  const Node* reader = sole_reader(v, input);  // reading it as its source
  if (!reader || input != 0 || (reader->op_type != "Conv" && reader->op_type != "FusedConv")) return 0;
  std::vector<ValueType> rin;
  std::vector<const HostTensor*> rconst;
  for (size_t k = 0; k < reader->inputs.size(); ++k) {
    const int r = reader->inputs[k];
    rin.push_back(k == 0 ? t : r >= 0 ? states_[static_cast<size_t>(r)].logical : ValueType{});
    rconst.push_back(k > 0 && r >= 0 ? states_[static_cast<size_t>(r)].constant.get() : nullptr);
  }
  return backends_[static_cast<size_t>(host_)]->conv_source_parts(OpContext{*reader, g_.opset, rin, rconst, {}});
}

Result<bool> Planner::concat_read_in_parts(const Node& planned, const std::vector<int>& ins, const std::vector<ValueType>& types,
                                           const std::vector<ValueType>& logical_out, bool nhwc) {
  const int o = planned.outputs.size() == 1 ? planned.outputs[0] : -1;
  const DType t = logical_out[0].dtype;
  bool can = nhwc && o >= 0 && planned.attrs.get_int("axis", 0) == 3 && ins.size() >= 2 && (t == DType::kFloat32 || t == DType::kBFloat16) &&
             static_cast<size_t>(parts_reader(o, logical_out[0])) >= ins.size();
  // Its inputs: channels-last tensors of its type on the host (bf16: an even number of channels
  // each, as the bf16 kernel reads pairs), none made for this Concat's rows.
  for (size_t k = 0; k < ins.size() && can; ++k) {
    const int v = ins[k];
    if (v < 0 || types[k].dtype != t || types[k].shape.rank != 4 || (t == DType::kBFloat16 && types[k].shape[3] % 2 != 0)) {
      can = false;
      break;
    }
    const ValueState& s = states_[static_cast<size_t>(v)];
    can = s.nhwc && !s.constant && !s.uploaded && home_of(v) == host_ && !preplaced_.count(s.root);
  }
  if (can) {
    define_outputs(planned, logical_out, nhwc);
    read_in_parts_[o] = ins;
    return true;
  }
  for (int v : ins)  // planned as a copy after all: the upsampled views among its inputs made first
    if (upsampled_.count(v)) SD_TRY(materialize_upsampled(v));
  return false;
}

bool Planner::upsample_as_view(const Node& n, const std::vector<ValueType>& lin, const std::vector<const HostTensor*>& lconst,
                               const std::vector<ValueType>& out_types) {
  if (no_views_ || n.op_type != "Resize" || n.inputs.empty() || n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs[0] < 0) return false;
  // Nearest, output pixel (y, x) from input pixel (y / 2, x / 2): asymmetric with floor or
  // round_prefer_floor, or half_pixel with round_prefer_floor (y / 2 - 1/4 rounded).
  const std::string ctm = n.attrs.get_string("coordinate_transformation_mode", "half_pixel");
  const std::string rounding = n.attrs.get_string("nearest_mode", "round_prefer_floor");
  if (n.attrs.get_string("mode", "nearest") != "nearest" || !n.attrs.get_ints("axes").empty() ||
      !((ctm == "asymmetric" && (rounding == "floor" || rounding == "round_prefer_floor")) ||
        (ctm == "half_pixel" && rounding == "round_prefer_floor")))
    return false;
  const int x = n.inputs[0], o = n.outputs[0];
  const ValueState& s = states_[static_cast<size_t>(x)];
  const Shape& in = s.logical.shape;
  const Shape& out = out_types[0].shape;
  if (!s.nhwc || s.constant || s.uploaded || s.pixel_stride != 0 || home_of(x) != host_ || s.logical.dtype != out_types[0].dtype ||
      (s.logical.dtype != DType::kFloat32 && s.logical.dtype != DType::kBFloat16) ||
      in.rank != 4 || out.rank != 4 || out[0] != in[0] || out[1] != in[1] || out[2] != 2 * in[2] || out[3] != 2 * in[3])
    return false;
  // Its one reader a Concat along the channels that a convolution reads in parts.
  size_t input = 0;
  const Node* cat = sole_reader(o, input);
  if (!cat || cat->op_type != "Concat" || cat->outputs.size() != 1) return false;
  const int64_t axis = cat->attrs.get_int("axis", 0);
  if (axis != 1 && axis != -3) return false;
  Shape cs = out;
  cs[1] = 0;
  for (int v : cat->inputs) {
    if (v < 0 || v >= static_cast<int>(states_.size())) return false;
    cs[1] += v == o ? out[1] : states_[static_cast<size_t>(v)].logical.shape.rank == 4 ? states_[static_cast<size_t>(v)].logical.shape[1] : 0;
  }
  if (static_cast<size_t>(parts_reader(cat->outputs[0], ValueType{out_types[0].dtype, cs})) < cat->inputs.size()) return false;
  define_outputs(n, out_types, true);
  upsampled_[o] = Upsampled{&n, lin, out_types, lconst};
  return true;
}

Status Planner::materialize_upsampled(int v) {
  const auto it = upsampled_.find(v);
  if (it == upsampled_.end()) return ok();
  const Upsampled u = it->second;
  upsampled_.erase(it);
  const OpSchema* schema = registry_.find(u.node->op_type, g_.opset);
  if (!schema) return fail(ErrorCode::kInternal, g_.describe(*u.node) + ": no schema");
  no_views_ = true;
  const Status st = plan_layout_aware(*u.node, *schema, u.lin, u.lconst, u.out_types, OpClass::kResize);
  no_views_ = false;
  return st;
}

Status Planner::plan_concat(const Node& planned, const std::vector<int>& ins, const std::vector<ValueType>& types,
                            const std::vector<const HostTensor*>& consts, const std::vector<ValueType>& logical_out,
                            const std::vector<ValueType>& out_types, bool nhwc) {
  SD_ASSIGN_OR_RETURN(const bool in_parts, concat_read_in_parts(planned, ins, types, logical_out, nhwc));
  if (in_parts) return ok();
  const ValueType& out = out_types[0];
  std::vector<int64_t> in_place(ins.size(), 0);
  struct Move {
    int root;
    size_t offset;
  };
  std::vector<Move> moves;
  // Inputs whose buffer was made for this Concat's rows (preplace_in_concat): in place, whatever else.
  for (size_t k = 0; k < ins.size(); ++k) {
    const int v = ins[k];
    if (v < 0 || preplaced_.empty()) continue;
    const int r = states_[static_cast<size_t>(v)].root;
    const auto it = preplaced_.find(r);
    if (it == preplaced_.end()) continue;
    if (planned.outputs.size() != 1 || it->second.concat_output != planned.outputs[0])
      return fail(ErrorCode::kInternal, g_.describe(planned) + ": reads a part of a buffer made for another Concat");
    in_place[k] = 1;
    if (std::none_of(moves.begin(), moves.end(), [&](const Move& m) { return m.root == r; })) moves.push_back({r, it->second.offset});
  }
  bool cpu_only = concat_in_place_ && host_ >= 0 && planned.outputs.size() == 1 && planned.outputs[0] >= 0;
  for (const Backend* b : backends_)
    if (!b->device().is_host()) cpu_only = false;
  int64_t axis = planned.attrs.get_int("axis", 0);
  if (axis < 0) axis += out.shape.rank;
  if (cpu_only && axis >= 0 && axis < out.shape.rank) {
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= out.shape[d];
    for (int d = static_cast<int>(axis) + 1; d < out.shape.rank; ++d) inner *= out.shape[d];
    const size_t es = dtype_size(out.dtype);
    const bool contiguous = outer == 1;
    // Rows of the last axis, each input's a stretch of the output's rows (a channels-last Concat's
    // channels, or the head's Concat over the scales' anchors).
    const bool rows = !contiguous && inner == 1 && axis == out.shape.rank - 1;
    // Each buffer can be in one place only: an input whose root another input shares stays a copy.
    auto root_of = [&](int v) { return v < 0 ? -1 : states_[static_cast<size_t>(v)].root; };
    auto shared_root = [&](size_t k) {
      for (size_t j = 0; j < ins.size(); ++j)
        if (j != k && ins[j] >= 0 && root_of(ins[j]) == root_of(ins[k])) return true;
      return false;
    };
    size_t offset = 0;  // bytes into a row (channels) or into the output (contiguous)
    for (size_t k = 0; k < ins.size(); ++k) {
      const int v = ins[k];
      if (in_place[k]) {  // preplaced
        offset += contiguous ? static_cast<size_t>(std::max<int64_t>(types[k].shape.numel(), 0)) * es
                             : (types[k].shape.rank > 0 ? static_cast<size_t>(types[k].shape[types[k].shape.rank - 1]) * es : 0);
        continue;
      }
      const size_t part = static_cast<size_t>(std::max<int64_t>(types[k].shape.numel(), 0)) * es;
      const size_t row = types[k].shape.rank > 0 ? static_cast<size_t>(types[k].shape[types[k].shape.rank - 1]) * es : 0;  // bytes
      const size_t here = offset;
      offset += contiguous ? part : row;
      if (v < 0 || part == 0 || shared_root(k)) continue;
      const ValueState& s = states_[static_cast<size_t>(v)];
      const int r = s.root;
      if (r < 0 || s.constant || s.uploaded || s.input >= 0 || types[k].dtype != out.dtype) continue;
      const ValueState& rs = states_[static_cast<size_t>(r)];
      if (rs.constant || rs.uploaded || rs.input >= 0 || rs.first_step < 0 || home_of(r) != host_) continue;
      if (contiguous) {
        // The input must be the whole of its buffer (not a Split's part of it).
        const size_t whole = static_cast<size_t>(std::max<int64_t>(stored_type(rs.logical, host_).shape.numel(), 0)) * es;
        if (s.alias_offset != 0 || whole != part) continue;
        in_place[k] = 1;
        moves.push_back({r, here});
        continue;
      }
      if (!rows) continue;
      auto it = strided_producers_.find(r);
      if (it == strided_producers_.end()) continue;
      const ProducerRecord& rec = it->second;
      const int64_t row_len = types[k].shape[types[k].shape.rank - 1];
      if (rec.row != row_len) continue;
      if (rec.source < 0) {
        // An elementwise kernel or a convolution: its own output (readers checked when recorded).
        if (r != v) continue;
      } else {
        // A layout conversion to [N,C,H,W]: rows of H*W, read through a Reshape to [N,C,H*W] (or
        // itself where H is 1) and by nothing else; what it converts read by that one node alone.
        const size_t whole = static_cast<size_t>(std::max<int64_t>(rec.out_types[0].shape.numel(), 0)) * es;
        if (s.alias_offset != 0 || whole != part) continue;
        if (rec.source >= static_cast<int>(readers_.size()) || readers_[static_cast<size_t>(rec.source)] != 1) continue;
        if (v != r && (v >= static_cast<int>(readers_.size()) || readers_[static_cast<size_t>(v)] != 1)) continue;
        bool others = false;
        for (size_t w = 0; w < states_.size(); ++w)
          if (states_[w].root == r && static_cast<int>(w) != r && static_cast<int>(w) != v) others = true;
        if (others) continue;
      }
      Node strided = *rec.node;
      Attribute a;
      a.kind = Attribute::Kind::kInt;
      a.i = out.shape[axis];
      strided.attrs.set(rec.stride_attr, a);
      filled_.push_back(std::make_unique<Node>(std::move(strided)));
      OpContext ctx{*filled_.back(), g_.opset, rec.types, rec.consts, rec.out_types};
      auto kernel = backends_[static_cast<size_t>(host_)]->create_kernel(ctx);
      if (!kernel) continue;  // planned as before: the Concat copies this input
      steps_[static_cast<size_t>(rec.step)].kernel = std::move(*kernel);
      if (rec.source >= 0) plain_copy_.erase(rec.source);  // a later reader converts again
      strided_producers_.erase(it);
      in_place[k] = 1;
      moves.push_back({r, here});
    }
  }
  const int o = planned.outputs[0];
  const size_t in_place_count = static_cast<size_t>(std::count(in_place.begin(), in_place.end(), 1));
  if (!moves.empty() && in_place_count == ins.size()) {
    // Every input is in place: no step. The output lives from its first producer on.
    define_outputs(planned, logical_out, nhwc);
    states_[static_cast<size_t>(o)].home = host_;
    for (const Move& m : moves) reroot(m.root, o, m.offset), preplaced_.erase(m.root);
    return ok();
  }
  Node copy = planned;
  if (!moves.empty()) {
    Attribute a;
    a.kind = Attribute::Kind::kInts;
    a.ints = in_place;
    copy.attrs.set(kInPlaceInputs, a);
  }
  filled_.push_back(std::make_unique<Node>(std::move(copy)));
  OpContext ctx{*filled_.back(), g_.opset, types, consts, out_types};
  SD_ASSIGN_OR_RETURN(auto placed, create_kernel(ctx));
  define_outputs(planned, logical_out, nhwc);
  SD_TRY(add_step(std::move(placed), ins, types, planned.outputs, out_types, g_.describe(planned)));
  for (const Move& m : moves) reroot(m.root, o, m.offset), preplaced_.erase(m.root);
  // A copy of every input along the channels: if its only reader converts it to NCHW, one pass
  // can do both (concat_as_planes).
  if (cpu_only && nhwc && moves.empty() && axis == 3 && out.shape.rank == 4 && dtype_size(out.dtype) == 4 &&
      std::all_of(ins.begin(), ins.end(), [&](int v) {
        return v >= 0 && states_[static_cast<size_t>(v)].pixel_stride == 0 && !states_[static_cast<size_t>(v)].constant;
      }))
    channel_concats_[o] = static_cast<int>(steps_.size()) - 1;
  return ok();
}

int Planner::concat_as_planes(int v) {
  const auto it = channel_concats_.find(v);
  if (it == channel_concats_.end() || static_cast<size_t>(v) >= readers_.size() || readers_[static_cast<size_t>(v)] != 1) return -1;
  const int step = it->second;
  channel_concats_.erase(it);
  const ValueState s = states_[static_cast<size_t>(v)];
  if (s.root != v || s.input >= 0 || s.constant || steps_[static_cast<size_t>(step)].outs != std::vector<int>{v}) return -1;
  for (size_t w = 0; w < states_.size(); ++w)
    if (states_[w].root == v && static_cast<int>(w) != v) return -1;  // something else lives in its bytes
  Node planes;
  planes.op_type = "ConcatPlanes";
  planes.name = "layout conversion";
  filled_.push_back(std::make_unique<Node>(std::move(planes)));
  const std::vector<ValueType> ins = steps_[static_cast<size_t>(step)].in_types, outs{ValueType{s.logical.dtype, s.logical.shape}};
  const std::vector<const HostTensor*> consts(ins.size(), nullptr);
  OpContext ctx{*filled_.back(), g_.opset, ins, consts, outs};
  auto kernel = backends_[static_cast<size_t>(host_)]->create_kernel(ctx);
  if (!kernel) return -1;  // planned as before: the Concat, then a conversion
  const int nv = new_value(s.logical, false);
  PendingStep& st = steps_[static_cast<size_t>(step)];
  st.kernel = std::move(*kernel);
  st.outs = {nv};
  st.out_types = outs;
  st.label = "layout conversion of " + st.label;
  ValueState& ns = states_[static_cast<size_t>(nv)];
  ns.home = host_;
  ns.first_step = step;
  ns.last_step = std::max(ns.last_step, step);
  states_[static_cast<size_t>(v)].first_step = -1;  // never written: no buffer
  strided_producers_[nv] = ProducerRecord{step, v, outs[0].shape[2] * outs[0].shape[3], kDstRowStride, filled_.back().get(), ins, outs, consts};
  return nv;
}

}  // namespace sd::native::exec
