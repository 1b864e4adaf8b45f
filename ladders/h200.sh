#!/usr/bin/env bash
# The ladders and probes of the lent H200, step by step, each step sized to fit one device
# call beside others:
#   bash ladders/h200.sh TAG STEP...
# STEP:
#   probe        the energy counter (`engine energy-counter`), the step of the clock the decode
#                pad spins on (`engine info`), where a cell's start-up goes
#                (one `engine bench` with every stderr line stamped), one `--rows ops` cell,
#                one cell without a warm-up and with a row per rep
#   tests        the GPU tests of the known-effect pad, the breakdown rows and the joules
#   known-effect ladders/known-effect-h200.toml
#   known-effect-quick  ladders/known-effect-quick-h200.toml (the same without `unset`, to 12
#                passes: a short call)
#   known-effect-parts  ladders/known-effect-parts-h200.toml (pads of 0.1 and 1 %, the rounds'
#                own time and turnaround as the pads counted them, and d5c7e4b's pad beside
#                them: carry .bin/d5c7e4b/engine too)
#   pilot        ladders/aa-pilot-h200.toml
#   layouts      one stamped cell of `--layouts 3`, then ladders/aa-layouts-h200.toml (the
#                pilot's cell built 4 times in one process, each in another placement; read
#                beside pilot)
#   l2, mtp      ladders/breakdown-{l2,mtp}-h200.toml
#   energy       ladders/energy-l2-h200.toml (decodes long enough for the energy counter)
#   warmup       ladders/warmup-decode-h200.toml (a short warm-up against the reference build
#                3095158; carry .bin/3095158/engine too)
#   decode-vs-3095158  ladders/decode-vs-3095158-h200.toml (the goals' cell against 3095158,
#                the decode only; carry .bin/3095158/engine too)
#   aa-3095158   ladders/aa-3095158-h200.toml (the A/A design of the goals' baseline, 3095158,
#                to read beside `aa` on the same card; carry .bin/3095158/engine too)
#   aa-full-warmup, aa-short-warmup  ladders/aa-{full,short}-warmup-h200.toml (this build's
#                A/A cell with the full warm-up rep and with a 16-token warm-up decode, to read
#                beside aa-3095158)
#   long-pilot, aa-long  ladders/aa-long-pilot-h200.toml and the A/A goal planned from it
#                (ladders/precision-aa-long-h200.template.toml, as aa): the goal's cell with a
#                decode four times longer and a prompt four times shorter (`-pg 128,1024`)
#   sweep-pilot  ladders/sweep-pilot-h200.toml (the sweep's base cell, with the pad's spin node)
#   aa, sweep    ladders/precision-{aa,sweep}-h200.template.toml, with `-r` and `[stop]` set by
#                `analyze plan` from the goal's pilot (aa-pilot-h200_TAG.csv, or
#                sweep-pilot-h200_TAG.csv: in $OUT, from `pilot` or `sweep-pilot` earlier in the
#                same call, else in raw/; PILOT names another), within the goal's seconds of
#                cells (120 and 240; PLAN_WITHIN_S sets another for both); the planned spec is
#                written beside the ladder; AA_PCT
#                and SWEEP_PCT change their goals' half-widths (0.005 and 0.03); a goal that
#                does not fit its seconds is planned at the narrowest half-width that does
#                (`analyze plan --or-narrowest`, said in the log)
# Built here and carried in .bin/ (docs/GPU.md): .bin/engine, .bin/runner, .bin/gpu-tests/,
# .bin/analyze (stripped: `strip -o .bin/analyze target/release/analyze`, for aa and sweep),
# and the kernel cache .bin/xdg filled by `XDG_CACHE_HOME=.bin/xdg engine kernels` after
# `source .ci/nvrtc.sh` (carry .nvrtc/nvidia/cu13/include too: the cache is keyed by the
# header path). The tree, .bin and the headers together come near a device call's 64 MiB:
# carry the paths a call's steps need (.bin/engine, .bin/runner, .bin/xdg, and .bin/analyze
# for aa and sweep or .bin/gpu-tests for tests), not all of .bin.
# Ladder files, their side logs and the probes' logs go to $OUT when it is set
# (a device call's output folder), else to raw/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device-env.sh"
tag=$1
shift
model=(.bin/engine bench --preset qwen3.6-35b-a3b -pg 512,256 --prefill-chunk 8192)
cell=("${model[@]}" -r 2 --warmup 1)
# No warm-up and a row per rep: what the first timed rep pays (the captures, the first
# touch), and whether the reps after it run as the warmed ones do.
cold=("${model[@]}" -r 4 --warmup 0 --rows reps)

