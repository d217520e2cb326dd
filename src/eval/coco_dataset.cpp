#include "eval/coco_dataset.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace sd::eval {

namespace {

using nlohmann::json;

Error bad(const std::string& path, const std::string& what) {
  return Error{ErrorCode::kSource, path + ": " + what};
}

bool is_id(const json& j) { return j.is_number_integer() || j.is_number_unsigned(); }

// The bbox of annotations[i]: four numbers, width and height not negative.
Result<CocoBox> read_bbox(const std::string& path, const json& a, size_t i) {
  const std::string where = "annotations[" + std::to_string(i) + "]";
  auto it = a.find("bbox");
  if (it == a.end() || !it->is_array() || it->size() != 4)
    return tl::unexpected(bad(path, where + ": \"bbox\" must be [x, y, width, height]"));
  for (const json& v : *it)
    if (!v.is_number()) return tl::unexpected(bad(path, where + ": \"bbox\" must hold four numbers"));
  CocoBox b{(*it)[0].get<double>(), (*it)[1].get<double>(), (*it)[2].get<double>(), (*it)[3].get<double>()};
  if (b.w < 0 || b.h < 0) return tl::unexpected(bad(path, where + ": \"bbox\" has a negative width or height"));
  return b;
}

}  // namespace

Result<Dataset> read_coco_dataset(const std::string& json_path, const std::string& image_dir) {
  namespace fs = std::filesystem;
  std::ifstream in(json_path, std::ios::binary);
  if (!in) return fail(ErrorCode::kSource, "cannot open dataset " + json_path);
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    // nlohmann's message says where: "parse error at line 3, column 7: ...".
    return fail(ErrorCode::kSource, json_path + ": not JSON: " + std::string(e.what()));
  }
  if (!doc.is_object()) return fail(ErrorCode::kSource, json_path + ": not a COCO instances file (expected a JSON object)");
  for (const char* key : {"images", "annotations", "categories"}) {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_array())
      return fail(ErrorCode::kSource, json_path + ": not a COCO instances file (no \"" + key + "\" array)");
  }
  std::error_code ec;
  if (!fs::is_directory(image_dir, ec)) return fail(ErrorCode::kSource, "--images " + image_dir + ": not a folder");

  Dataset ds;
  std::unordered_set<int64_t> image_ids, category_ids;
  const json& images = doc["images"];
  for (size_t i = 0; i < images.size(); ++i) {
    const json& im = images[i];
    const std::string where = "images[" + std::to_string(i) + "]";
    if (!im.is_object() || !im.contains("id") || !is_id(im["id"]) || !im.contains("file_name") || !im["file_name"].is_string())
      return fail(ErrorCode::kSource, json_path + ": " + where + ": needs an integer \"id\" and a \"file_name\"");
    DatasetImage image;
    image.id = im["id"].get<int64_t>();
    image.file_name = im["file_name"].get<std::string>();
    if (!image_ids.insert(image.id).second)
      return fail(ErrorCode::kSource, json_path + ": " + where + ": image id " + std::to_string(image.id) + " appears twice");
    image.path = (fs::path(image_dir) / image.file_name).string();
    if (!fs::is_regular_file(image.path, ec))
      return fail(ErrorCode::kSource, json_path + ": " + where + " (id " + std::to_string(image.id) + "): no image " + image.path);
    ds.images.push_back(std::move(image));
  }
  const json& categories = doc["categories"];
  for (size_t i = 0; i < categories.size(); ++i) {
    const json& c = categories[i];
    if (!c.is_object() || !c.contains("id") || !is_id(c["id"]))
      return fail(ErrorCode::kSource, json_path + ": categories[" + std::to_string(i) + "]: needs an integer \"id\"");
    DatasetCategory cat;
    cat.id = c["id"].get<int64_t>();
    if (c.contains("name") && c["name"].is_string()) cat.name = c["name"].get<std::string>();
    if (!category_ids.insert(cat.id).second)
      return fail(ErrorCode::kSource, json_path + ": categories[" + std::to_string(i) + "]: category id " + std::to_string(cat.id) +
                                          " appears twice");
    ds.categories.push_back(std::move(cat));
  }
  const json& annotations = doc["annotations"];
  ds.truth.reserve(annotations.size());
  for (size_t i = 0; i < annotations.size(); ++i) {
    const json& a = annotations[i];
    const std::string where = "annotations[" + std::to_string(i) + "]";
    if (!a.is_object() || !a.contains("image_id") || !is_id(a["image_id"]) || !a.contains("category_id") || !is_id(a["category_id"]))
      return fail(ErrorCode::kSource, json_path + ": " + where + ": needs an integer \"image_id\" and \"category_id\"");
    CocoTruth t;
    t.image_id = a["image_id"].get<int64_t>();
    t.category_id = a["category_id"].get<int64_t>();
    if (!image_ids.count(t.image_id))
      return fail(ErrorCode::kSource, json_path + ": " + where + ": image_id " + std::to_string(t.image_id) + " is not in \"images\"");
    if (!category_ids.count(t.category_id))
      return fail(ErrorCode::kSource, json_path + ": " + where + ": category_id " + std::to_string(t.category_id) +
                                          " is not in \"categories\"");
    SD_ASSIGN_OR_RETURN(t.box, read_bbox(json_path, a, i));
    // COCO's area is the segment's; files without one get the box's.
    t.area = a.contains("area") && a["area"].is_number() ? a["area"].get<double>() : t.box.w * t.box.h;
    t.crowd = a.contains("iscrowd") && a["iscrowd"].is_number() && a["iscrowd"].get<double>() != 0;
    ds.truth.push_back(t);
  }
  return ds;
}

Result<ClassMapping> map_model_classes(const std::vector<std::string>& model_names, const std::vector<DatasetCategory>& categories) {
  ClassMapping m;
  m.category_of_class.assign(model_names.size(), -1);
  bool all_named = !categories.empty();
  for (const DatasetCategory& c : categories) {
    auto it = std::find(model_names.begin(), model_names.end(), c.name);
    if (c.name.empty() || it == model_names.end()) {
      all_named = false;
      break;
    }
  }
  if (all_named) {
    m.by_name = true;
    for (const DatasetCategory& c : categories)
      m.category_of_class[static_cast<size_t>(std::find(model_names.begin(), model_names.end(), c.name) - model_names.begin())] = c.id;
    return m;
  }
  if (model_names.size() == categories.size()) {
    for (size_t i = 0; i < categories.size(); ++i) m.category_of_class[i] = categories[i].id;
    return m;
  }
  auto some = [](auto begin, auto end, auto name_of) {
    std::string text;
    for (auto it = begin; it != end && text.size() < 60; ++it) text += (text.empty() ? "" : ", ") + name_of(*it);
    return text;
  };
  const std::string model_text = some(model_names.begin(), model_names.end(), [](const std::string& n) { return n; });
  const std::string data_text = some(categories.begin(), categories.end(), [](const DatasetCategory& c) { return c.name; });
  return fail(ErrorCode::kUsage, "cannot map the model's " + std::to_string(model_names.size()) + " classes (" + model_text +
                                     ", ...) to the dataset's " + std::to_string(categories.size()) + " categories (" + data_text +
                                     ", ...): the names differ and so do the counts (--classes gives the model's names)");
}

}  // namespace sd::eval
