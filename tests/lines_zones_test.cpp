// Line and zone counting (analytics/lines_zones.h, analytics/place_specs.h): the geometry, and
// counting cases each worked out by hand (positions are the boxes' bottom centres).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "analytics/lines_zones.h"
#include "analytics/place_specs.h"
#include "runtime/live_stats.h"
#include "serve/metrics_text.h"

namespace sd {
namespace {

// A 10x10 box standing on (x, y): its bottom centre is exactly (x, y).
Detection standing_at(double x, double y, int64_t track, int class_id = 0) {
  Detection d;
  d.x1 = static_cast<float>(x - 5);
  d.x2 = static_cast<float>(x + 5);
  d.y1 = static_cast<float>(y - 10);
  d.y2 = static_cast<float>(y);
  d.score = 0.9f;
  d.class_id = class_id;
  d.track_id = track;
  return d;
}

// The line x = 50 drawn downward, from (50, 0) to (50, 100): its right (as a walker going down
// sees it) is the picture's left, so "in" is moving right to left on the picture.
SourcePlaces gate() { return {{{"gate", {50, 0}, {50, 100}}}, {}}; }
SourcePlaces bay() { return {{}, {{"bay", {{100, 100}, {200, 100}, {200, 200}, {100, 200}}}}}; }

struct Feed {
  PlaceCounter counter;
  std::vector<CountEvent> events;
  int64_t frame = 0;
  // One frame every 100 ms.
  void step(const Detections& d) { counter.update(d, frame, 100.0 * static_cast<double>(frame), events), ++frame; }
  void walk(std::vector<double> xs, double y, int64_t track, int class_id = 0) {
    for (double x : xs) step({standing_at(x, y, track, class_id)});
  }
};

Feed feed(SourcePlaces places, double band_px = 1, double forget_ms = 1000) {
  return Feed{PlaceCounter(0, "cam", std::move(places), {"person", "car"}, band_px, forget_ms), {}};
}

TEST(LinesZonesGeometry, SignedDistanceIsPositiveOnTheWalkersRight) {
  // Walking right along y = 0 (y points down): the right is below.
  EXPECT_DOUBLE_EQ(signed_distance({0, 0}, {10, 0}, {5, 3}), 3);
  EXPECT_DOUBLE_EQ(signed_distance({0, 0}, {10, 0}, {5, -2}), -2);
  // Walking down x = 50: the right is the picture's left.
  EXPECT_DOUBLE_EQ(signed_distance({50, 0}, {50, 100}, {40, 10}), 10);
}

TEST(LinesZonesGeometry, APathCrossesTheSegmentOnlyBetweenItsEnds) {
  EXPECT_TRUE(path_crosses_segment({0, 0}, {0, 10}, {-1, 5}, {1, 5}));
  EXPECT_TRUE(path_crosses_segment({0, 0}, {0, 10}, {1, 0}, {-1, 0}));  // through an end
  EXPECT_FALSE(path_crosses_segment({0, 0}, {0, 10}, {-1, 15}, {1, 15}));  // beside the end
  EXPECT_FALSE(path_crosses_segment({0, 0}, {0, 10}, {-1, 5}, {-2, 5}));  // same side
}

TEST(LinesZonesGeometry, InsideAPolygonAndTheDistanceToItsEdge) {
  const std::vector<Point2> square{{0, 0}, {10, 0}, {10, 10}, {0, 10}};
  EXPECT_TRUE(inside_polygon(square, {5, 5}));
  EXPECT_FALSE(inside_polygon(square, {15, 5}));
  const std::vector<Point2> triangle{{0, 0}, {10, 0}, {0, 10}};
  EXPECT_TRUE(inside_polygon(triangle, {2, 2}));
  EXPECT_FALSE(inside_polygon(triangle, {6, 6}));
  EXPECT_DOUBLE_EQ(distance_to_polygon_edge(square, {5, 5}), 5);
  EXPECT_DOUBLE_EQ(distance_to_polygon_edge(square, {12, 5}), 2);
  EXPECT_DOUBLE_EQ(distance_to_polygon_edge(square, {13, 14}), 5);  // to the corner (10, 10)
}

TEST(LinesZonesGeometry, ATracksPositionIsItsBoxsBottomCentre) {
  Detection d;
  d.x1 = 10, d.y1 = 20, d.x2 = 30, d.y2 = 60;
  EXPECT_DOUBLE_EQ(track_point(d).x, 20);
  EXPECT_DOUBLE_EQ(track_point(d).y, 60);
  EXPECT_DOUBLE_EQ(default_band_px(320, 240), 2);  // 0.5% of the 400-pixel diagonal
  EXPECT_DOUBLE_EQ(default_band_px(100, 0), 1);    // at least a pixel
}

TEST(LineCounting, CrossingsBothWaysAreCountedByDirectionAndClass) {
  Feed f = feed(gate());
  f.walk({30, 40, 60, 70}, 50, /*track=*/1, /*class: car*/ 1);  // left to right on the picture: out, at frame 2
  f.walk({70, 55, 45}, 50, /*track=*/2, /*person*/ 0);          // right to left: in, at frame 6
  ASSERT_EQ(f.events.size(), 2u);
  EXPECT_EQ(f.events[0].kind, CountEventKind::kCrossed);
  EXPECT_STREQ(f.events[0].direction, "out");
  EXPECT_EQ(f.events[0].track_id, 1);
  EXPECT_EQ(f.events[0].class_name, "car");
  EXPECT_EQ(f.events[0].frame, 2);
  EXPECT_DOUBLE_EQ(f.events[0].timestamp_ms, 200);
  EXPECT_STREQ(f.events[1].direction, "in");
  EXPECT_EQ(f.events[1].track_id, 2);
  EXPECT_EQ(f.events[1].frame, 6);
  const CountingReport r = f.counter.counts();
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_EQ(r.lines[0].in(), 1);
  EXPECT_EQ(r.lines[0].out(), 1);
  EXPECT_EQ(r.lines[0].in_by_class.at("person"), 1);
  EXPECT_EQ(r.lines[0].out_by_class.at("car"), 1);
}

TEST(LineCounting, ATrackTouchingTheLineAndGoingBackCountsNothing) {
  Feed f = feed(gate(), /*band_px=*/1);
  f.walk({40, 45, 49.5, 50, 50.8, 45, 40}, 50, 1);  // up to 0.8 px past the line: inside the band
  EXPECT_TRUE(f.events.empty());
  EXPECT_EQ(f.counter.counts().lines[0].in() + f.counter.counts().lines[0].out(), 0);
}

TEST(LineCounting, JitterOnTheLineCountsNothingAndJitterAcrossItOnceEachWay) {
  Feed f = feed(gate(), /*band_px=*/2);
  f.walk({48.5, 51.5, 48.5, 51.5, 48.5, 51.5}, 50, 1);  // within the 2 px band: never on a side
  EXPECT_TRUE(f.events.empty());
  // Past the band each time: out (45 -> 55), in (55 -> 45), then nothing more: once per direction.
  f.walk({45, 55, 45, 55, 45, 55, 45}, 50, 2);
  ASSERT_EQ(f.events.size(), 2u);
  EXPECT_STREQ(f.events[0].direction, "out");
  EXPECT_STREQ(f.events[1].direction, "in");
}

// A track that has just crossed and whose box shrinks to the part still seen (an object passing
// in front of it) moves its bottom centre back over the line by a little: not a crossing back.
// The bundled detector trained on tracking clips did this on the CLI test's clip: a 67 px wide
// triangle's box shrank to 39 px while a cross passed in front, its centre 2.5 px back over the
// line, and it was counted in and then out.
TEST(LineCounting, ACrossedTracksBoxShrinkingBackOverTheLineIsNoCrossingBack) {
  Feed f = feed(gate(), /*band_px=*/1.9);
  auto box = [](double x1, double x2, int64_t track) {
    Detection d = standing_at((x1 + x2) / 2, 50, track);
    d.x1 = static_cast<float>(x1), d.x2 = static_cast<float>(x2);
    return d;
  };
  for (double x : {120.0, 100.0, 80.0, 60.0, 40.0}) f.step({box(x - 33, x + 33, 1)});  // right to left: in
  f.step({box(33, 72, 1)});  // the box's left part hidden: its centre at 52.5, 2.5 px back over the line
  f.step({box(30, 70, 1)});
  f.step({box(7, 73, 1)});   // whole again
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_STREQ(f.events[0].direction, "in");
  // Going back for real (beyond a quarter of the box's width past the line) is a crossing back.
  for (double x : {50.0, 60.0, 75.0}) f.step({box(x - 33, x + 33, 1)});
  ASSERT_EQ(f.events.size(), 2u);
  EXPECT_STREQ(f.events[1].direction, "out");
}

TEST(LineCounting, SittingInTheBandThenGoingOverCountsOnce) {
  Feed f = feed(gate(), /*band_px=*/2);
  f.walk({40, 49, 50, 51, 50, 49.5, 51, 60}, 50, 1);
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_STREQ(f.events[0].direction, "out");
  EXPECT_EQ(f.events[0].frame, 7);  // counted where it left the band on the other side
}

TEST(LineCounting, PassingBesideTheLinesEndIsNoCrossingAndNewTracksStartOnASide) {
  Feed f = feed(gate());
  f.walk({40, 60}, 150, 1);  // below the segment's lower end (y 100)
  f.walk({60}, 50, 2);       // born on the right of the picture: no crossing yet
  f.walk({40}, 50, 3);
  f.step({standing_at(40, 50, -1), standing_at(60, 50, -1)});  // untracked boxes are not counted
  EXPECT_TRUE(f.events.empty());
}

TEST(ZoneCounting, AZoneEnteredAndLeftGivesTheDwellTime) {
  Feed f = feed(bay());
  f.walk({50, 150, 160, 250}, 150, 1, 1);  // outside, in at frame 1 (100 ms), out at frame 3 (300 ms)
  ASSERT_EQ(f.events.size(), 2u);
  EXPECT_EQ(f.events[0].kind, CountEventKind::kEntered);
  EXPECT_EQ(f.events[0].frame, 1);
  EXPECT_EQ(f.events[0].class_name, "car");
  EXPECT_EQ(f.events[1].kind, CountEventKind::kLeft);
  EXPECT_EQ(f.events[1].frame, 3);
  EXPECT_DOUBLE_EQ(f.events[1].dwell_ms, 200);
  const ZoneCounts z = f.counter.counts().zones[0];
  EXPECT_EQ(z.entries, 1);
  EXPECT_EQ(z.exits, 1);
  EXPECT_EQ(z.occupancy, 0);
  EXPECT_DOUBLE_EQ(z.dwell_max_ms, 200);
  EXPECT_DOUBLE_EQ(z.dwell_mean_ms(), 200);
}

TEST(ZoneCounting, ATrackBornInsideCountsAsAnEntryAndOccupancyFollows) {
  Feed f = feed(bay());
  f.step({standing_at(150, 150, 1), standing_at(120, 180, 2), standing_at(20, 20, 3)});  // 1, 2 born inside
  EXPECT_EQ(f.counter.counts().zones[0].occupancy, 2);
  f.step({standing_at(150, 150, 1), standing_at(250, 180, 2), standing_at(20, 20, 3)});  // 2 leaves after 100 ms
  f.step({standing_at(150, 150, 1), standing_at(250, 180, 2), standing_at(150, 120, 3)});  // 3 comes in
  ASSERT_EQ(f.events.size(), 4u);
  EXPECT_EQ(f.events[0].kind, CountEventKind::kEntered);
  EXPECT_EQ(f.events[0].frame, 0);
  EXPECT_EQ(f.events[2].kind, CountEventKind::kLeft);
  EXPECT_DOUBLE_EQ(f.events[2].dwell_ms, 100);
  EXPECT_EQ(f.events[3].track_id, 3);
  const ZoneCounts z = f.counter.counts().zones[0];
  EXPECT_EQ(z.entries, 3);
  EXPECT_EQ(z.exits, 1);
  EXPECT_EQ(z.occupancy, 2);
}

TEST(ZoneCounting, JitterOnTheEdgeEntersOnce) {
  Feed f = feed(bay(), /*band_px=*/2);
  f.walk({99, 101, 99, 101, 99}, 150, 1);  // on the left edge, within the band: nothing
  EXPECT_TRUE(f.events.empty());
  f.walk({90, 105, 99, 105, 99, 105}, 150, 2);  // in once past the band, never out past it
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_EQ(f.events[0].kind, CountEventKind::kEntered);
}

TEST(ZoneCounting, ATrackThatVanishesInsideLeavesWhenTheTrackerDropsIt) {
  Feed f = feed(bay(), 1, /*forget_ms=*/500);
  f.walk({150, 150}, 150, 1);  // seen at 0 and 100 ms
  f.step({});                  // 200 ms
  f.step({});                  // 300 ms
  f.step({});                  // 400 ms
  f.step({});                  // 500 ms
  f.step({});                  // 600 ms: unseen for 500 ms, not longer
  ASSERT_EQ(f.events.size(), 1u);
  f.step({});  // 700 ms: gone; it left when last seen
  ASSERT_EQ(f.events.size(), 2u);
  EXPECT_EQ(f.events[1].kind, CountEventKind::kLeft);
  EXPECT_EQ(f.events[1].frame, 1);
  EXPECT_DOUBLE_EQ(f.events[1].timestamp_ms, 100);
  EXPECT_DOUBLE_EQ(f.events[1].dwell_ms, 100);
  EXPECT_EQ(f.counter.counts().zones[0].occupancy, 0);
}

TEST(PlaceSpecs, PixelsOrFractionsAndAnOptionalSource) {
  auto line = parse_place_spec(false, "cam1/door:0.5,0,0.5,1");
  ASSERT_TRUE(line) << line.error().message;
  EXPECT_EQ(line->source, "cam1");
  EXPECT_EQ(line->name, "door");
  EXPECT_TRUE(line->fractions);  // all in [0, 1], one with a decimal point
  auto pixels = parse_place_spec(false, "door:0,0,1,1");
  ASSERT_TRUE(pixels);
  EXPECT_FALSE(pixels->fractions);  // no decimal point: a one-pixel line
  auto mixed = parse_place_spec(false, "door:0.5,0,100,1");
  ASSERT_TRUE(mixed);
  EXPECT_FALSE(mixed->fractions);
  auto zone = parse_place_spec(true, "bay:0,0,10,0,10,10");
  ASSERT_TRUE(zone);
  EXPECT_EQ(zone->numbers.size(), 6u);
  EXPECT_TRUE(zone->source.empty());

  const std::vector<PlaceSource> sources{{"a.mp4", "a", 320, 200, true}, {"b.mp4", "b", 640, 400, true}};
  auto places = resolve_places({*parse_place_spec(false, "b/door:0.5,0,0.5,1"), *zone}, sources);
  ASSERT_TRUE(places) << places.error().message;
  ASSERT_EQ(places->size(), 2u);
  EXPECT_TRUE((*places)[0].lines.empty());
  ASSERT_EQ((*places)[1].lines.size(), 1u);
  EXPECT_DOUBLE_EQ((*places)[1].lines[0].a.x, 320);
  EXPECT_DOUBLE_EQ((*places)[1].lines[0].b.y, 400);
  EXPECT_EQ((*places)[0].zones.size(), 1u);  // no prefix: every source
  EXPECT_EQ((*places)[1].zones.size(), 1u);
  auto by_index = resolve_places({*parse_place_spec(false, "0/door:1,1,5,5")}, sources);
  ASSERT_TRUE(by_index);
  EXPECT_EQ((*by_index)[0].lines.size(), 1u);
  EXPECT_TRUE((*by_index)[1].lines.empty());
}

TEST(PlaceSpecs, BadInputIsOneLineNamingTheOption) {
  for (const auto& [zone, text, message] : std::vector<std::tuple<bool, std::string, std::string>>{
           {false, "door:1,2,3", "--line door:1,2,3: a line needs 4 numbers (x1,y1,x2,y2), got 3"},
           {false, "door:1,2,3,4,5", "a line needs 4 numbers"},
           {true, "bay:1,2,3,4", "--zone bay:1,2,3,4: a zone needs at least 3 points (6 numbers), got 2"},
           {true, "bay:1,2,3,4,5,6,7", "a zone's numbers are x,y pairs, got 7 numbers"},
           {false, "door:1,x,3,4", "'x' is not a number"},
           {false, "door:1,,3,4", "'' is not a number"},
           {false, "door:1,nan,3,4", "'nan' is not a number"},
           {false, "1,2,3,4", "expected [SOURCE/]NAME:x1,y1,x2,y2"},
           {false, "a b:1,2,3,4", "the name 'a b' must be"},
           {false, "/door:1,2,3,4", "empty source"},
           {false, "door:5,5,5,5", "the line's two points are the same"}}) {
    auto spec = parse_place_spec(zone, text);
    ASSERT_FALSE(spec) << text;
    EXPECT_EQ(spec.error().code, ErrorCode::kUsage);
    EXPECT_NE(spec.error().message.find(message), std::string::npos) << spec.error().message;
    EXPECT_EQ(spec.error().message.find('\n'), std::string::npos);
  }
  const std::vector<PlaceSource> sources{{"a.mp4", "a", 320, 200, true}, {"img/", "img", 320, 200, false}};
  auto resolve_one = [&](bool zone, const std::string& text) { return resolve_places({*parse_place_spec(zone, text)}, sources); };
  auto outside = resolve_one(false, "0/door:0,0,321,0");
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().message, "--line 0/door:0,0,321,0: point (321,0) is outside source a.mp4's 320x200 frame");
  auto nobody = resolve_one(false, "cam9/door:0,0,10,0");
  ASSERT_FALSE(nobody);
  EXPECT_NE(nobody.error().message.find("no source is named cam9 (the sources: 0 or a, 1 or img)"), std::string::npos);
  auto untracked = resolve_one(true, "img/bay:0,0,10,0,10,10");
  ASSERT_FALSE(untracked);
  EXPECT_NE(untracked.error().message.find("source img/ is not tracked"), std::string::npos);
  auto twice = resolve_places({*parse_place_spec(false, "0/door:0,0,10,0"), *parse_place_spec(false, "a/door:0,5,10,5")}, sources);
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("--line a/door:0,5,10,5: a line named door is already on source a.mp4"), std::string::npos);
  // A line and a zone may share a name (their events and metrics say which).
  EXPECT_TRUE(resolve_places({*parse_place_spec(false, "0/door:0,0,10,0"), *parse_place_spec(true, "0/door:0,0,10,0,10,10")}, sources));
}

}  // namespace
}  // namespace sd

