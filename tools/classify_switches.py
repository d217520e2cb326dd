#!/usr/bin/env python3
"""What each ID switch on a tracking clip was (issue 24; docs/benchmarks.md, "Tracking").

Reads a clip's ground truth (`streamdet_synth clip --truth`), the detections the tracker was fed
(`streamdet run -d` or `streamdet_synth jitter`), the tracker's output (`streamdet_synth track
--out`) and the switches the metric counted (`streamdet_synth mot --switches`), and prints one line
per switch with what happened around it and a class:

  merged      the object shared one detection box with a same-class neighbour (the box overlaps
              both by IoU >= 0.3 and neither has another box at IoU >= 0.5) in the frames between
              the old track's last frame on it (two before) and the switch: two objects crossing,
              one box for both, or the one behind hidden under the front one's box
  taken       the new track had been on another object (a same-class neighbour) until just before
              and moved over to this one while the old track was lost or moved too
  swap-back   the switch undoes one made on the same object a few frames (<= 30) before
  duplicate   the old track is still on the object (IoU >= 0.3) in the switch frame: a second box
              on one object started or fed the new track
  long-gap    the object had no track for more than the buffer (30 frames): the old track was gone
  hidden      unmatched for a while, mostly hidden (visible < 0.5) in most frames of the gap
  missed      unmatched for a while in view (visible >= 0.5) with no detection box on it
  other       none of the above

A switch can fit several; the first in the order above that fits is printed as its class, the
others after it. Usage (the files bench/track_quality.sh leaves in its OUT_DIR, S the seed, k1
every frame, k2 every 2nd dropped; its last run's tracker output and switches):

  bench/track_quality.sh OUT
  tools/classify_switches.py OUT/s1.k1 OUT/s2.k1 OUT/s3.k1   # reads PREFIX.{truth,dets,dets.tracked,
                                                             # dets.switches}.jsonl
  tools/classify_switches.py --kind jitter OUT/s1.k1         # the jittered-truth files
"""
import argparse
import collections
import json
import sys


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def read_frames(path):
    frames = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            frames[r["frame"]] = r["detections"]
    return frames


