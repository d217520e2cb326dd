#include "engine/native/conv_choice.h"

namespace sd::native {

int mark_conv3x3_choice(Graph& g, Conv3x3Choice choice) {
  if (choice == Conv3x3Choice::kMeasured) return 0;
  int marked = 0;
  for (Node& n : g.nodes) {
    if (n.op_type != "Conv" && n.op_type != "FusedConv") continue;
    Attribute a;
    a.kind = Attribute::Kind::kInt;
    a.i = static_cast<int64_t>(choice);
    n.attrs.set(kConv3x3Choice, a);
    ++marked;
  }
  return marked;
}

int mark_conv_candidate(Graph& g, int candidate) {
  if (candidate == kTimedCandidate) return 0;
  int marked = 0;
  for (Node& n : g.nodes) {
    if (n.op_type != "Conv" && n.op_type != "FusedConv" && n.op_type != "Int8Conv") continue;
    Attribute a;
    a.kind = Attribute::Kind::kInt;
    a.i = candidate;
    n.attrs.set(kConvCandidate, a);
    ++marked;
  }
  return marked;
}

}  // namespace sd::native
