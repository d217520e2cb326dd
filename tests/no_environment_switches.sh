#!/usr/bin/env bash
# Production code reads no environment variable as a switch: what users may need is an option,
# what benchmarks need is a bench flag. The one exception is the display the live view opens on
# (DISPLAY / WAYLAND_DISPLAY), which is how every GUI program finds its screen, and REDISCLI_AUTH,
# the Redis password as redis-cli takes it (a credential kept off the command line), read where `run`'s options are
# resolved (app/run_command_options.cpp, for the command and the Python module alike).
set -euo pipefail
src="$1/src"
found=$(grep -rnE 'getenv|secure_getenv|environ\b' "$src" | grep -vE 'live_view\.cpp:.*getenv\("(DISPLAY|WAYLAND_DISPLAY)"\)' \
  | grep -vE 'app/run_command_options\.cpp:.*getenv\("REDISCLI_AUTH"\)' || true)
if [[ -n "$found" ]]; then
  echo "environment variables read by production code (make them options):"
  echo "$found"
  exit 1
fi
echo "no environment switches in $src"
