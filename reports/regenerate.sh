#!/usr/bin/env bash
# Remakes every ladder report under reports/<study>/ from its ladder files in raw/, with the
# analysis of this checkout: reports/<study>/<name>.md, its .json, its CSV summary and its .svg
# figures.
# Studies without ladder files (measurements, and in reports/archive/ the hand-written comparison
# loops from before the runner compared builds) have no report to remake; reports/README.md lists
# every study. Run from anywhere after `cargo build --release`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

analyze=target/release/analyze
[ -x "$analyze" ] || { echo "regenerate.sh: $analyze missing; run cargo build --release first" >&2; exit 1; }

# report STUDY NAME FILES...: reports/STUDY/NAME.md, .json and .csv from FILES.
report() {
    local study=$1 name=$2
    shift 2
    mkdir -p "reports/$study"
    "$analyze" report "$@" -o "reports/$study/$name.md" --json "reports/$study/$name.json" --csv "reports/$study/$name.csv"
}

report engine-fold-h200 engine-fold-h200 raw/engine-fold-h200_h200-08645f8.csv raw/engine-fold-h200_h200-12b278e.csv
# The same ladders read with a ±0.5 % margin (the study's replication limit), given after the
# run: the report marks it as not pre-registered (reports/method2.1-rereading.md).
report engine-fold-h200 engine-fold-h200-margin raw/engine-fold-h200_h200-08645f8.csv raw/engine-fold-h200_h200-12b278e.csv --margin-pct 0.5
report engine-fold-proj-h200 engine-fold-proj-h200 raw/engine-fold-proj-h200_h200-c079ddb.csv raw/engine-fold-proj-h200_h200-c079ddb-2.csv
report engine-launch-h200 engine-launch-h200 raw/engine-launch-h200_h200-f8b66db.csv raw/engine-launch-h200_h200-f919172.csv
report engine-options-h200 engine-options-h200 raw/engine-options-h200_h200-99b372f.csv
report engine-pdl-h200 engine-pdl-h200 raw/engine-pdl-h200_h200-99b372f.csv
report engine-preload-384-h200 engine-preload-384-h200 raw/engine-preload-384-h200_h200-e115630.csv raw/engine-preload-384-h200_h200-1039a2d.csv
report engine-preload-h200 engine-preload-h200 raw/engine-preload-h200_h200-b9556e7.csv
report l2-guard-h200 l2-guard-h200 raw/l2-guard-h200_h200-412a52e.csv raw/l2-guard-h200_h200-412a52e-b.csv raw/l2-guard-h200_h200-412a52e-c.csv
report l2-hit-ratio-h200 l2-hit-ratio-h200 raw/l2-hit-ratio-h200_h200-412a52e.csv
report l2-window-h200 l2-window-h200 raw/l2-window-h200_h200-412a52e.csv raw/l2-window-h200_h200-412a52e-b.csv
report quickstart quickstart raw/quickstart_2core-47db777.csv raw/quickstart_2core-7a50708-b.csv
report sort-locale sort-locale raw/sort-locale_2core-05b2cf2.csv
report card-sampler-cost card-sampler-cost raw/card-sampler-cost_cpu-2core.csv
report quickstart quickstart-738dd7a raw/quickstart_2core-738dd7a-1.csv raw/quickstart_2core-738dd7a-2.csv raw/quickstart_2core-738dd7a-3.csv raw/quickstart_2core-738dd7a-4.csv raw/quickstart_2core-738dd7a-5.csv
report quickstart quickstart-0f16467 raw/quickstart_2core-0f16467-1.csv raw/quickstart_2core-0f16467-2.csv raw/quickstart_2core-0f16467-3.csv raw/quickstart_2core-0f16467-4.csv raw/quickstart_2core-0f16467-5.csv
report quickstart quickstart-self-timed-pad raw/quickstart_2core-50dddb9-1.csv raw/quickstart_2core-50dddb9-2.csv raw/quickstart_2core-50dddb9-3.csv raw/quickstart_2core-dcd45cb.csv
report quickstart quickstart-nulls raw/quickstart-nulls_2core-322ab6c-1.csv raw/quickstart-nulls_2core-322ab6c-2.csv
report engine-builds-h200 engine-builds-h200 raw/engine-builds-h200_h200-7bdf93b-vm-card0.csv
report l2-sweep-h200 l2-sweep-plain-h200 raw/l2-sweep-plain-h200_h200-133d95a.csv raw/l2-sweep-plain-h200_h200-133d95a-b.csv
report l2-sweep-h200 l2-sweep-mtp-h200 raw/l2-sweep-mtp-h200_h200-133d95a.csv raw/l2-sweep-mtp-h200_h200-133d95a-b.csv
report l2-off-builds-h200 l2-off-builds-h200 raw/l2-off-builds-h200_h200-33fc9aa.csv
report breakdown breakdown-cpu raw/breakdown-cpu_2core-1.csv
report breakdown breakdown-l2-h100 raw/breakdown-l2-h200_h100-e7d54dc.csv
report breakdown breakdown-mtp-h100 raw/breakdown-mtp-h200_h100-e7d54dc.csv
report known-effect known-effect-h100 raw/known-effect-h200_h100-e7d54dc.csv
report known-effect known-effect-88da899-h100 raw/known-effect-h200_h100-88da899-k1.csv raw/known-effect-h200_h100-88da899-k2.csv raw/known-effect-h200_h100-88da899-k3.csv raw/known-effect-h200_h100-88da899-k4.csv
# The same spec with every pad spinning a 4 µs floor first (feb8d09, since reverted).
report known-effect known-effect-floor-h100 raw/known-effect-h200_h100-feb8d09-1.csv
# Where a pad's wait goes (6a5dd24 beside d5c7e4b's pad), and the known-effect ladder with the fix.
report known-effect known-effect-parts-h100 raw/known-effect-parts-h200_h100-6a5dd24.csv
report known-effect known-effect-6a5dd24-h100 raw/known-effect-h200_h100-6a5dd24-k1.csv
# The pre-registered quick known-effect ladder, four times on two H100s (reports/device-2026-12-07-h100).
report known-effect known-effect-quick-h100 raw/known-effect-quick-h200_h100-6a5dd24-q1.csv raw/known-effect-quick-h200_h100-6a5dd24-q2.csv raw/known-effect-quick-h200_h100-6a5dd24-q3.csv raw/known-effect-quick-h200_h100-6a5dd24-q4.csv
# The same ladder with bc5dd53's build of the pad, on eighteen more H100s (reports/device-2026-12-07b-h100, -07c-h100, -07d-h100, -07e-h100, -07f-h100, -07g-h200).
report known-effect known-effect-quick-bc5dd53-h100 raw/known-effect-quick-h200_h100-bc5dd53-q5.csv raw/known-effect-quick-h200_h100-bc5dd53-q6.csv raw/known-effect-quick-h200_h100-bc5dd53-q7.csv raw/known-effect-quick-h200_h100-bc5dd53-q8.csv raw/known-effect-quick-h200_h100-bc5dd53-q9.csv raw/known-effect-quick-h200_h100-bc5dd53-q10.csv raw/known-effect-quick-h200_h100-bc5dd53-q11.csv raw/known-effect-quick-h200_h100-bc5dd53-q12.csv raw/known-effect-quick-h200_h100-bc5dd53-q13.csv raw/known-effect-quick-h200_h100-bc5dd53-q14.csv raw/known-effect-quick-h200_h100-bc5dd53-q15.csv raw/known-effect-quick-h200_h100-bc5dd53-q16.csv raw/known-effect-quick-h200_h100-bc5dd53-q17.csv raw/known-effect-quick-h200_h100-bc5dd53-q18.csv raw/known-effect-quick-h200_h100-bc5dd53-q19.csv raw/known-effect-quick-h200_h100-bc5dd53-q20.csv raw/known-effect-quick-h200_h100-bc5dd53-q21.csv raw/known-effect-quick-h200_h100-bc5dd53-q22.csv
report breakdown breakdown-l2-h100-b8415b8 raw/breakdown-l2-h200_h100-b8415b8.csv
report breakdown breakdown-mtp-h100-b8415b8 raw/breakdown-mtp-h200_h100-b8415b8.csv
report precision aa-pilot-h100 raw/aa-pilot-h200_h100-b8415b8.csv
# Cut off by the device call's limit at its 119th cell (no done record): read with the defect
# marked on every table.
report precision precision-aa-h100-interrupted raw/precision-aa-h200_h100-b8415b8.csv --allow-defects
report precision precision-aa-h100 raw/precision-aa-h200_h100-010b86f.csv raw/precision-aa-h200_h100-010b86f-b.csv
# The A/A goal planned the same way at `f6853d8` (`within_s = 120` in its [stop]).
report precision precision-aa-within-h100 raw/precision-aa-h200_h100-f6853d8.csv raw/precision-aa-h200_h100-f6853d8-b.csv
report precision precision-sweep-h100 raw/precision-sweep-h200_h100-010b86f.csv raw/precision-sweep-h200_h100-010b86f-b.csv
report precision warmup-decode-h100 raw/warmup-decode-h200_h100-010b86f.csv
# The sweep planned from its own pilot (the base cell with the pad's spin node), each within
# 240 s of cells, at the narrowest half-width that fits (`analyze plan --or-narrowest`).
report precision sweep-pilot-h100 raw/sweep-pilot-h200_h100-5d6ebbc.csv
report precision precision-sweep-own-pilot-h100 raw/precision-sweep-h200_h100-5d6ebbc.csv raw/precision-sweep-h200_h100-5d6ebbc-b.csv
report precision decode-vs-3095158-h100 raw/decode-vs-3095158-h200_h100-5d6ebbc.csv raw/decode-vs-3095158-h200_h100-5d6ebbc-b.csv
# Each padded round timing its own pad (no warm-up rep spent timing it): the sweep's pilot and
# the sweep within 240 s; `python3 reports/precision/pads.py` counts the pads inside.
report precision sweep-pilot-self-timed-pad-h100 raw/sweep-pilot-h200_h100-d9e296d.csv
report precision precision-sweep-self-timed-pad-h100 raw/precision-sweep-h200_h100-d9e296d.csv raw/precision-sweep-h200_h100-50dddb9.csv raw/precision-sweep-h200_h100-b6e91f6.csv
# The sweep goal's design (±0.03 % on every arm, a pooled [stop] whose looks fit 240 s of
# cells), planned from the same pilot and run three times with `0d31a00`'s binaries.
report precision precision-sweep-goal-h100 raw/precision-sweep-h200_h100-0d31a00.csv raw/precision-sweep-h200_h100-0d31a00-b.csv raw/precision-sweep-h200_h100-9d70ed5.csv
# The same design with `[stop] within_s = 240` (the runner prices the looks from the ladder's
# own cells at its first look), on a noisier H100 whose cells cost more than the pilot's.
report precision precision-sweep-within-h100 raw/precision-sweep-h200_h100-f6853d8.csv raw/precision-sweep-h200_h100-f6853d8-b.csv
# The goals' A/A design against the A/A design of their baseline, `3095158`, side by side on two
# H100s (the baseline first: the reference of "What a device-minute buys, per design").
report precision aa-design-vs-3095158-h100 raw/aa-3095158-h200_h100-849f5a5.csv raw/aa-3095158-h200_h100-849f5a5-b.csv raw/aa-3095158-h200_h100-1a1e72e.csv raw/precision-aa-h200_h100-849f5a5-b.csv raw/precision-aa-h200_h100-1a1e72e.csv
# Which part of the goal's A/A cell moved its precision: the baseline, this build with the full
# warm-up and with the 16-token warm-up, on a third H100 (baseline, full, short, short, full,
# baseline); then the short warm-up against the full one (the full first).
report precision aa-warmup-vs-3095158-h100 raw/aa-3095158-h200_h100-b391b1b.csv raw/aa-3095158-h200_h100-b391b1b-b.csv raw/aa-full-warmup-h200_h100-b391b1b.csv raw/aa-full-warmup-h200_h100-b391b1b-b.csv raw/aa-short-warmup-h200_h100-b391b1b.csv raw/aa-short-warmup-h200_h100-b391b1b-b.csv
report precision aa-short-vs-full-warmup-h100 raw/aa-full-warmup-h200_h100-b391b1b.csv raw/aa-full-warmup-h200_h100-b391b1b-b.csv raw/aa-short-warmup-h200_h100-b391b1b.csv raw/aa-short-warmup-h200_h100-b391b1b-b.csv
# Does a cell's offset come from where its memory lies? The A/A pilot beside the same cell built
# four times a process in other placements (`--layouts 4`), on one quiet H100 (the pilot first).
report precision aa-layouts-vs-pilot-h100 raw/aa-pilot-h200_h100-8a48097.csv raw/aa-layouts-h200_h100-8a48097.csv
# The A/A goal planned from that quiet card's pilot within 120 s, twice.
report precision precision-aa-quiet-h100 raw/precision-aa-h200_h100-8a48097.csv raw/precision-aa-h200_h100-8a48097-b.csv
# The long-decode cell (`-pg 128,1024`, pre-registered at `a5bb2cd`) on a fourth H100: its pilot
# and the goal planned from it, twice, in the card's first minutes.
report precision aa-long-h100 raw/aa-long-pilot-h200_h100-88da899.csv raw/precision-aa-long-h200_h100-88da899.csv raw/precision-aa-long-h200_h100-88da899-b.csv
# Then both designs side by side on that card, each planned from its own pilot: pilots (the
# first design's first), then long, short; short, long; long, short.
report precision aa-long-vs-short-h100 raw/precision-aa-h200_h100-88da899-c.csv raw/precision-aa-h200_h100-88da899-d.csv raw/precision-aa-h200_h100-88da899-e.csv raw/precision-aa-long-h200_h100-88da899-c.csv raw/precision-aa-long-h200_h100-88da899-d.csv raw/precision-aa-long-h200_h100-88da899-e.csv
report precision aa-long-vs-short-pilots-h100 raw/aa-pilot-h200_h100-88da899-c.csv raw/aa-long-pilot-h200_h100-88da899-c.csv
# The goals on the H200 (reports/device-2026-12-07g-h200): each pilot, the goal ladders planned
# from it within 120 and 240 s and run twice, and the A/A goal's ±0.005 % planned within 360 s.
report precision aa-pilot-h200 raw/aa-pilot-h200_h200-bc5dd53.csv
report precision precision-aa-h200 raw/precision-aa-h200_h200-bc5dd53.csv raw/precision-aa-h200_h200-bc5dd53-b.csv
report precision precision-aa-0.005-h200 raw/precision-aa-h200_h200-bc5dd53-w360.csv raw/precision-aa-h200_h200-bc5dd53-w360-b.csv
report precision sweep-pilot-h200 raw/sweep-pilot-h200_h200-bc5dd53.csv
report precision precision-sweep-h200 raw/precision-sweep-h200_h200-bc5dd53.csv raw/precision-sweep-h200_h200-bc5dd53-b.csv
python3 reports/l2-sweep-h200/plot.py
