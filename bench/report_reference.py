#!/usr/bin/env python3
"""A plain single-threaded Python computation of the METHOD.md figures, the yardstick for
report_bench: for every ladder file, every metric: each arm against the base and every
contrast (median, sem, t interval), the base spread and the gate, the controls, the round
split and the output identity; all written as one JSON file. Standard library only.
    python3 bench/report_reference.py target/report-bench out.json
"""
import csv
import json
import math
import statistics
import sys
import time
from pathlib import Path


def t975(df):
    """Student's t quantile at 0.975 (exact for 1 df, else Hill's 1970 series)."""
    if df == 1:
        return math.tan(math.pi * 0.475)
    a = 1.0 / (df - 0.5)
    b = 48.0 / (a * a)
    c = ((20700.0 * a / b - 98.0) * a - 16.0) * a + 96.36
    d = ((94.5 / (b + c) - 3.0) / b + 1.0) * math.sqrt(a * math.pi / 2.0) * df
    x = d * 0.05
    y = x ** (2.0 / df)
    if y > 0.05 + a:
        x = statistics.NormalDist().inv_cdf(0.025)
        y = x * x
        if df < 5:
            c += 0.3 * (df - 4.5) * (x + 0.6)
        c = (((0.05 * d * x - 5.0) * x - 7.0) * x - 2.0) * x + b + c
        y = (((((0.4 * y + 6.3) * y + 36.0) * y + 94.5) / c - y - 3.0) / b + 1.0) * x
        y = a * y * y
        y = math.expm1(y)
    else:
        y = ((1.0 / (((df + 6.0) / (df * y) - 0.089 * d - 0.822) * (df + 2.0) * 3.0)
              + 0.5 / (df + 4.0)) * y - 1.0) * (df + 1.0) / (df + 2.0) + 1.0 / y
    return math.sqrt(df * y)


def sd(xs):
    """Sample standard deviation in floats (statistics.stdev works in exact fractions)."""
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


def summary(deltas):
    m = len(deltas)
    est = statistics.median(deltas)
    sem = sd(deltas) / math.sqrt(m)
    half = t975(m - 1) * sem
    return {"estimate_pct": est, "sem_pct": sem, "ci_low_pct": est - half, "ci_high_pct": est + half,
            "n": m, "deltas_pct": deltas}


def delta(a, b, better):
    return 100 * (a / b - 1) if better == "higher" else 100 * (b / a - 1)


def ladder(path):
    lines = path.read_text().splitlines()
    start = json.loads(lines[0][len("#ladder-start "):])
    spec = start["spec"]
    arms = [a["name"] for a in start["arms"]]
    base = next(a["name"] for a in start["arms"] if a["role"] == "base")
    warm = spec.get("warmup_passes", 1)
    rows = list(csv.reader(l for l in lines[1:] if not l.startswith("#")))
    col = {n: i for i, n in enumerate(rows[0])}
    cells = {}
    for r in rows[1:]:
        first_row = "ladder_row" not in col or r[col["ladder_row"]] == "0"
        if first_row and int(r[col["ladder_pass"]]) >= warm:
            cells[(int(r[col["ladder_pass"]]), r[col["ladder_arm"]])] = r
    passes = sorted({p for p, _ in cells})
    # x[arm] = the column's values over the analysis passes, read once.
    table = lambda c: {a: [float(cells[(p, a)][col[c]]) for p in passes] for a in arms}
    out = {"file": str(path), "metrics": []}
    for metric in spec["metric"]:
        c, better = metric["column"], metric["better"]
        x = table(c)
        spread = 100 * sd(x[base]) / (sum(x[base]) / len(x[base]))
        against = lambda a, b: summary([delta(u, v, better) for u, v in zip(x[a], x[b])])
        figures = {"base_spread_pct": spread, "arms": {}, "contrasts": {}, "controls": {}}
        for a in arms:
            if a != base:
                figures["arms"][a] = against(a, base)
        for i, a in enumerate(arms):
            for b in arms[i + 1:]:
                figures["contrasts"][f"{b}-vs-{a}"] = against(b, a)
        for arm in start["arms"]:
            if arm["role"] in ("null", "reflexive"):
                est = figures["arms"][arm["name"]]["estimate_pct"]
                figures["controls"][arm["name"]] = abs(est) <= spread
        out["metrics"].append(figures)
    if "split" in spec:
        r, t = table(spec["split"]["rounds"]), table(spec["split"]["time"])
        out["split"] = {a: {"total": statistics.median(tb / ta for tb, ta in zip(t[base], t[a])),
                            "count": statistics.median(rb / ra for rb, ra in zip(r[base], r[a]))}
                        for a in arms if a != base}
    if "identity" in spec:
        ic = col[spec["identity"]["column"]]
        digests = [cells[(p, a)][ic] for p in passes for a in arms]
        same = sum(cells[(p, a)][ic] == cells[(p, base)][ic] for p in passes for a in arms if a != base)
        out["identity"] = {"identical": same, "distinct": len(set(digests))}
    return out


def main():
    paths = sorted(Path(sys.argv[1]).glob("*.csv"))
    clock = time.perf_counter()
    report = [ladder(p) for p in paths]
    with open(sys.argv[2], "w") as f:
        json.dump({"ladders": report}, f)
    seconds = time.perf_counter() - clock
    print(f"python reference: {len(report)} ladders in {seconds:.3f} s")


if __name__ == "__main__":
    main()
