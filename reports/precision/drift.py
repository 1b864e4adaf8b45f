#!/usr/bin/env python3
"""How far apart in time a ladder's cells drift, from its ladder files (the summary rows of
decode_tok_s, analysis passes only):

- a cell's residual sd after the arm means and the pass means (the report's additive model,
  `paired noise` / sqrt 2), and after a linear and a quadratic trend in time within each pass;
- the variogram: the sd a cell's residual (after the arm means) would need for cells L apart in
  time to differ as much as they do, sqrt(mean (x[i+L] - x[i])^2 / 2), L = 1, 2, 4, ...

    python3 reports/precision/drift.py raw/precision-sweep-h200_h100-010b86f.csv ...
"""
import csv
import math
import sys
from datetime import datetime

import numpy as np


def cells(path):
    lines = (line for line in open(path) if not line.startswith("#"))
    rows = [r for r in csv.DictReader(lines) if int(r["ladder_pass"]) >= 1]
    # One row a cell: the summary (ladder_row 0 or empty; repetition rows follow it).
    rows = [r for r in rows if r["ladder_row"] in ("", "0", "summary")]
    return sorted(rows, key=lambda r: r["ladder_started"])


def started(row):
    return datetime.fromisoformat(row["ladder_started"].replace("Z", "+00:00")).timestamp()


def residual_sd(rows, degree):
    """The residual sd of 100 ln x on the arms and, within each pass, a polynomial in time."""
    y = np.array([100 * math.log(float(r["decode_tok_s"])) for r in rows])
    arms = sorted({r["ladder_arm"] for r in rows})
    columns = []
    for p in sorted({r["ladder_pass"] for r in rows}):
        at = [i for i, r in enumerate(rows) if r["ladder_pass"] == p]
        t = np.array([started(rows[i]) for i in at])
        t = (t - t.mean()) / (t.std() or 1.0)
        for d in range(degree + 1):
            c = np.zeros(len(rows))
            c[at] = t**d
            columns.append(c)
    for a in arms[1:]:
        columns.append(np.array([1.0 if r["ladder_arm"] == a else 0.0 for r in rows]))
    x = np.array(columns).T
    beta, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)
    e = y - x @ beta
    df = len(y) - rank
    return (math.sqrt(e @ e / df) if df > 0 else None), df


def variogram(rows):
    arms = {r["ladder_arm"] for r in rows}
    logs = [100 * math.log(float(r["decode_tok_s"])) for r in rows]
    mean = {a: np.mean([v for v, r in zip(logs, rows) if r["ladder_arm"] == a]) for a in arms}
    x = [v - mean[r["ladder_arm"]] for v, r in zip(logs, rows)]
    lags = [lag for lag in (1, 2, 4, 8, 16, 32, 64) if lag < len(x) - 2]
    return [(lag, math.sqrt(np.mean([(x[i + lag] - x[i]) ** 2 for i in range(len(x) - lag)]) / 2)) for lag in lags]


for path in sys.argv[1:]:
    rows = cells(path)
    print(f"{path}: {len(rows)} cells")
    for degree, what in [(0, "pass means"), (1, "a linear trend a pass"), (2, "a quadratic trend a pass")]:
        sd, df = residual_sd(rows, degree)
        shown = f"{sd:.4f} %" if sd is not None else "none (a pass has too few cells)"
        print(f"  residual sd after the arms and {what}: {shown} ({df} df)")
    print("  variogram:", "  ".join(f"L{lag} {sd:.3f} %" for lag, sd in variogram(rows)))
