#include "engine/native/device.h"

#include "engine/native/cuda/cuda_backend.h"

namespace sd::native {

Result<std::shared_ptr<const Backend>> backend_for_device(const std::string& device) {
  if (device == "cpu") return std::shared_ptr<const Backend>();
  if (device == "auto") {
    auto cuda = cuda_backend(0);
    return cuda ? *cuda : std::shared_ptr<const Backend>();
  }
  int index = 0;
  if (device != "cuda") {
    const std::string n = device.rfind("cuda:", 0) == 0 ? device.substr(5) : "";
    if (n.empty() || n.size() > 3 || n.find_first_not_of("0123456789") != std::string::npos)
      return fail(ErrorCode::kUsage, "--device " + device + ": expected auto, cpu, cuda or cuda:N");
    index = std::stoi(n);
  }
  auto cuda = cuda_backend(index);
  // Asked for a GPU that is not there: the model cannot run as asked (exit 3).
  if (!cuda) return fail(ErrorCode::kModel, "--device " + device + ": " + cuda.error().message);
  return *cuda;
}


}  // namespace sd::native
