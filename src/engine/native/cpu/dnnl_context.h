// The one oneDNN CPU engine of the process, and helpers shared by the oneDNN-backed ops.
#pragma once

#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/native/layout_attrs.h"

namespace sd::native::dnnl_ops {

dnnl::engine& cpu_engine();

using native::kDstNhwc;
using native::kSrcNhwc;

// Every primitive of the engine takes its scratchpad from the session's scratch (oneDNN's
// "user" mode). The default "library" mode keeps it in a per-thread global of the thread that
// created the primitive; oneDNN's primitive cache hands that same primitive to a session planned
// on another thread (the probe on the main thread, then a pipeline worker), which then found no
// scratchpad there and crashed in jit_wino_4x3.
inline dnnl::primitive_attr with_user_scratchpad(dnnl::primitive_attr attr = {}) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// A primitive's scratchpad inside ExecContext::scratch, at `offset`.
class Scratchpad {
 public:
  // After the primitive desc is made; adds DNNL_ARG_SCRATCHPAD to the primitive's arguments.
  void init(const dnnl::memory::desc& desc, size_t offset, std::unordered_map<int, dnnl::memory>& args) {
    bytes_ = (desc.get_size() + 63) / 64 * 64;
    offset_ = offset;
    if (bytes_ == 0) return;
    memory_ = dnnl::memory(desc, cpu_engine(), nullptr);
    args[DNNL_ARG_SCRATCHPAD] = memory_;
  }
  size_t end() const { return offset_ + bytes_; }
  void bind(unsigned char* scratch) {
    if (bytes_) memory_.set_data_handle(scratch + offset_);
  }

 private:
  dnnl::memory memory_;
  size_t bytes_ = 0, offset_ = 0;
};

}  // namespace sd::native::dnnl_ops
