// --device: which backend the native engine prefers, by name.
#pragma once

#include <memory>
#include <string>

#include "core/error.h"
#include "engine/native/backend.h"

namespace sd::native {

// "cpu": nullptr (the CPU backend alone). "auto": CUDA device 0 when it is usable, else nullptr.
// "cuda" / "cuda:N": that device, or an error (kModel: the model cannot run as asked, exit 3)
// naming why it is not usable; anything else is a usage error.
Result<std::shared_ptr<const Backend>> backend_for_device(const std::string& device);

}  // namespace sd::native