# Every stderr line of a command with the seconds since it started, and its exit.
stamped() {
    local t0=${EPOCHREALTIME/./}
    "$@" 2> >(while IFS= read -r line; do
        local us=$((${EPOCHREALTIME/./} - t0))
        printf '%4d.%03d  %s\n' $((us / 1000000)) $((us / 1000 % 1000)) "$line" >&2
    done)
    local us=$((${EPOCHREALTIME/./} - t0))
    printf '%4d.%03d  exit\n' $((us / 1000000)) $((us / 1000 % 1000)) >&2
}

ladder() {
    .bin/runner run "ladders/$1.toml" --tag "$tag" --out "$out"
}

# A planned ladder's cells must end within its goal's seconds, and inside the device call (600 s
# at most, start-up and the other steps of the call besides): a plan that needs more is refused
# by `analyze plan`, and the written [stop] carries `within_s`, so that a card slower than the
# pilot's ends in time.
#
# The goal ladder $1 (aa or sweep) at half-width $2 %, planned from its pilot ($1-pilot-h200)
# within $3 s of cells (PLAN_WITHIN_S instead, when set), then run.
planned() {
    local within=${PLAN_WITHIN_S:-$3}
    local spec="$out/precision-$1-h200.toml" pilot=${PILOT:-$out/$1-pilot-h200_$tag.csv}
    [ -f "$pilot" ] || pilot="raw/$1-pilot-h200_$tag.csv"
    # A plan refused (a pilot of other cells, one whose fewest passes cannot fit $within s)
    # is said and skipped, so that the call's other steps still run.
    if ! .bin/analyze plan "$pilot" --halfwidth "$2" --within "$within" --or-narrowest \
        --template "ladders/precision-$1-h200.template.toml" --write "$spec"; then
        echo "== $1: analyze plan refused it (the line above says why); skipped" >&2
        return 0
    fi
    .bin/runner run "$spec" --tag "$tag" --out "$out"
}

# A fresh machine's driver compiles the carried kernels for the card on first use (19.7 s in
# a ladder's first cell, docs/GPU.md): open the device once first, so no cell pays it.
if [ -x .bin/engine ]; then
    t0=$SECONDS
    ENGINE_BACKEND=cuda .bin/engine info --preset qwen3.6-35b-a3b > /dev/null
    echo "== device opened in $((SECONDS - t0)) s"
fi

for step in "$@"; do
    echo "== $step ($(date -u +%H:%M:%S))"
    case $step in
        probe)
            .bin/engine energy-counter --seconds 3
            ENGINE_BACKEND=cuda .bin/engine info --preset qwen3.6-35b-a3b | grep -E '^(gpu|globaltimer)'
            ENGINE_BACKEND=cuda stamped "${cell[@]}"
            ENGINE_BACKEND=cuda stamped "${cell[@]}" --read-ceiling-gbs 4500
            ENGINE_BACKEND=cuda stamped "${cell[@]}" --rows ops
            ENGINE_BACKEND=cuda stamped "${cold[@]}"
            ;;
        tests)
            .bin/gpu-tests/cuda_kernels --ignored --exact graph::a_captured_pad_waits_the_fraction_written_after_capture --nocapture
            .bin/gpu-tests/cuda_backend --ignored --nocapture --exact a_five_percent_pad_slows_the_decode_to_1_over_1_05
            .bin/gpu-tests/cuda_breakdown --ignored --nocapture
            .bin/gpu-tests/cuda_energy --ignored --nocapture
            ;;
        known-effect | known-effect-parts | known-effect-quick) ladder "$step-h200" ;;
        pilot) ladder aa-pilot-h200 ;;
        layouts)
            ENGINE_BACKEND=cuda stamped "${model[@]}" -r 1 --layouts 3 --warmup 1 --warmup-decode 16
            ladder aa-layouts-h200
            ;;
        sweep-pilot) ladder sweep-pilot-h200 ;;
        l2 | mtp) ladder "breakdown-$step-h200" ;;
        energy) ladder energy-l2-h200 ;;
        warmup) ladder warmup-decode-h200 ;;
        decode-vs-3095158) ladder decode-vs-3095158-h200 ;;
        aa-3095158) ladder aa-3095158-h200 ;;
        aa-full-warmup | aa-short-warmup) ladder "$step-h200" ;;
        aa) planned aa "${AA_PCT:-0.005}" 120 ;;
        long-pilot) ladder aa-long-pilot-h200 ;;
        aa-long) planned aa-long "${AA_PCT:-0.005}" 120 ;;
        sweep) planned sweep "${SWEEP_PCT:-0.03}" 240 ;;
        *) echo "unknown step $step" >&2; exit 2 ;;
    esac
done
