// The memory a run may take (--max-memory): what the model needs at its input size, the frames
// and tensors in flight. Checked before allocating, so that a model with a 100000x100000 input or
// a 20000x20000 image is one line naming the figure instead of an abort or the OOM killer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sd {

// The default budget: 80% of the machine's physical memory.
uint64_t default_memory_budget();
// "8G", "512M", "1.5GB", "64MiB", "2T" (binary units; a unit is required): bytes, or nullopt.
std::optional<uint64_t> parse_memory_size(const std::string& text);
// "over the memory budget of 19.2 GB (--max-memory)" when `need` > `budget`; nullopt otherwise.
std::optional<std::string> over_budget(uint64_t need, uint64_t budget);

}  // namespace sd
