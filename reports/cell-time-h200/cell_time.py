#!/usr/bin/env python3
"""Where an H200 cell's wall time goes, read from committed ladders and their side logs.

    python3 reports/cell-time-h200/cell_time.py raw/l2-off-builds-h200_h200-33fc9aa ...

For each ladder (a `raw/NAME_TAG` stem): the median over its cells, the first left out (it
compiles the kernels), of the cell's wall time (`ladder_wall_s`), the engine's start-up line
(`start-up S s`: arguments to a built model, the `kernels ready in` part of it), the timed
reps (`rep i/n: prefill P s, decode D s`), and what is left: the warm-up rep, which these
engines did not time, and the process's start and exit.
"""
import csv
import re
import statistics
import sys


def cells(log):
    out = []
    for line in open(log):
        if line.startswith("==="):
            out.append({"reps": [], "decode": 0.0})
        elif not out:
            continue
        elif line.startswith("start-up"):
            out[-1]["startup"] = float(line.split()[1])
        elif "kernels ready in" in line:
            out[-1]["kernels"] = float(re.search(r"ready in ([\d.]+)", line).group(1))
        elif line.startswith("rep "):
            prefill, decode = (float(x) for x in re.findall(r"([\d.]+) s", line))
            out[-1]["reps"].append(prefill + decode)
            out[-1]["decode"] += decode
    return out


def walls(path):
    header, out = None, []
    for row in csv.reader(line for line in open(path) if not line.startswith("#")):
        if row and row[0] == "ladder_pass":
            header = row
        elif header and len(row) == len(header):
            cell = dict(zip(header, row))
            if cell["ladder_row"] in ("", "0", "1"):
                out.append(float(cell["ladder_wall_s"]))
    return out


print("| ladder | cells | wall s | start-up s (kernels) | timed s (decode) | warm-up, start and exit s | decode / wall |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for stem in sys.argv[1:]:
    c, w = cells(stem + ".stderr.log")[1:], walls(stem + ".csv")[1:]
    assert len(c) == len(w), f"{stem}: {len(c)} logged cells, {len(w)} rows"
    med = statistics.median
    wall = med(w)
    startup = med(x["startup"] for x in c)
    timed = med(sum(x["reps"]) for x in c)
    decode = med(x["decode"] for x in c)
    rest = med(a - x["startup"] - sum(x["reps"]) for a, x in zip(w, c))
    share = med(x["decode"] / a for a, x in zip(w, c))
    print(
        f"| `{stem.split('/')[-1]}` | {len(c)} | {wall:.2f} | {startup:.2f} ({med(x['kernels'] for x in c):.2f}) "
        f"| {timed:.2f} ({decode:.2f}) | {rest:.2f} | {share:.0%} |"
    )
