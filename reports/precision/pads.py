#!/usr/bin/env python3
"""How many of a pad sweep's known effects its intervals hold, and how far off they read.

Reads the CSV summaries of `analyze report --csv` (one row per arm and metric). An arm named
`pad-P` runs ENGINE_DECODE_PAD_PCT=P against a base at P = 0, so its true effect on decode tok/s
is 100·(1/(1 + P/100) − 1) %. Per ladder file: the pads inside their intervals and the mean of
estimate − truth (every pad shares the base's cells, so that mean is a pad's common bias, not a
precise one). Given several ladders, the total over them last.

    python3 reports/precision/pads.py reports/precision/precision-sweep-self-timed-pad-h100.csv
"""
import csv
import sys
from collections import defaultdict


def truth(pct):
    return 100.0 * (1.0 / (1.0 + pct / 100.0) - 1.0)


def main(paths):
    per_file = defaultdict(list)
    for path in paths:
        with open(path) as f:
            for row in csv.DictReader(f):
                arm = row["arm"]
                if row["metric"] != "decode_tok_s" or not arm.startswith("pad-"):
                    continue
                try:
                    pct = float(arm[len("pad-"):])
                except ValueError:
                    continue  # pad-0-again, the reflexive control
                t = truth(pct)
                low, high = float(row["ci_low_pct"]), float(row["ci_high_pct"])
                per_file[row["file"]].append((low <= t <= high, float(row["estimate_pct"]) - t))
    for file, pads in per_file.items():
        inside = sum(ok for ok, _ in pads)
        bias = sum(d for _, d in pads) / len(pads)
        print(f"{file}: {inside} of {len(pads)} pads inside, estimate − truth {bias:+.4f} % on average")
    if len(per_file) > 1:
        # Every pad of a ladder shares its base's cells, so the misses come ladder by ladder:
        # the total is a count, not a binomial sample of independent intervals.
        every = [ok for pads in per_file.values() for ok, _ in pads]
        print(f"{len(per_file)} ladders: {sum(every)} of {len(every)} pads inside")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
