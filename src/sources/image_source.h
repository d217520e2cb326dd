// Still images: one file, every image in a folder (sorted by name), or a glob pattern.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sources/source.h"

namespace sd {

class ImageSource final : public Source {
 public:
  static Result<std::unique_ptr<Source>> open(const std::string& spec, std::vector<std::string> files,
                                              const SourceOptions& options);
  const SourceInfo& info() const override { return info_; }
  Result<bool> read(Frame& frame) override;

 private:
  std::vector<std::string> files_;
  size_t next_ = 0;
  SourceInfo info_;
  int source_id_ = 0;
};

bool has_image_extension(const std::string& path);

}  // namespace sd
