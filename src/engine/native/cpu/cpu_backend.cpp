// The CPU backend: the builtin registry's kernels (our own vectorized ones, oneDNN's for
// convolutions, matmuls and pooling), host memory in 2 MiB-aligned huge-page blocks, and an
// OpenMP team per session sized by its thread budget.
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/cpu_isa.h"
#include "engine/native/aligned_buffer.h"
#include "engine/native/backend.h"
#include "engine/native/cpu/pointwise_conv.h"
#include "engine/native/cpu/stem_conv.h"
#include "engine/native/precision.h"

namespace sd::native {
namespace {

class CpuStream final : public BackendStream {
 public:
  explicit CpuStream(int threads) : threads_(std::max(1, threads)) {}
  int threads() const override { return threads_; }

 private:
  int threads_;
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device{}; }
  std::string description() const override {
    const dnnl_version_t* v = dnnl_version();
    return "cpu (oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
           ", OpenMP, " + std::to_string(omp_get_num_procs()) + " cores)";
  }

  bool supports(const OpContext& ctx) const override {
    const OpSchema* schema = builtin_op_registry().find(ctx.node.op_type, ctx.opset);
    return schema && schema->create;
  }
  std::vector<std::string> op_types() const override { return builtin_op_registry().op_types(); }
  Result<std::unique_ptr<Kernel>> create_kernel(const OpContext& ctx) const override {
    const OpSchema* schema = builtin_op_registry().find(ctx.node.op_type, ctx.opset);
    if (!schema || !schema->create) return fail(ErrorCode::kModel, ctx.describe() + ": not supported by the cpu backend");
    return schema->create(ctx);
  }
  bool conv_reads_plain_source(const OpContext& ctx) const override {
    const auto& in = ctx.inputs;
    return ctx.node.op_type != "Int8Conv" && in.size() > 1 && in[0].shape.rank == 4 && in[1].shape.rank == 4 &&
           ops::stem_conv_applies(in[0].shape[1], in[1].shape[0], in[1].shape[2], in[1].shape[3], false, ctx.node.attrs);
  }

  // A 1x1 convolution our 1x1 kernel runs (cpu/pointwise_conv.h): float32, or under --precision
  // bf16 on a bf16 source its bf16 variant (each part's channels even: the planner checks).
  int conv_source_parts(const OpContext& ctx) const override {
    const auto& in = ctx.inputs;
    const Attributes& a = ctx.node.attrs;
    const bool bf16 = a.get_int(kBf16Compute, 0) != 0;
    if ((ctx.node.op_type != "Conv" && ctx.node.op_type != "FusedConv") || in.size() < 2 || in[1].shape.rank != 4 ||
        a.get_string("auto_pad", "NOTSET") != "NOTSET")
      return 0;
    if (bf16 ? in[0].dtype != DType::kBFloat16 || cpu::active_isa() < cpu::Isa::kAvx512Bf16 || in[1].shape[1] % 2 != 0 || in[1].shape[0] % 16 != 0
             : in[0].dtype != DType::kFloat32)
      return 0;
    auto all = [&](const char* name, int64_t want) {
      for (int64_t v : a.get_ints(name))
        if (v != want) return false;
      return true;
    };
    const Shape& w = in[1].shape;  // [oc, c, kh, kw]
    const bool ours = all("strides", 1) && all("dilations", 1) && all("pads", 0) &&
                      ops::PointwiseConv::applies(w[1], w[0], w[2], w[3], 1, 1, a.get_int("group", 1), 0, 0, 0, 0);
    return ours ? ops::pointwise::kMaxParts : 0;
  }

  // oneDNN's AVX-512 convolutions run channels-last directly.
  Layout preferred_layout() const override { return Layout::kNhwc; }

  Result<DeviceBuffer> allocate(size_t bytes) const override {
    AlignedBytes p = allocate_aligned(bytes);
    if (!p) return fail(ErrorCode::kInternal, "cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    return DeviceBuffer(this, p.release(), bytes);
  }
  Status copy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes, BackendStream*) const override {
    if (!dst_device.is_host() || !src_device.is_host())
      return fail(ErrorCode::kInternal, "the cpu backend cannot copy " + src_device.str() + " -> " + dst_device.str());
    if (bytes) std::memmove(dst, src, bytes);
    return ok();
  }

  Result<std::unique_ptr<BackendStream>> create_stream(int threads) const override {
    return std::unique_ptr<BackendStream>(new CpuStream(threads));
  }
  // Before planning too: oneDNN sizes its kernels' work split by the thread count of the calling
  // thread when a primitive is created.
  Status begin_run(BackendStream& stream) const override {
    omp_set_num_threads(stream.threads());
    return ok();
  }
  Status end_run(BackendStream&) const override { return ok(); }

 private:
  void release(void* data, size_t) const noexcept override { FreeDeleter{}(static_cast<unsigned char*>(data)); }
};

}  // namespace

std::shared_ptr<const Backend> cpu_backend() {
  static const std::shared_ptr<const Backend> backend = std::make_shared<CpuBackend>();
  return backend;
}

}  // namespace sd::native
