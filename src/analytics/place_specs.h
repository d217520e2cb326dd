// --line and --zone as the user writes them, and their checks:
//   --line [SOURCE/]NAME:x1,y1,x2,y2        a directed counting line
//   --zone [SOURCE/]NAME:x1,y1,x2,y2,x3,y3,...  a polygon, 3 points or more
// SOURCE is a source's index (0, 1, ...) or its name as {name} makes it (the file's stem); without
// it the line or zone is on every source. Numbers are pixels of the source's frames, or fractions
// of its width and height when every number is within [0, 1] and at least one is written with a
// decimal point (0.5,0,0.5,1 is the vertical middle line; 0,0,1,1 is a line one pixel long).
// Every problem is kUsage (exit 2), one line naming the option as given.
#pragma once

#include <string>
#include <vector>

#include "analytics/lines_zones.h"
#include "core/error.h"

namespace sd {

struct PlaceSpec {
  bool zone = false;
  std::string given;   // "--line cam1/door:0.5,0,0.5,1", for messages
  std::string source;  // the prefix; empty: every source
  std::string name;
  std::vector<double> numbers;  // x, y pairs
  bool fractions = false;
};

// The syntax alone (counts of numbers, a name), before any source is open.
Result<PlaceSpec> parse_place_spec(bool zone, const std::string& text);

struct PlaceSource {
  std::string uri;   // for messages
  std::string name;  // what {name} gives
  int width = 0, height = 0;
  bool tracked = false;
};

// Each source's lines and zones in pixels; refuses a prefix that names no source, a source that is
// not tracked, a point outside the frame, and a line or zone name used twice on one source.
Result<std::vector<SourcePlaces>> resolve_places(const std::vector<PlaceSpec>& specs, const std::vector<PlaceSource>& sources);

}  // namespace sd
