#include "engine/native/conv_attrs.h"

#include <algorithm>
#include <map>

namespace sd::native::ops {

Result<ConvGeometry> conv_geometry(const OpContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  const Shape& wt = ctx.inputs[1].shape;
  if (x.rank != 4 || wt.rank != 4)
    return fail(ErrorCode::kUnsupported, ctx.describe() + ": only 2-D convolutions are supported (input " + x.str() + ")");
  const auto& a = ctx.node.attrs;
  ConvGeometry g{};
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  g.oc = wt[0], g.kh = wt[2], g.kw = wt[3];
  g.group = a.get_int("group", 1);
  if (g.group < 1 || g.c % g.group != 0 || wt[1] * g.group != g.c || g.oc % g.group != 0)
    return fail(ErrorCode::kModel, ctx.describe() + ": weights " + wt.str() + " do not match input " + x.str() + " with group " + std::to_string(g.group));
  auto ks = a.get_ints("kernel_shape");
  if (!ks.empty() && (ks.size() != 2 || ks[0] != g.kh || ks[1] != g.kw))
    return fail(ErrorCode::kModel, ctx.describe() + ": kernel_shape does not match the weights");
  auto st = a.get_ints("strides", {1, 1}), dil = a.get_ints("dilations", {1, 1}), pads = a.get_ints("pads", {0, 0, 0, 0});
  if (st.size() != 2 || dil.size() != 2 || pads.size() != 4) return fail(ErrorCode::kModel, ctx.describe() + ": bad strides/dilations/pads");
  g.sh = st[0], g.sw = st[1], g.dh = dil[0], g.dw = dil[1];
  if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1) return fail(ErrorCode::kModel, ctx.describe() + ": bad strides/dilations");
  g.pt = pads[0], g.pl = pads[1], g.pb = pads[2], g.pr = pads[3];
  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  const int64_t ekh = (g.kh - 1) * g.dh + 1, ekw = (g.kw - 1) * g.dw + 1;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    g.oh = (g.h + g.sh - 1) / g.sh, g.ow = (g.w + g.sw - 1) / g.sw;
    int64_t ph = std::max<int64_t>(0, (g.oh - 1) * g.sh + ekh - g.h), pw = std::max<int64_t>(0, (g.ow - 1) * g.sw + ekw - g.w);
    bool upper = auto_pad == "SAME_UPPER";
    g.pt = upper ? ph / 2 : ph - ph / 2, g.pb = ph - g.pt;
    g.pl = upper ? pw / 2 : pw - pw / 2, g.pr = pw - g.pl;
  } else {
    if (auto_pad == "VALID") g.pt = g.pl = g.pb = g.pr = 0;
    g.oh = (g.h + g.pt + g.pb - ekh) / g.sh + 1;
    g.ow = (g.w + g.pl + g.pr - ekw) / g.sw + 1;
  }
  if (g.oh < 1 || g.ow < 1) return fail(ErrorCode::kModel, ctx.describe() + ": the output would be empty");
  return g;
}

Result<PostKind> post_kind(const std::string& op, const OpContext& ctx) {
  static const std::map<std::string, PostKind> kinds = {{"relu", PostKind::kRelu},           {"leaky_relu", PostKind::kLeakyRelu},
                                                        {"silu", PostKind::kSilu},           {"sigmoid", PostKind::kSigmoid},
                                                        {"hardswish", PostKind::kHardSwish}, {"clip", PostKind::kClip},
                                                        {"sum", PostKind::kSum}};
  if (auto it = kinds.find(op); it != kinds.end()) return it->second;
  return fail(ErrorCode::kModel, ctx.describe() + ": unknown post op '" + op + "'");
}

