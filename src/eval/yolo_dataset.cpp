#include "eval/yolo_dataset.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "runtime/detector.h"
#include "sources/image_source.h"

namespace sd::eval {

namespace {

namespace fs = std::filesystem;

std::string trim(std::string s) {
  const char* space = " \t\r\n";
  s.erase(0, s.find_first_not_of(space));
  const size_t end = s.find_last_not_of(space);
  s.erase(end == std::string::npos ? 0 : end + 1);
  return s;
}

std::string field_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string unquote(std::string s) {
  s = trim(std::move(s));
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front()) s = s.substr(1, s.size() - 2);
  return s;
}

// `names:` of an Ultralytics data YAML, in its three usual spellings.
Result<std::vector<std::string>> read_yaml_names(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::kSource, "cannot read " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("names:", 0) != 0) continue;
    const std::string rest = trim(lines[i].substr(6));
    std::vector<std::string> names;
    if (!rest.empty()) {  // names: [a, 'b', ...]
      if (rest.front() != '[' || rest.back() != ']')
        return fail(ErrorCode::kSource, path + ":" + std::to_string(i + 1) + ": expected names: [a, b, ...] or a block below");
      std::stringstream items(rest.substr(1, rest.size() - 2));
      for (std::string item; std::getline(items, item, ',');)
        if (!trim(item).empty()) names.push_back(unquote(item));
      return names;
    }
    std::map<long, std::string> indexed;
    for (size_t j = i + 1; j < lines.size(); ++j) {
      if (trim(lines[j]).empty() || trim(lines[j]).front() == '#') continue;
      if (lines[j].front() != ' ' && lines[j].front() != '\t' && lines[j].front() != '-') break;  // the next key
      const std::string item = trim(lines[j]);
      if (item.front() == '-') {
        names.push_back(unquote(item.substr(1)));
        continue;
      }
      const size_t colon = item.find(':');
      char* end = nullptr;
      const long index = colon == std::string::npos ? -1 : std::strtol(item.c_str(), &end, 10);
      if (index < 0 || end != item.c_str() + colon || !indexed.emplace(index, unquote(item.substr(colon + 1))).second)
        return fail(ErrorCode::kSource, path + ":" + std::to_string(j + 1) + ": expected 'INDEX: name' or '- name'");
    }
    long expect = 0;
    for (const auto& [index, name] : indexed) {
      if (index != expect++) return fail(ErrorCode::kSource, path + ": names: class " + std::to_string(expect - 1) + " is missing");
      names.push_back(name);
    }
    if (names.empty()) return fail(ErrorCode::kSource, path + ":" + std::to_string(i + 1) + ": names: lists no class");
    return names;
  }
  return fail(ErrorCode::kSource, path + ": no names: key (a data YAML needs one)");
}

// Ultralytics' rule: the last /images/ of the path becomes /labels/, the extension .txt.
fs::path label_path_of(const fs::path& image) {
  std::string s = image.string();
  const size_t at = s.rfind("/images/");
  if (at != std::string::npos) s.replace(at, 8, "/labels/");
  return fs::path(s).replace_extension(".txt");
}

Status read_labels(const fs::path& path, int64_t image_id, size_t classes, std::vector<CocoTruth>& truth) {
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::kSource, "cannot read " + path.string());
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    const std::string where = path.string() + ":" + std::to_string(line_number) + ": ";
    std::stringstream fields(line);
    std::vector<double> v;
    std::string field;
    while (fields >> field) {
      char* end = nullptr;
      const double x = std::strtod(field.c_str(), &end);
      if (end != field.c_str() + field.size()) return fail(ErrorCode::kSource, where + "'" + field + "' is not a number");
      v.push_back(x);
    }
    if (v.empty()) continue;
    if (v.size() < 5 || (v.size() > 5 && v.size() % 2 == 0))
      return fail(ErrorCode::kSource, where + "expected 'class cx cy w h' or 'class x1 y1 x2 y2 ...', got " + std::to_string(v.size()) + " numbers");
    if (v[0] != static_cast<double>(static_cast<long>(v[0])) || v[0] < 0 || v[0] >= static_cast<double>(classes))
      return fail(ErrorCode::kSource, where + "class " + field_text(v[0]) + " is out of range (" + std::to_string(classes) + " classes)");
    for (size_t k = 1; k < v.size(); ++k)
      if (!(v[k] >= 0 && v[k] <= 1))
        return fail(ErrorCode::kSource, where + "coordinate " + field_text(v[k]) + " is outside [0, 1] (normalized coordinates)");
    CocoTruth t;
    t.image_id = image_id;
    t.category_id = static_cast<int64_t>(v[0]);
    if (v.size() == 5) {
      t.box = {v[1] - v[3] / 2, v[2] - v[4] / 2, v[3], v[4]};
    } else {
      double x0 = 1, y0 = 1, x1 = 0, y1 = 0;
      for (size_t k = 1; k + 1 < v.size(); k += 2) {
        x0 = std::min(x0, v[k]), x1 = std::max(x1, v[k]);
        y0 = std::min(y0, v[k + 1]), y1 = std::max(y1, v[k + 1]);
      }
      t.box = {x0, y0, x1 - x0, y1 - y0};
    }
    t.area = t.box.w * t.box.h;
    truth.push_back(t);
  }
  return ok();
}

}  // namespace

Result<std::vector<std::string>> read_yolo_names(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".yaml" || ext == ".yml") return read_yaml_names(path);
  auto names = read_class_names(path);
  if (!names) return fail(ErrorCode::kSource, names.error().message);
  return names;
}

Result<Dataset> read_yolo_dataset(const std::string& names_path, const std::string& image_dir) {
  SD_ASSIGN_OR_RETURN(std::vector<std::string> names, read_yolo_names(names_path));
  std::error_code ec;
  if (!fs::is_directory(image_dir, ec)) return fail(ErrorCode::kSource, "--images " + image_dir + ": not a folder");
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(image_dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file() && has_image_extension(it->path().string())) files.push_back(it->path());
  if (ec) return fail(ErrorCode::kSource, "--images " + image_dir + ": " + ec.message());
  if (files.empty()) return fail(ErrorCode::kSource, "--images " + image_dir + ": no image files");
  std::sort(files.begin(), files.end());
  Dataset ds;
  for (size_t c = 0; c < names.size(); ++c) ds.categories.push_back({static_cast<int64_t>(c), names[c]});
  for (size_t i = 0; i < files.size(); ++i) {
    DatasetImage image;
    image.id = static_cast<int64_t>(i + 1);
    image.path = files[i].string();
    image.file_name = fs::relative(files[i], image_dir, ec).string();
    const fs::path labels = label_path_of(fs::absolute(files[i], ec));
    if (fs::exists(labels, ec)) SD_TRY(read_labels(labels, image.id, names.size(), ds.truth));
    ds.images.push_back(std::move(image));
  }
  return ds;
}

void denormalize_truth(std::vector<CocoTruth>& truth, const std::unordered_map<int64_t, std::pair<int, int>>& sizes) {
  for (CocoTruth& t : truth) {
    auto it = sizes.find(t.image_id);
    if (it == sizes.end()) continue;
    const double w = it->second.first, h = it->second.second;
    t.box = {t.box.x * w, t.box.y * h, t.box.w * w, t.box.h * h};
    t.area *= w * h;
  }
}

}  // namespace sd::eval