def classify_clip(prefix, kind, buffer_frames, out):
    truth = read_frames(prefix + ".truth.jsonl")
    dets = read_frames(f"{prefix}.{'jitter' if kind == 'jitter' else 'dets'}.jsonl")
    tracked = read_frames(f"{prefix}.{kind}.tracked.jsonl")
    switches = [json.loads(l) for l in open(f"{prefix}.{kind}.switches.jsonl")]
    frame_list = sorted(truth)

    # Per object: frame -> (box, class, visible, ignore); per track: frame -> box, and first frame.
    obj = collections.defaultdict(dict)
    for f, boxes in truth.items():
        for b in boxes:
            if "object_id" in b:
                obj[b["object_id"]][f] = b
    trk = collections.defaultdict(dict)
    for f, boxes in tracked.items():
        for b in boxes:
            if "track_id" in b:
                trk[b["track_id"]][f] = b

    def on(track, f, o, thr=0.5):
        t = trk[track].get(f)
        g = obj[o].get(f)
        return t is not None and g is not None and t["class_id"] == g["class_id"] and iou(t["box"], g["box"]) >= thr

    def object_on_track(track, f):
        """The truth object (not ignored first) the track's box covers best at frame f."""
        t = trk[track].get(f)
        if t is None:
            return None
        best, best_v = None, 0.3
        for g in truth.get(f, []):
            if g.get("class_id") != t["class_id"] or "object_id" not in g:
                continue
            v = iou(t["box"], g["box"])
            if v > best_v:
                best, best_v = g["object_id"], v
        return best

    counts = collections.Counter()
    last_switch = {}
    for s in switches:
        f, o, a, b = s["frame"], s["object_id"], s["from_track"], s["to_track"]
        idx = frame_list.index(f)
        # The last frame before f where the old track was on the object.
        last_a = None
        for k in range(idx - 1, -1, -1):
            if on(a, frame_list[k], o):
                last_a = frame_list[k]
                break
        gap_frames = [g for g in frame_list[frame_list.index(last_a) + 1 : idx]] if last_a is not None else []
        gap = len(gap_frames)
        vis = [obj[o][g].get("visible", 1.0) for g in gap_frames if g in obj[o]]
        hidden = sum(v < 0.5 for v in vis)
        # Frames of the gap in view with no detection box (any score) on the object.
        missed = 0
        for g in gap_frames:
            if g in obj[o] and obj[o][g].get("visible", 1.0) >= 0.5:
                tb = obj[o][g]
                if not any(d["class_id"] == tb["class_id"] and iou(d["box"], tb["box"]) >= 0.5 for d in dets.get(g, [])):
                    missed += 1
        # Merged: in the window [last_a, f], a detection box overlapping the object and a same-class
        # neighbour by IoU >= 0.3, with no other box on the object at IoU >= 0.5.
        merged_frames = 0
        window = frame_list[max(0, (frame_list.index(last_a) if last_a is not None else idx) - 2) : idx + 1]
        for g in window:
            tb = obj[o].get(g)
            if tb is None:
                continue
            same = [d for d in dets.get(g, []) if d["class_id"] == tb["class_id"]]
            neighbours = [n for n in truth.get(g, []) if n.get("object_id") not in (None, o)
                          and n["class_id"] == tb["class_id"]]
            for d in same:
                if iou(d["box"], tb["box"]) < 0.3:
                    continue
                # One box over the object and a neighbour, and neither has a box of its own.
                if any(iou(d["box"], n["box"]) >= 0.3 and
                       not any(e is not d and iou(e["box"], x["box"]) >= 0.5 for e in same for x in (tb, n))
                       for n in neighbours):
                    merged_frames += 1
                    break
        # Where the new track was before: its first frame, and the object it covered just before.
        b_first = min(trk[b]) if trk[b] else f
        b_prev_obj = None
        for k in range(idx - 1, max(-1, idx - 31), -1):
            p = object_on_track(b, frame_list[k])
            if p is not None:
                b_prev_obj = p
                break
        a_now_obj = object_on_track(a, f)
        a_alive = f in trk[a] or any(g > f for g in trk[a])
        dup = trk[a].get(f) is not None and on(a, f, o, 0.3)
        swap_back = o in last_switch and last_switch[o][1] == a and last_switch[o][2] == b and f - last_switch[o][0] <= 30

        tags = []
        if merged_frames:
            tags.append("merged")
        if b_prev_obj is not None and b_prev_obj != o:
            tags.append("taken")
        if swap_back:
            tags.append("swap-back")
        if dup:
            tags.append("duplicate")
        if gap > buffer_frames and not a_alive:
            tags.append("long-gap")
        if gap > 0 and hidden * 2 > max(1, len(vis)):
            tags.append("hidden")
        if gap > 0 and missed * 2 >= max(1, gap):
            tags.append("missed")
        if not tags:
            tags.append("other")
        counts[tags[0]] += 1
        last_switch[o] = (f, b, a)  # a switch back would go from b to a
        tb = obj[o].get(f, {})
        out.write(
            f"{prefix} f{f} obj {o} ({tb.get('class_name', '?')}) {a}->{b}: gap {gap} (hidden {hidden}, "
            f"missed in view {missed}), merged frames {merged_frames}, new track born f{b_first}"
            f"{'' if b_prev_obj is None else f' was on obj {b_prev_obj}'}, old track "
            f"{'alive' if a_alive else 'gone'}{'' if a_now_obj is None else f' on obj {a_now_obj}'}"
            f"  => {' '.join(tags)}\n")
    return counts


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("prefixes", nargs="+", help="clip prefixes, e.g. /tmp/tq/s1.k1")
    p.add_argument("--kind", default="dets", choices=["dets", "jitter"], help="which detections were tracked")
    p.add_argument("--buffer", type=int, default=30, help="the tracker's buffer in frames")
    a = p.parse_args()
    total = collections.Counter()
    for prefix in a.prefixes:
        total += classify_clip(prefix, a.kind, a.buffer, sys.stdout)
    print("classes:", ", ".join(f"{k} {v}" for k, v in total.most_common()), f"(total {sum(total.values())})")


if __name__ == "__main__":
    main()
