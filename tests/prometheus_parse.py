#!/usr/bin/env python3
"""Parses a Prometheus text exposition file with prometheus_client's own parser (Debian's
python3-prometheus-client) and checks what streamdet promises: every family named streamdet_*,
every histogram's buckets cumulative and ending in +Inf equal to _count. Prints one line per
family; exits 0 when all is well, 1 on a problem, 77 when the parser is not installed."""
import math
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("prometheus_client is not installed (Debian: python3-prometheus-client)")
    sys.exit(77)


def main(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    families = list(text_string_to_metric_families(text))
    if not families:
        print("no metric families")
        return 1
    for fam in families:
        if not fam.name.startswith("streamdet_"):
            print(f"{fam.name}: not prefixed streamdet_")
            return 1
        print(f"{fam.type} {fam.name} {len(fam.samples)}")
        if fam.type != "histogram":
            continue
        series = {}
        for s in fam.samples:
            key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
            series.setdefault(key, {"buckets": [], "count": None})
            if s.name.endswith("_bucket"):
                series[key]["buckets"].append((float(s.labels["le"]), s.value))
            elif s.name.endswith("_count"):
                series[key]["count"] = s.value
        for key, h in series.items():
            values = [v for _, v in h["buckets"]]
            if values != sorted(values) or not h["buckets"] or not math.isinf(h["buckets"][-1][0]):
                print(f"{fam.name}{dict(key)}: buckets not cumulative or no +Inf: {h['buckets']}")
                return 1
            if h["count"] != values[-1]:
                print(f"{fam.name}{dict(key)}: _count {h['count']} != +Inf bucket {values[-1]}")
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
