#include "engine/engine_registry.h"

#include <map>
#include <mutex>

#include "engine/native/native_engine.h"
#include "engine/opencv/opencv_engine.h"

namespace sd {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, EngineFactory> factories;
  Registry() {
    factories["opencv"] = [](const ModelInfo& m, const EngineOptions& o) -> Result<std::unique_ptr<Engine>> {
      if (o.device != "auto" && o.device != "cpu")
        return fail(ErrorCode::kUnsupported, "--device " + o.device + ": the opencv engine runs on the CPU (the native engine runs ONNX models on GPUs)");
      if (o.precision != "auto" && o.precision != "fp32")
        return fail(ErrorCode::kUsage, "--precision " + o.precision + ": the opencv engine runs float32 (the native engine runs bf16 and fp16)");
      return load_opencv_engine(m);
    };
    factories["native"] = [](const ModelInfo& m, const EngineOptions& o) { return load_native_engine(m, o); };
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_engine(const std::string& name, EngineFactory factory) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().factories[name] = std::move(factory);
}

void unregister_engine(const std::string& name) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().factories.erase(name);
}

std::vector<std::string> engine_names() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  std::vector<std::string> names;
  for (const auto& [n, f] : registry().factories) names.push_back(n);
  return names;
}

Result<std::unique_ptr<Engine>> load_engine(const std::string& name, const ModelInfo& model, const EngineOptions& options) {
  EngineFactory factory;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto it = registry().factories.find(name);
    if (it != registry().factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const auto& n : engine_names()) known += (known.empty() ? "" : ", ") + n;
    return fail(ErrorCode::kUsage, "unknown --engine '" + name + "' (available: " + known + ")");
  }
  return factory(model, options);
}

}  // namespace sd