Result<std::vector<PostOp>> post_ops(const OpContext& ctx) {
  const auto& a = ctx.node.attrs;
  const auto post = a.get_strings_or_empty("post_ops");
  const auto alphas = a.get_floats("post_op_alpha"), betas = a.get_floats("post_op_beta");
  std::vector<PostOp> ops;
  for (size_t i = 0; i < post.size(); ++i) {
    SD_ASSIGN_OR_RETURN(const PostKind kind, post_kind(post[i], ctx));
    ops.push_back({kind, i < alphas.size() ? alphas[i] : 0.f, i < betas.size() ? betas[i] : 0.f});
  }
  const bool has_sum = std::any_of(ops.begin(), ops.end(), [](const PostOp& p) { return p.kind == PostKind::kSum; });
  if (has_sum && (ctx.inputs.size() < 4 || ctx.inputs[3].shape != ctx.outputs[0].shape))
    return fail(ErrorCode::kModel, ctx.describe() + ": a sum post op needs a 4th input of the output's shape");
  return ops;
}

Result<PoolGeometry> pool_geometry(const OpContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  if (x.rank != 4) return fail(ErrorCode::kUnsupported, ctx.describe() + ": only 2-D pooling is supported (input " + x.str() + ")");
  const auto& a = ctx.node.attrs;
  const std::string& op = ctx.node.op_type;
  PoolGeometry g{};
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  g.max = op == "MaxPool" || op == "GlobalMaxPool";
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    g.kh = g.h, g.kw = g.w, g.sh = g.sw = 1, g.oh = g.ow = 1;
    return g;
  }
  if (ctx.node.outputs.size() > 1 && ctx.node.outputs[1] >= 0)
    return fail(ErrorCode::kUnsupported, ctx.describe() + ": the Indices output of MaxPool is not supported");
  auto ks = a.get_ints("kernel_shape");
  if (ks.size() != 2) return fail(ErrorCode::kUnsupported, ctx.describe() + ": kernel_shape must have 2 values");
  auto dil = a.get_ints("dilations", {1, 1});
  if (dil.size() != 2 || dil[0] != 1 || dil[1] != 1) return fail(ErrorCode::kUnsupported, ctx.describe() + ": dilated pooling is not supported");
  auto st = a.get_ints("strides", {1, 1}), pads = a.get_ints("pads", {0, 0, 0, 0});
  if (st.size() != 2 || pads.size() != 4) return fail(ErrorCode::kModel, ctx.describe() + ": bad strides/pads");
  g.kh = ks[0], g.kw = ks[1], g.sh = st[0], g.sw = st[1];
  if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1) return fail(ErrorCode::kModel, ctx.describe() + ": bad kernel or strides");
  g.pt = pads[0], g.pl = pads[1], g.pb = pads[2], g.pr = pads[3];
  g.include_pad = a.get_int("count_include_pad", 0) != 0;
  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  const bool ceil = a.get_int("ceil_mode", 0) != 0;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    g.oh = (g.h + g.sh - 1) / g.sh, g.ow = (g.w + g.sw - 1) / g.sw;
    int64_t ph = std::max<int64_t>(0, (g.oh - 1) * g.sh + g.kh - g.h), pw = std::max<int64_t>(0, (g.ow - 1) * g.sw + g.kw - g.w);
    bool upper = auto_pad == "SAME_UPPER";
    g.pt = upper ? ph / 2 : ph - ph / 2, g.pb = ph - g.pt;
    g.pl = upper ? pw / 2 : pw - pw / 2, g.pr = pw - g.pl;
  } else {
    if (auto_pad == "VALID") g.pt = g.pl = g.pb = g.pr = 0;
    auto out = [&](int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1) {
      int64_t span = in + p0 + p1 - k;
      int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
      if (ceil && (o - 1) * s >= in + p0) --o;  // the last window must start inside the input or its left padding
      return o;
    };
    g.oh = out(g.h, g.kh, g.sh, g.pt, g.pb);
    g.ow = out(g.w, g.kw, g.sw, g.pl, g.pr);
    // oneDNN wants the right padding that makes the output size exact.
    g.pb = (g.oh - 1) * g.sh + g.kh - g.h - g.pt;
    g.pr = (g.ow - 1) * g.sw + g.kw - g.w - g.pl;
  }
  if (g.oh < 1 || g.ow < 1) return fail(ErrorCode::kModel, ctx.describe() + ": the output would be empty");
  return g;
}

}  // namespace sd::native::ops
