#!/usr/bin/env bash
# Renders a run's --report in headless Chromium, as a user opening the file would: the page's
# script must draw the timeline (its canvas gets data-spans-drawn > 0), fill the stage table and
# show the verdict; a screenshot is saved beside the report. Skips (exit 77) where Chromium is not
# installed. Usage: report_in_browser.sh STREAMDET MODEL OUT_DIR
set -euo pipefail
streamdet=$1 model=$2 out=$3
chromium=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $chromium ]]; then
  echo "SKIP: chromium is not installed (scripts/install-deps.sh installs it)"
  exit 77
fi
rm -rf "$out" && mkdir -p "$out"
"$streamdet" run -m "$model" -s "synth:w=320,h=192,frames=60" -d "$out/d.jsonl" --report "$out/report.html" -q

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile" --window-size=1200,1500)
dom=$(timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$out/report.html" 2>"$out/chromium.log")
drawn=$(grep -o 'data-spans-drawn="[0-9]*"' <<<"$dom" | grep -o '[0-9][0-9]*' || true)
if [[ -z $drawn || $drawn -le 0 ]]; then
  echo "FAIL: the timeline was not drawn (data-spans-drawn: '${drawn}')"
  exit 1
fi
if ! grep -q '<td>inference</td>' <<<"$dom"; then
  echo "FAIL: the stage table has no inference row"
  exit 1
fi
if ! grep -q 'class="verdict" id="verdict">[a-zA-Z]' <<<"$dom"; then
  echo "FAIL: the verdict is empty"
  exit 1
fi
timeout 120 "$chromium" "${flags[@]}" --screenshot="$out/report.png" "file://$out/report.html" 2>>"$out/chromium.log"
if [[ ! -s $out/report.png ]]; then
  echo "FAIL: no screenshot"
  exit 1
fi
echo "report rendered: timeline drew $drawn spans; screenshot $out/report.png"
