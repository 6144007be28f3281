#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run one libFuzzer binary for a while from a copy of a seed corpus and report
# what libFuzzer printed (executions, exec/s, cov, ft) with the CPU time the
# process used: on a shared machine wall-clock exec/s depends on the load,
# executions per CPU-second much less.
#
#   fuzz-measure.sh BINARY SEED_CORPUS SECONDS [LIBFUZZER-OPTION...]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -ge 3 ] || die "usage: fuzz-measure.sh BINARY SEED_CORPUS SECONDS [OPTION...]"
bin=$1 seeds=$2 secs=$3; shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
load=$(cut -d' ' -f1-3 /proc/loadavg)
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 /usr/bin/time -f '%U %S' -o "$work/time" \
    "$bin" "$work/corpus" "$seeds" -max_total_time="$secs" -max_len=4096 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$@" > "$work/log" 2>&1 || true
read -r user sys < "$work/time"
final=$(grep -E '^#[0-9]+' "$work/log" | tail -1)
execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$work/log")
cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$final")
ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$final")
rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$work/log")
per_cpu=$(awk -v e="$execs" -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", e / (u + s) }')
crashes=$(ls "$work/artifacts" | wc -l)
printf '%s: %s s, load %s: %s executions, %s exec/s, %s exec per CPU-second (%.1f CPU-s), cov %s ft %s, %s artifacts\n' \
    "$(basename "$bin")" "$secs" "$load" "$execs" "$rate" "$per_cpu" "$(awk -v u="$user" -v s="$sys" 'BEGIN{print u+s}')" "$cov" "$ft" "$crashes"
if [ "$crashes" -gt 0 ]; then
    mkdir -p "$BUILD/fuzz/measure-artifacts"
    cp "$work/artifacts/"* "$BUILD/fuzz/measure-artifacts/"
    grep -m3 -E 'oracle failed|ERROR' "$work/log" || true
fi
