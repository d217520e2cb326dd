// --line, --zone and --events driven through the binary: counts on a traverse clip whose truth is
// known, the events file against the profile's counts, per-source prefixes, and bad input (exit 2,
// one line, nothing written).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "redis_server.h"
#include "transport/redis_client.h"
#include "transport/redis_uri.h"
#include "synthetic/clip_writer.h"

namespace sd {
namespace {

using test::kTinyModel;

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// Per direction ("in"/"out") and class name, the crossings of the vertical line x = `x` drawn
// downward ("in": right to left on the picture) by the truth's objects: each object's bottom
// centre where it is first and last seen.
std::map<std::string, std::map<std::string, int>> truth_crossings(const std::string& truth_path, double x) {
  std::map<int64_t, std::pair<double, double>> first_last;
  std::map<int64_t, std::string> cls;
  for (const auto& frame : read_jsonl(truth_path))
    for (const auto& d : frame["detections"]) {
      const int64_t id = d["object_id"].get<int64_t>();
      const double cx = (d["box"][0].get<double>() + d["box"][2].get<double>()) / 2;
      if (!first_last.count(id)) first_last[id] = {cx, cx};
      first_last[id].second = cx;
      cls[id] = d["class_name"].get<std::string>();
    }
  std::map<std::string, std::map<std::string, int>> out;
  for (const auto& [id, fl] : first_last) {
    if (fl.first > x && fl.second < x) ++out["in"][cls[id]];
    if (fl.first < x && fl.second > x) ++out["out"][cls[id]];
  }
  return out;
}

TEST(LinesZonesCli, LineCountsOnATraverseClipMatchTheTruthAndTheEventsMatchTheProfile) {
  test::TempDir dir;
  synth::SceneOptions scene;
  scene.motion = synth::Motion::kTraverse;
  scene.num_objects = 4;
  scene.frames = 120;
  scene.seed = 5;
  scene.stop_percent = 0;
  ASSERT_TRUE(synth::write_synthetic_clip(scene, dir.file("clip.avi"), dir.file("truth.jsonl")));
  // Worked out from the truth: one triangle right to left (in), a cross, a square and a disc left
  // to right (out).
  const auto expected = truth_crossings(dir.file("truth.jsonl"), 160);
  ASSERT_EQ(expected.at("in"), (std::map<std::string, int>{{"triangle", 1}}));
  ASSERT_EQ(expected.at("out"), (std::map<std::string, int>{{"cross", 1}, {"disc", 1}, {"square", 1}}));

  auto r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", dir.file("clip.avi"), "--line", "mid:160,0,160,192", "--zone",
                               "right:0.5,0,1,0,1,1,0.5,1", "--events", dir.file("events.jsonl"), "--profile-json",
                               dir.file("profile.json"), "--report", dir.file("report.html")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("line mid (" + dir.file("clip.avi") + "): in 1 (triangle 1), out 3 (cross 1 disc 1 square 1)"),
            std::string::npos)
      << r.err;

  const auto events = read_jsonl(dir.file("events.jsonl"));
  std::map<std::string, std::map<std::string, int>> crossed;
  int entered = 0, left = 0;
  double dwell_max = 0;
  std::map<int64_t, int> inside;  // track -> entries - exits
  for (const auto& e : events) {
    EXPECT_EQ(e["source"], dir.file("clip.avi"));
    const std::string kind = e["event"];
    if (kind == "crossed") {
      EXPECT_EQ(e["line"], "mid");
      ++crossed[e["direction"].get<std::string>()][e["class_name"].get<std::string>()];
    } else if (kind == "entered") {
      EXPECT_EQ(e["zone"], "right");
      ++entered;
      EXPECT_EQ(++inside[e["track_id"].get<int64_t>()], 1);
    } else {
      ASSERT_EQ(kind, "left");
      ++left;
      EXPECT_EQ(--inside[e["track_id"].get<int64_t>()], 0);
      dwell_max = std::max(dwell_max, e["dwell_ms"].get<double>());
    }
    EXPECT_GE(e["frame"].get<int64_t>(), 0);
    EXPECT_GE(e["timestamp_ms"].get<double>(), 0);
  }
  EXPECT_EQ(crossed, expected);

