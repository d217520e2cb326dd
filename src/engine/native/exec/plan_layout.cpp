// The planner's layouts (planner.h): 4-D activations kept channels-last (NHWC) between
// convolutions where the backend prefers it, the conversions between the layouts, and the
// layout-neutral ops (elementwise, Concat, Split, Slice, Resize) run on the physical layout with
// their axes and constant inputs remapped.
#include <algorithm>
#include <cstring>

#include "engine/native/exec/planner.h"
#include "engine/native/layout_attrs.h"

namespace sd::native::exec {
namespace {

// Logical NCHW axis -> its position in the physical NHWC order.
constexpr int kToPhysical[4] = {0, 3, 1, 2};

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

}  // namespace

Result<int> Planner::convert(int v, bool to_nhwc) {
  auto& cache = to_nhwc ? nhwc_copy_ : plain_copy_;
  if (auto it = cache.find(v); it != cache.end()) return it->second;
  if (states_[static_cast<size_t>(v)].pixel_stride != 0) {  // a Split's part left in its input: converted from a dense copy
    SD_ASSIGN_OR_RETURN(const int dense, dense_copy(v));
    return convert(dense, to_nhwc);
  }
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
  if (!to_nhwc && concat_in_place_)
    if (const int planes = concat_as_planes(v); planes >= 0) {
      cache[v] = planes;
      return planes;
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
    if (!to_nhwc) record_row_producer(nv, v, t, in_t, out_t);
  }
  cache[v] = nv;
  return nv;
}

Result<int> Planner::as_plain(int v) {
  if (v < 0 || !states_[static_cast<size_t>(v)].nhwc) return v;
  return convert(v, false);
}

Status Planner::plan_conv_like(const Node& n, const std::vector<ValueType>& lin, const std::vector<const HostTensor*>& lconst,
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
  // Its source a Concat with no step (concat_read_in_parts): read from the Concat's inputs, part 0
  // as input 0 and the others after input 3, their channels and pixel strides in kSrcParts.
  const auto parts = cls == OpClass::kConv ? read_in_parts_.find(ins[0]) : read_in_parts_.end();
  const bool in_parts = parts != read_in_parts_.end();
  if (in_parts) {
    if (!conv_nhwc) return fail(ErrorCode::kInternal, g_.describe(n) + ": a source in parts for a convolution not channels-last");
    Attribute at;
    at.kind = Attribute::Kind::kInts;
    std::vector<int> sources;  // an upsampled view (upsample_as_view) is read from the Resize's input
    for (int v : parts->second) {
      const auto up = upsampled_.find(v);
      const int src = up != upsampled_.end() ? up->second.node->inputs[0] : v;
      const int64_t c = physical_type(src).shape[3], stride = states_[static_cast<size_t>(src)].pixel_stride;
      at.ints.push_back(c);
      at.ints.push_back(stride != 0 ? stride : c);
      at.ints.push_back(src != v ? 2 : 1);
      sources.push_back(src);
    }
    copy.attrs.set(kSrcParts, at);
    ins[0] = sources[0];
    if (ins.size() < 4) ins.resize(4, -1);
    ins.insert(ins.end(), sources.begin() + 1, sources.end());
  }
  const bool src_nhwc = states_[static_cast<size_t>(ins[0])].nhwc;
  const bool dst_nhwc = cls == OpClass::kConv ? conv_nhwc : src_nhwc;
  // A Split's part read strided (try_split_views): a channels-last float convolution may (our
  // Winograd); anything else reads a dense copy (channels-last like the part: the layouts above hold).
  auto strided = [&](size_t k) {
    return k < ins.size() && ins[k] >= 0 && !(in_parts && k == 0) && states_[static_cast<size_t>(ins[k])].pixel_stride != 0;
  };
  if ((strided(0) || strided(3)) && (cls != OpClass::kConv || !dst_nhwc || !src_nhwc)) SD_TRY(dense_copies(ins));
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = src_nhwc;
  copy.attrs.set(kSrcNhwc, a);
  a.i = dst_nhwc;
  copy.attrs.set(kDstNhwc, a);
  a.i = threads_;
  copy.attrs.set(kPlanThreads, a);
  if (cls == OpClass::kConv && ins.size() > 3 && ins[3] >= 0) {
    // Fused before shapes were known, the sum operand broadcasts: an Add of its own after all.
    if (states_[static_cast<size_t>(ins[3])].logical.shape != out_types[0].shape) return plan_split_sum(n);
    // The sum operand must be in the destination's layout.
    if (states_[static_cast<size_t>(ins[3])].nhwc != dst_nhwc) {
      SD_ASSIGN_OR_RETURN(ins[3], convert(ins[3], dst_nhwc));
    }
  }
  if (strided(0) || strided(3)) {
    a.i = strided(0) ? states_[static_cast<size_t>(ins[0])].pixel_stride : 0;
    copy.attrs.set(kSrcPixelStride, a);
    a.i = strided(3) ? states_[static_cast<size_t>(ins[3])].pixel_stride : 0;
    copy.attrs.set(kSumPixelStride, a);
  }
  OpContext ctx{copy, g_.opset, lin, lconst, out_types};
  auto made = create_kernel(ctx);
  if (!made && in_parts) return fail(ErrorCode::kInternal, g_.describe(n) + ": no kernel reads its source in parts: " + made.error().message);
  if (!made && (strided(0) || strided(3))) {  // no kernel reads it strided here: a dense copy
    SD_TRY(dense_copies(ins));
    a.i = 0;
    copy.attrs.set(kSrcPixelStride, a);
    copy.attrs.set(kSumPixelStride, a);
    made = create_kernel(ctx);
  }
  if (!made) return tl::unexpected(made.error());
  auto placed = std::move(*made);
  define_outputs(n, out_types, dst_nhwc);
  std::vector<ValueType> types;
  std::vector<const HostTensor*> consts;
  SD_TRY(gather(ins, types, consts));
  std::vector<ValueType> phys_out;
  for (int o : n.outputs) phys_out.push_back(o >= 0 ? physical_type(o) : ValueType{});
  SD_TRY(add_step(std::move(placed), ins, types, n.outputs, phys_out, g_.describe(n)));
  // A Concat planned later may have it write into its output (plan_concat.cpp).
  if (cls == OpClass::kConv) record_conv_producer(copy, lin, lconst, out_types);
  return ok();
}

Status Planner::plan_layout_aware(const Node& n, const OpSchema& schema, const std::vector<ValueType>& lin,
                                  const std::vector<const HostTensor*>& lconst, const std::vector<ValueType>& out_types, OpClass cls) {
  // A nearest 2x upsampling that the convolution after its Concat reads where it stands (plan_concat.cpp).
  if (cls == OpClass::kResize && upsample_as_view(n, lin, lconst, out_types)) return ok();
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
  if (!any_nhwc && quantizes_for_int8_convs(n, lin, lconst, out_types)) return plan_quantize_to_nhwc(n, out_types);
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
    // A Split's part left in its input is read strided along the channels only.
    if (cls == OpClass::kConcat && copy.attrs.get_int("axis", 0) != 3) SD_TRY(dense_copies(ins));
    SD_TRY(gather(ins, types, consts));
    // A Split's part left in its input (plan_concat.cpp): the table, the Concat or Int8AddTables
    // reads it strided.
    if (n.op_type == "Int8Table" && ins[0] >= 0 && states_[static_cast<size_t>(ins[0])].pixel_stride != 0) {
      Attribute a;
      a.kind = Attribute::Kind::kInt;
      a.i = states_[static_cast<size_t>(ins[0])].pixel_stride;
      copy.attrs.set(kSrcPixelStride, a);
    }
    if (cls == OpClass::kConcat || n.op_type == "Int8AddTables") {
      Attribute a;
      a.kind = Attribute::Kind::kInts;
      bool any = false;
      for (int v : ins) {
        const int64_t s = v >= 0 ? states_[static_cast<size_t>(v)].pixel_stride : 0;
        a.ints.push_back(s);
        any = any || s != 0;
      }
      if (any) copy.attrs.set(kSrcPixelStrides, a);
    }
    for (int k = 0; k < data_inputs; ++k) {
      int v = ins[static_cast<size_t>(k)];
      if (v < 0 || states_[static_cast<size_t>(v)].nhwc) continue;
      // Layout-neutral plain tensor: the same bytes seen with NHWC dims.
      types[static_cast<size_t>(k)].shape = physical_of(pad_to_rank4(states_[static_cast<size_t>(v)].logical.shape));
    }
  } else if (cls == OpClass::kSplit) {
    SD_TRY(remap_axis_attr("axis", 0));
    SD_TRY(gather(ins, types, consts));
    if (try_split_views(n, ins, types, out_types, copy.attrs.get_int("axis", 0))) return ok();  // plan_concat.cpp
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
  if (cls == OpClass::kConcat) return plan_concat(copy, ins, types, consts, out_types, phys_out, true);
  OpContext ctx{copy, g_.opset, types, consts, phys_out};
  auto kernel = create_kernel(ctx);
  if (!kernel && !copy.attrs.get_ints(kSrcPixelStrides).empty()) {  // not read strided here (broadcasts): dense copies
    SD_TRY(dense_copies(ins));
    Attribute none;
    none.kind = Attribute::Kind::kInts;
    none.ints.assign(ins.size(), 0);
    copy.attrs.set(kSrcPixelStrides, none);
    kernel = create_kernel(ctx);
  }
  if (!kernel) return tl::unexpected(kernel.error());
  auto placed = std::move(*kernel);
  for (auto& m : made) made_constants_.push_back(m);
  define_outputs(n, out_types, true);
  SD_TRY(add_step(std::move(placed), ins, types, n.outputs, phys_out, g_.describe(n)));
  // A Concat planned later may have it write into its output (plan_concat.cpp).
  if (cls == OpClass::kUnary || cls == OpClass::kBinary || cls == OpClass::kResize) record_strided_producer(copy, types, consts, phys_out);
  return ok();
}

bool Planner::quantizes_for_int8_convs(const Node& n, const std::vector<ValueType>& lin, const std::vector<const HostTensor*>& lconst,
                                       const std::vector<ValueType>& out_types) const {
  if (!channels_last_ || n.op_type != "QuantizeLinear" || n.outputs.size() != 1 || n.outputs[0] < 0 || lin.empty() ||
      lin[0].dtype != DType::kFloat32 || lin[0].shape.rank != 4 || out_types.size() != 1 || lin.size() < 2 || lin[1].shape.numel() != 1)
    return false;
  // On the host (whose QuantizeLinear kernel writes channels-last), for its channels-last convolutions.
  const Backend& host = *backends_[static_cast<size_t>(host_)];
  if (host.preferred_layout() != Layout::kNhwc || &preferred_backend(OpContext{n, g_.opset, lin, lconst, out_types}) != &host) return false;
  const int y = n.outputs[0];
  if (std::find(g_.outputs.begin(), g_.outputs.end(), y) != g_.outputs.end()) return false;
  int readers = 0;
  for (const Node& r : g_.nodes)
    for (size_t k = 0; k < r.inputs.size(); ++k) {
      if (r.inputs[k] != y) continue;
      if (r.op_type != "Int8Conv" || k != 0) return false;
      ++readers;
    }
  return readers > 0;
}

Status Planner::plan_quantize_to_nhwc(const Node& n, const std::vector<ValueType>& out_types) {
  Node copy = n;
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = 1;
  copy.attrs.set(kDstNhwc, a);
  std::vector<ValueType> types;
  std::vector<const HostTensor*> consts;
  SD_TRY(gather(n.inputs, types, consts));
  const std::vector<ValueType> phys_out{{out_types[0].dtype, physical_of(out_types[0].shape)}};
  OpContext ctx{copy, g_.opset, types, consts, phys_out};
  SD_ASSIGN_OR_RETURN(auto placed, create_kernel(ctx));
  define_outputs(n, out_types, true);
  return add_step(std::move(placed), n.inputs, types, n.outputs, phys_out, g_.describe(n));
}

}  // namespace sd::native::exec
