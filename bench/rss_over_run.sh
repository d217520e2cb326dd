#!/usr/bin/env bash
# Memory stays bounded: runs streamdet over a long source and samples its resident set size once
# a second. Prints the samples and the drift after warm-up (first sample after 10% of the run vs
# the last, and the max). Usage:
#   bench/rss_over_run.sh build/streamdet MODEL 'synth:w=640,h=360,frames=20000' [extra run options]
set -euo pipefail
bin=$1 model=$2 source=$3
shift 3
tmp=$(mktemp -d)
"$bin" run -m "$model" -s "$source" -d "$tmp/d.jsonl" --profile-json "$tmp/p.json" -q "$@" &
pid=$!
samples=()
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [[ -n "$rss" ]] && samples+=("$rss")
  sleep 1
done
wait "$pid"
n=${#samples[@]}
echo "samples (KiB, 1/s): ${samples[*]}"
warm=$((n / 10))
first=${samples[$warm]} last=${samples[$((n - 1))]}
max=$(printf '%s\n' "${samples[@]:$warm}" | sort -n | tail -1)
frames=$(python3 -c "import json;print(json.load(open('$tmp/p.json'))['frames'])")
echo "frames $frames, $n s; RSS after warm-up $first KiB, at the end $last KiB, max $max KiB;" \
  "drift $(python3 -c "print(f'{100*($last-$first)/$first:+.2f}%')"), max over start $(python3 -c "print(f'{100*($max-$first)/$first:+.2f}%')")"
rm -rf "$tmp"