  const auto profile = nlohmann::json::parse(test::read_file(dir.file("profile.json")));
  const auto& line = profile["counting"]["lines"].at(0);
  EXPECT_EQ(line["line"], "mid");
  EXPECT_EQ(line["in"], 1);
  EXPECT_EQ(line["out"], 3);
  EXPECT_EQ(line["out_by_class"]["square"], 1);
  const auto& zone = profile["counting"]["zones"].at(0);
  EXPECT_EQ(zone["entries"], entered);
  EXPECT_EQ(zone["exits"], left);
  EXPECT_EQ(zone["occupancy"], entered - left);
  EXPECT_GE(entered, 4);  // every object of the clip goes through the right half
  EXPECT_NEAR(zone["dwell_max_ms"].get<double>(), dwell_max, 0.05);
  // The HTML report has the counts in its data and a table for them.
  const std::string page = test::read_file(dir.file("report.html"));
  EXPECT_NE(page.find("<table id=\"counting\""), std::string::npos);
  EXPECT_NE(page.find("\"in_by_class\""), std::string::npos);
}

// A Redis sink gets each event as an entry of its own in STREAM:events, the same JSON as the file.
TEST(LinesZonesCli, EventsGoToTheRedisSinkAsEntriesOfTheirOwn) {
  if (!test::redis_server_available()) GTEST_SKIP() << "no " << test::kRedisServerPath;
  test::RedisServer server;
  ASSERT_TRUE(server.start());
  test::TempDir dir;
  auto r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=320,h=192,frames=60,seed=3", "--line", "mid:0.5,0,0.5,1",
                               "--zone", "left:0,0,160,0,160,192,0,192", "--events", dir.file("events.jsonl"), "--sink",
                               server.uri("dets"), "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> file_lines;
  std::ifstream in(dir.file("events.jsonl"));
  for (std::string line; std::getline(in, line);) file_lines.push_back(line);
  ASSERT_GE(file_lines.size(), 3u);  // worked out by a run: entries at the first frame, crossings later
  auto client = transport::RedisClient::connect(*transport::parse_redis_uri(server.uri("dets:events"), std::nullopt),
                                                std::chrono::milliseconds(2000));
  ASSERT_TRUE(client) << client.error().message;
  ASSERT_TRUE(client->xgroup_create("dets:events", "check", "0"));
  auto entries = client->xreadgroup("check", "c", "dets:events", 10000, 0, ">");
  ASSERT_TRUE(entries) << entries.error().message;
  ASSERT_EQ(entries->size(), file_lines.size());
  for (size_t i = 0; i < file_lines.size(); ++i) {
    ASSERT_EQ((*entries)[i].fields.size(), 1u);
    EXPECT_EQ((*entries)[i].fields[0].first, "event");
    EXPECT_EQ((*entries)[i].fields[0].second, file_lines[i]);
  }
  EXPECT_EQ(*client->xlen("dets"), 60);  // the detections' stream as before: one entry per frame
}

TEST(LinesZonesCli, APrefixPutsALineOnOneSourceOnly) {
  test::TempDir dir;
  const std::string a = "synth:w=320,h=192,frames=30,seed=3", b = "synth:w=320,h=192,frames=30,seed=4";
  auto r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", a, "-s", b, "--line", "1/mid:0.5,0,0.5,1", "--events",
                               dir.file("events.jsonl"), "--profile-json", dir.file("profile.json"), "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto profile = nlohmann::json::parse(test::read_file(dir.file("profile.json")));
  ASSERT_EQ(profile["counting"]["lines"].size(), 1u);
  EXPECT_EQ(profile["counting"]["lines"][0]["source"], b);
  for (const auto& e : read_jsonl(dir.file("events.jsonl"))) EXPECT_EQ(e["source"], b);
}

TEST(LinesZonesCli, BadLinesAndZonesAreRefusedBeforeAnythingIsWritten) {
  test::TempDir dir;
  const std::string synth = "synth:w=320,h=192,frames=5";
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--line", "door:1,2,3"}, "streamdet: error: --line door:1,2,3: a line needs 4 numbers (x1,y1,x2,y2), got 3"},
           {{"--zone", "bay:1,2,3,4"}, "streamdet: error: --zone bay:1,2,3,4: a zone needs at least 3 points (6 numbers), got 2"},
           {{"--line", "door:0,0,400,0"},
            "streamdet: error: --line door:0,0,400,0: point (400,0) is outside source " + synth + "'s 320x192 frame"},
           {{"--line", "cam9/door:0,0,10,0"}, "no source is named cam9"},
           {{"--zone", "bay:0,0,10,0,10,10", "--zone", "bay:0,0,20,0,20,20"}, "a zone named bay is already on source"},
           {{"--line", "door:0,0,10,0", "--track", "off"}, "--line door:0,0,10,0: lines and zones count tracks, and --track is off"},
           {{"--line", "5/door:0,0,10,0"}, "--line 5/door:0,0,10,0: no source is named 5 (the sources: 0 or synth_w_320_h_192_frames_5)"},
           {{}, "--events " + dir.file("e.jsonl") + ": no --line or --zone to report"}}) {
    std::vector<std::string> full{"run", "-m", kTinyModel, "-s", synth, "-d", dir.file("d.jsonl"), "--events",
                                  dir.file("e.jsonl"), "--profile-json", dir.file("p.json")};
    full.insert(full.end(), args.begin(), args.end());
    auto r = test::run_cli(dir, full);
    const std::string what = args.empty() ? "--events alone" : args[1];
    EXPECT_EQ(r.code, 2) << what << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(test::nonempty_lines(r.err).size(), 1u) << r.err;
    for (const char* f : {"d.jsonl", "e.jsonl", "p.json"}) EXPECT_FALSE(std::filesystem::exists(dir.file(f))) << what << ": " << f;
  }
}

}  // namespace
}  // namespace sd
