#!/usr/bin/env bash
# Issue 15's throughput targets, measured with a real redis-server started here (free loopback
# port, no persistence) and the streamdet executable as users run it:
#  1. a worker fed from Redis against the same configuration reading the same clip from a file
#     (file: -d JSONL; Redis: the clip published as JPEG q90, read through a consumer group with
#     drain=1, detections XADDed to a stream): frames per second of wall time, alternating rounds,
#     the median ratio;
#  2. two workers in one group against one worker on the same stream: frames / wall time from the
#     start of the workers to the end of the last, alternating rounds, the median ratio.
# Every worker runs its inference on --threads THREADS (default 1). For 1 the workers run as users
# run them (unpinned: decode, preprocess and output threads spread over the cores). For 2 each
# worker is pinned to a core of its own with taskset, all its threads with it, and compared with
# one worker pinned the same way, so that "two workers, each with its own cores" is what is
# measured, not how one unpinned worker already spreads over every core; redis-server is not pinned.
#   bench/redis_scaling.sh ROUNDS MODEL CLIP [THREADS]
# Prints one JSON row per measurement, then the summary.
set -euo pipefail
rounds=$1 model=$2 clip=$3 threads=${4:-1}
bin=${STREAMDET_BIN:-build/streamdet}
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" --daemonize yes --pidfile "$tmp/redis.pid" >/dev/null
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
url=redis://127.0.0.1:$port
frames=$("$bin" run -m "$model" -s "$clip" -q --threads "$threads" --profile-json "$tmp/count.json" && python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['frames'])" "$tmp/count.json")

publish() {  # fresh stream, every frame of the clip
  redis-cli -p "$port" del frames dets >/dev/null
  "$bin" publish -s "$clip" --sink "$url/frames" --fps max --maxlen 0 -q
}
now() { date +%s.%N; }
row() { echo "{\"round\":$1,\"what\":\"$2\",\"frames\":$3,\"seconds\":$4,\"fps\":$(python3 -c "print(round($3/$4,2))")}" | tee -a "$tmp/rows.jsonl"; }

for ((r = 1; r <= rounds; ++r)); do
  t0=$(now)
  "$bin" run -m "$model" -s "$clip" -q --threads "$threads" -d "$tmp/d.jsonl"
  row "$r" file "$frames" "$(python3 -c "print($(now)-$t0)")"

  publish
  t0=$(now)
  "$bin" run -m "$model" -s "$url/frames?drain=1&block=10" -q --threads "$threads" --sink "$url/dets"
  row "$r" redis "$frames" "$(python3 -c "print($(now)-$t0)")"

  publish
  t0=$(now)
  taskset -c 0 "$bin" run -m "$model" -s "$url/frames?drain=1&block=10" -q --threads "$threads" --sink "$url/dets"
  row "$r" redis1 "$frames" "$(python3 -c "print($(now)-$t0)")"

  publish
  t0=$(now)
  taskset -c 0 "$bin" run -m "$model" -s "$url/frames?drain=1&block=10&consumer=a" -q --threads "$threads" --sink "$url/dets" &
  a=$!
  taskset -c 1 "$bin" run -m "$model" -s "$url/frames?drain=1&block=10&consumer=b" -q --threads "$threads" --sink "$url/dets"
  wait "$a"
  row "$r" redis2 "$frames" "$(python3 -c "print($(now)-$t0)")"
  got=$(redis-cli -p "$port" xlen dets)
  [[ $got -ge $frames ]] || { echo "two workers wrote $got detections entries for $frames frames" >&2; exit 1; }
done
python3 - "$tmp/rows.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows: by.setdefault(r["round"], {})[r["what"]] = r["fps"]
redis_over_file = sorted(v["redis"] / v["file"] for v in by.values())
two_over_one = sorted(v["redis2"] / v["redis1"] for v in by.values())
med = lambda xs: statistics.median(xs)
print(f"{len(by)} rounds: fps file {med([v['file'] for v in by.values()]):.1f}, redis {med([v['redis'] for v in by.values()]):.1f}; "
      f"pinned: redis 1 worker {med([v['redis1'] for v in by.values()]):.1f}, 2 workers {med([v['redis2'] for v in by.values()]):.1f}")
print(f"redis/file median {med(redis_over_file):.3f} (min {redis_over_file[0]:.3f}, max {redis_over_file[-1]:.3f})")
print(f"pinned, 2 workers/1 worker median {med(two_over_one):.3f} (min {two_over_one[0]:.3f}, max {two_over_one[-1]:.3f})")
PY
