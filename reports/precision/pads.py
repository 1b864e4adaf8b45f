#!/usr/bin/env python3
"""How many of a pad sweep's known effects its intervals hold, and how far off they read.

Reads the CSV summaries of `analyze report --csv` (one row per arm and metric). An arm named
`pad-P` runs ENGINE_DECODE_PAD_PCT=P against a base at P = 0, so its true effect on decode tok/s
is 100·(1/(1 + P/100) − 1) %. Per ladder file: the pads inside their intervals, the mean of
estimate − truth (every pad shares the base's cells, so that mean is a pad's common bias, not a
precise one) and the reflexive arm's estimate (`pad-0-again`, the base's error alone). Given
several ladders, the total over them last, and the mean over the ladders of the pads' offset
less the reflexive's, with its standard error: what the pads read off their nominal effect
beyond the base's error.

    python3 reports/precision/pads.py reports/precision/precision-sweep-self-timed-pad-h100.csv
"""
import csv
import statistics
import sys
from collections import defaultdict


def truth(pct):
    return 100.0 * (1.0 / (1.0 + pct / 100.0) - 1.0)


def main(paths):
    per_file = defaultdict(list)
    reflexive = {}
    for path in paths:
        with open(path) as f:
            for row in csv.DictReader(f):
                arm = row["arm"]
                if row["metric"] != "decode_tok_s" or not arm.startswith("pad-"):
                    continue
                if arm == "pad-0-again":
                    reflexive[row["file"]] = float(row["estimate_pct"])
                    continue
                try:
                    pct = float(arm[len("pad-"):])
                except ValueError:
                    continue
                t = truth(pct)
                low, high = float(row["ci_low_pct"]), float(row["ci_high_pct"])
                per_file[row["file"]].append((low <= t <= high, float(row["estimate_pct"]) - t))
    beyond = []
    for file, pads in per_file.items():
        inside = sum(ok for ok, _ in pads)
        bias = sum(d for _, d in pads) / len(pads)
        words = f"{file}: {inside} of {len(pads)} pads inside, estimate − truth {bias:+.4f} % on average"
        if file in reflexive:
            words += f", the reflexive {reflexive[file]:+.4f} %"
            beyond.append(bias - reflexive[file])
        print(words)
    if len(per_file) > 1:
        # Every pad of a ladder shares its base's cells, so the misses come ladder by ladder:
        # the total is a count, not a binomial sample of independent intervals.
        every = [ok for pads in per_file.values() for ok, _ in pads]
        print(f"{len(per_file)} ladders: {sum(every)} of {len(every)} pads inside")
    if len(beyond) > 1:
        se = statistics.stdev(beyond) / len(beyond) ** 0.5
        mean = statistics.mean(beyond)
        print(f"the pads' offset less the reflexive's, over {len(beyond)} ladders: {mean:+.4f} % (se {se:.4f})")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
