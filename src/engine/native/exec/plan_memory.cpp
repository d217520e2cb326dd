// The planner's memory (planner.h): intermediate tensors placed in one arena per backend by
// lifetime, and each value's buffer (arena offset, graph input or constant) for the steps.
#include <algorithm>

#include "engine/native/exec/planner.h"

namespace sd::native::exec {

// Greedy offsets: the largest tensors first, each at the lowest offset that does not overlap
// a placed tensor alive at the same time.
// One arena per backend, each placed on its own.
void Planner::allocate() {
  struct Item { int v; size_t size; int first, last; size_t offset; };
  std::vector<std::vector<Item>> items(backends_.size());
  for (size_t v = 0; v < states_.size(); ++v) {
    const ValueState& s = states_[v];
    if (!s.defined || s.constant || s.uploaded || s.input >= 0 || s.root != static_cast<int>(v) || s.first_step < 0) continue;
    const ValueType t = stored_type(s.logical, home_of(static_cast<int>(v)));  // fp16 on a device with device_fp16
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

BufferRef Planner::buffer_of(int v) const {
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

}  // namespace sd::native::exec
