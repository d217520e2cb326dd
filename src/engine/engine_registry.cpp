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
    factories["opencv"] = [](const ModelInfo& m) { return load_opencv_engine(m); };
    factories["native"] = [](const ModelInfo& m) { return load_native_engine(m); };
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

Result<std::unique_ptr<Engine>> load_engine(const std::string& name, const ModelInfo& model) {
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
  return factory(model);
}

}  // namespace sd
