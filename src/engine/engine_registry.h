// Engines by name (--engine). Built-in backends register here; tests can add their own
// (e.g. an engine that fails on purpose) without touching the pipeline.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/model_info.h"

namespace sd {

using EngineFactory = std::function<Result<std::unique_ptr<Engine>>(const ModelInfo&, const EngineOptions&)>;

// Replaces any engine of the same name.
void register_engine(const std::string& name, EngineFactory factory);
void unregister_engine(const std::string& name);
std::vector<std::string> engine_names();
Result<std::unique_ptr<Engine>> load_engine(const std::string& name, const ModelInfo& model, const EngineOptions& options = {});

}  // namespace sd