namespace sd {
namespace {

TEST(LinesZonesMetrics, CountsAppearInThePrometheusText) {
  LiveStats stats;
  LineCounts line{"cam.mp4", "door", {{"person", 3}}, {{"car", 2}}};
  ZoneCounts zone{"cam.mp4", "bay"};
  zone.entries = 5, zone.exits = 4, zone.occupancy = 1, zone.dwell_count = 4, zone.dwell_total_ms = 8000, zone.dwell_max_ms = 3000;
  stats.counting = {{line}, {zone}};
  const std::string text = prometheus_text(stats);
  for (const char* sample : {"streamdet_line_crossings_total{source=\"cam.mp4\",line=\"door\",direction=\"in\",class=\"person\"} 3\n",
                             "streamdet_line_crossings_total{source=\"cam.mp4\",line=\"door\",direction=\"out\",class=\"car\"} 2\n",
                             "streamdet_zone_entries_total{source=\"cam.mp4\",zone=\"bay\"} 5\n",
                             "streamdet_zone_exits_total{source=\"cam.mp4\",zone=\"bay\"} 4\n",
                             "streamdet_zone_occupancy{source=\"cam.mp4\",zone=\"bay\"} 1\n",
                             "streamdet_zone_dwell_seconds_sum{source=\"cam.mp4\",zone=\"bay\"} 8\n",
                             "streamdet_zone_dwell_seconds_count{source=\"cam.mp4\",zone=\"bay\"} 4\n"})
    EXPECT_NE(text.find(sample), std::string::npos) << sample << text;
  // No lines, no zones: no such families.
  EXPECT_EQ(prometheus_text(LiveStats{}).find("streamdet_zone"), std::string::npos);
}

}  // namespace
}  // namespace sd
