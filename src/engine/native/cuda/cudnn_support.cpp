#include "engine/native/cuda/cudnn_support.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <memory>

#include "engine/native/cuda/cuda_check.h"
#include "engine/native/cuda/cudnn_conv_desc.h"
#include "engine/native/half.h"

namespace sd::native::cuda {

Result<SharedHandle*> shared_handle(const CudnnLibrary& lib) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<SharedHandle>> handles;
  int device = 0;
  SD_CUDA_TRY(cudaGetDevice(&device));
  std::lock_guard lock(mutex);
  auto& h = handles[device];
  if (!h) {
    auto made = std::make_unique<SharedHandle>();
    SD_CUDNN_TRY(lib, Create, &made->handle);
    h = std::move(made);
  }
  return h.get();
}

DeviceMemory::~DeviceMemory() {
  if (p) cudaFree(p);
}

Status upload(DeviceMemory& m, std::span<const float> host, bool half) {
  const size_t es = half ? sizeof(uint16_t) : sizeof(float);
  SD_CUDA_TRY(cudaMalloc(&m.p, std::max<size_t>(host.size(), 1) * es));
  if (!half) {
    SD_CUDA_TRY(cudaMemcpy(m.p, host.data(), host.size() * es, cudaMemcpyHostToDevice));
    return ok();
  }
  std::vector<uint16_t> h(host.size());
  floats_to_halves(host.data(), h.data(), host.size());
  SD_CUDA_TRY(cudaMemcpy(m.p, h.data(), h.size() * es, cudaMemcpyHostToDevice));
  return ok();
}

Status download(std::vector<float>& host, const void* device, size_t n, bool half) {
  host.resize(n);
  if (!half) {
    SD_CUDA_TRY(cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost));
    return ok();
  }
  std::vector<uint16_t> h(n);
  SD_CUDA_TRY(cudaMemcpy(h.data(), device, n * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  halves_to_floats(h.data(), host.data(), n);
  return ok();
}

std::vector<float> random_values(size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> host(count);
  for (float& v : host) v = u(rng);
  return host;
}

Status run_direct(const ConvParams& p, bool half, bool bias, bool sum, std::span<const TensorRef> in, std::span<const TensorRef> out,
                  void* stream) {
  const int e = half ? launch_conv_direct(p, in[0].as<__half>(), in[1].as<__half>(), bias ? in[2].as<__half>() : nullptr,
                                          sum ? in[3].as<__half>() : nullptr, out[0].as<__half>(), stream)
                     : launch_conv_direct(p, in[0].as<float>(), in[1].as<float>(), bias ? in[2].as<float>() : nullptr,
                                          sum ? in[3].as<float>() : nullptr, out[0].as<float>(), stream);
  SD_CUDA_TRY(static_cast<cudaError_t>(e));
  return ok();
}

Result<std::string> probe_against_direct(const ConvParams& p, bool half, bool bias, bool sum, const std::array<int, 4>& w_dims,
                                         bool filter_ohwi, size_t workspace, const std::function<Status(const ProbeBuffers&)>& fast) {
  std::mt19937 rng(1234);
  const size_t xn = p.n * p.c * p.h * p.w, wn = p.oc * (p.c / p.group) * p.kh * p.kw, yn = p.n * p.oc * p.oh * p.ow;
  DeviceMemory x, w, w_ohwi, b, s, y_fast, y_direct, ws;
  const std::vector<float> weights = random_values(wn, rng);
  SD_TRY(upload(x, random_values(xn, rng), half));
  SD_TRY(upload(w, weights, half));
  if (filter_ohwi) SD_TRY(upload(w_ohwi, oihw_to_ohwi(weights, w_dims), half));
  if (bias) SD_TRY(upload(b, random_values(p.oc, rng), half));
  if (sum) SD_TRY(upload(s, random_values(yn, rng), half));
  const size_t es = half ? sizeof(uint16_t) : sizeof(float);
  SD_CUDA_TRY(cudaMalloc(&y_fast.p, yn * es));
  SD_CUDA_TRY(cudaMalloc(&y_direct.p, yn * es));
  if (workspace) SD_CUDA_TRY(cudaMalloc(&ws.p, workspace));
  SD_CUDA_TRY(cudaMemset(y_fast.p, 0xFF, yn * es));
  SD_CUDA_TRY(cudaMemset(y_direct.p, 0xFF, yn * es));
  SD_TRY(fast(ProbeBuffers{x.p, filter_ohwi ? w_ohwi.p : w.p, b.p, s.p, y_fast.p, ws.p}));
  const int e = half ? launch_conv_direct(p, static_cast<const __half*>(x.p), static_cast<const __half*>(w.p),
                                          static_cast<const __half*>(b.p), static_cast<const __half*>(s.p),
                                          static_cast<__half*>(y_direct.p), nullptr)
                     : launch_conv_direct(p, static_cast<const float*>(x.p), static_cast<const float*>(w.p),
                                          static_cast<const float*>(b.p), static_cast<const float*>(s.p),
                                          static_cast<float*>(y_direct.p), nullptr);
  SD_CUDA_TRY(static_cast<cudaError_t>(e));
  SD_CUDA_TRY(cudaDeviceSynchronize());
  std::vector<float> a, r;
  SD_TRY(download(a, y_fast.p, yn, half));
  SD_TRY(download(r, y_direct.p, yn, half));
  return cudnn_probe_disagreement(a, r, half ? kCudnnFp16ProbeTolerance : kCudnnFp32ProbeTolerance);
}

}  // namespace sd::native::cuda
