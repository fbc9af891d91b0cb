#!/bin/bash
# Keep a copy of every epoch checkpoint of a running `attnlab train`, for scoring it later with
# benchmarks/checkpoint_wer.py: a run replaces its one checkpoint after each epoch.
#
#   keep_checkpoints.sh PID CACHE_DIR OUT_DIR
#
# PID: the `attnlab train` process; CACHE_DIR: its ATTNLAB_CACHE_DIR (checkpoints are under
# CACHE_DIR/checkpoints/<run id>/checkpoint.pt); OUT_DIR: where the copies go, as
# <seconds since the epoch>.pt, with one line per copy in OUT_DIR/copies.tsv: the copy, the wall
# seconds since the training process started and the CPU seconds it had used by then (its own
# measure of training time when other work shares the machine). Ends when the process ends.
set -euo pipefail
pid=$1 cache=$2 out=$3
mkdir -p "$out"
tick=$(getconf CLK_TCK)
boot=$(awk '/^btime/ {print $2}' /proc/stat)
started=$(awk -v boot="$boot" -v tick="$tick" '{print int(boot + $22 / tick)}' "/proc/$pid/stat")
last=""
while kill -0 "$pid" 2>/dev/null; do
    for checkpoint in "$cache"/checkpoints/*/checkpoint.pt; do
        [ -f "$checkpoint" ] || continue
        changed=$(stat -c %Y "$checkpoint")
        [ "$changed" = "$last" ] && continue
        cpu=$(awk -v tick="$tick" '{print int(($14 + $15) / tick)}' "/proc/$pid/stat")
        cp "$checkpoint" "$out/$changed.pt"
        printf '%s\t%s\t%s\n' "$changed.pt" $((changed - started)) "$cpu" >> "$out/copies.tsv"
        last=$changed
    done
    sleep 10
done
