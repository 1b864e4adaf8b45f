#!/usr/bin/env python3
"""Cost against reserve size, for each window: the decode change against `off` of every arm
of the L2 sweep, both ladders of each mode, read from the CSV summaries that `analyze report
--csv` wrote beside this script. Writes cost-vs-reserve.svg (standard library only).

    python3 reports/l2-sweep-h200/plot.py
"""
import csv
from pathlib import Path

HERE = Path(__file__).parent
RESERVES = [3.75, 11.25, 22.5, 37.5]
SERIES = [("pool", "#1f77b4"), ("slot", "#2ca02c"), ("recurrent", "#d62728"), ("sz", "#7f7f7f")]
MODES = [("plain", "plain decode"), ("mtp", "MTP, 3 drafts")]
# Each row of panels: the full range, then the reserves up to 22.5 MiB at a finer scale.
ROWS = [("all reserves", RESERVES, (-12.0, 1.0)), ("up to 22.5 MiB", RESERVES[:3], (-0.6, 0.8))]
W, H, LEFT, TOP, PW, PH = 980, 760, 70, 50, 400, 270


def readings(mode):
    """{(series, reserve): [(estimate, low, high, holm), ...]} over the mode's ladders."""
    out = {}
    with open(HERE / f"l2-sweep-{mode}-h200.csv") as f:
        for row in csv.DictReader(f):
            if row["metric"] != "decode_tok_s" or "-" not in row["arm"]:
                continue
            series, reserve = row["arm"].rsplit("-", 1)
            if series not in dict(SERIES) or row["against"] != "off":
                continue
            value = tuple(float(row[k]) for k in ("estimate_pct", "ci_low_pct", "ci_high_pct"))
            out.setdefault((series, float(reserve)), []).append(value + (row["holm_verdict"],))
    return out


def panel(svg, x0, y0, title, data, reserves, ylim):
    lo, hi = ylim
    x_of = lambda i: x0 + 30 + i * (PW - 60) / max(len(reserves) - 1, 1)
    y_of = lambda v: y0 + PH * (hi - min(max(v, lo), hi)) / (hi - lo)
    svg.append(f'<rect x="{x0}" y="{y0}" width="{PW}" height="{PH}" fill="none" stroke="#999"/>')
    svg.append(f'<text x="{x0 + PW / 2}" y="{y0 - 8}" text-anchor="middle" font-size="13">{title}</text>')
    step = 2.0 if hi - lo > 4 else 0.2
    v = step * round(lo / step)
    while v <= hi + 1e-9:
        if v >= lo - 1e-9:
            y = y_of(v)
            colour = "#000" if abs(v) < 1e-9 else "#e5e5e5"
            svg.append(f'<line x1="{x0}" x2="{x0 + PW}" y1="{y:.1f}" y2="{y:.1f}" stroke="{colour}"/>')
            svg.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{v:+.1f}</text>')
        v += step
    for i, r in enumerate(reserves):
        svg.append(f'<text x="{x_of(i):.1f}" y="{y0 + PH + 16}" text-anchor="middle" font-size="11">{r:g}</text>')
    for k, (series, colour) in enumerate(SERIES):
        points = []
        for i, r in enumerate(reserves):
            for j, (est, low, high, holm) in enumerate(data.get((series, r), [])):
                x = x_of(i) + (k - 1.5) * 9 + (j - 0.5) * 3
                svg.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y_of(low):.1f}" y2="{y_of(high):.1f}" stroke="{colour}"/>')
                fill = colour if holm != "not resolved" else "white"
                svg.append(f'<circle cx="{x:.1f}" cy="{y_of(est):.1f}" r="3" fill="{fill}" stroke="{colour}"/>')
                points.append((x, y_of(est)))
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            svg.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-opacity="0.4"/>')


def main():
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">Decode against L2 off (%), by persisting reserve (MiB) and window; both ladders, 95 % intervals; filled: resolved after Holm</text>']
    for c, (mode, label) in enumerate(MODES):
        data = readings(mode)
        for r, (what, reserves, ylim) in enumerate(ROWS):
            x0, y0 = LEFT + c * (PW + 90), TOP + 20 + r * (PH + 70)
            panel(svg, x0, y0, f"{label}, {what}", data, reserves, ylim)
    for k, (series, colour) in enumerate(SERIES):
        x = LEFT + k * 150
        name = "structural zero" if series == "sz" else f"window: {series}"
        svg.append(f'<circle cx="{x}" cy="{H - 18}" r="4" fill="{colour}"/><text x="{x + 9}" y="{H - 14}" font-size="12">{name}</text>')
    svg.append("</svg>")
    (HERE / "cost-vs-reserve.svg").write_text("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
