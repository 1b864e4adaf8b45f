#!/usr/bin/env python3
"""A plain single-threaded Python reader of ladder files, the yardstick for verify_bench.

Replays each file against its rotate order (start record, header, legal cells, arms,
timestamps, exits, done record) the straightforward way: json + csv + datetime.
    python3 bench/verify_reference.py target/verify-bench
"""
import csv
import json
import sys
import time
from datetime import datetime
from pathlib import Path


def connected(path):
    lines = path.read_text().splitlines()
    if not lines or not lines[0].startswith("#ladder-start "):
        return False
    start = json.loads(lines[0][len("#ladder-start "):])
    arms, passes = start["order"]["arms"], start["order"]["passes"]
    header = next(csv.reader([lines[1]]))
    col = {name: i for i, name in enumerate(header)}
    expected, last_end, done = 0, None, None
    for line in lines[2:]:
        if line.startswith("#ladder-done "):
            done = json.loads(line[len("#ladder-done "):])
            continue
        if line.startswith("#"):
            continue
        row = next(csv.reader([line]))
        if "ladder_row" in col and row[col["ladder_row"]] != "0":
            continue
        p, s = int(row[col["ladder_pass"]]), int(row[col["ladder_slot"]])
        if p * len(arms) + s != expected or row[col["ladder_arm"]] != arms[(s + p) % len(arms)]:
            return False
        started = datetime.fromisoformat(row[col["ladder_started"]].replace("Z", "+00:00"))
        ended = datetime.fromisoformat(row[col["ladder_ended"]].replace("Z", "+00:00"))
        if ended < started or (last_end is not None and started < last_end) or row[col["ladder_exit"]] != "0":
            return False
        last_end, expected = ended, expected + 1
    return done is not None and done["cells"] == expected == passes * len(arms)


def main():
    paths = sorted(Path(sys.argv[1]).glob("*.csv"))
    clock = time.perf_counter()
    good = sum(connected(p) for p in paths)
    seconds = time.perf_counter() - clock
    print(f"python reference: {good} of {len(paths)} files connected in {seconds:.3f} s")


if __name__ == "__main__":
    main()
