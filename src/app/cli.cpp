#include "app/cli.h"

#include <CLI/CLI.hpp>

namespace sd {

int cli_main(int argc, char** argv) {
  CLI::App app{"streamdet: real-time object detection for video"};
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}

}  // namespace sd
