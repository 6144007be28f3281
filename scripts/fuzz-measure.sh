#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run one libFuzzer binary for a while from a copy of a seed corpus and report
# what libFuzzer printed (executions, exec/s, cov, ft) with the CPU time the
# process used: on a shared machine wall-clock exec/s depends on the load,
# executions per CPU-second much less.  libFuzzer's cov counts the harness's
# own edges too; the edges of the library under test (hw/viommu/engine/ or
# guest/iova/, from -print_coverage=1 at exit, whose symbolization counts in
# the CPU time) are reported apart.
#
#   fuzz-measure.sh BINARY SEED_CORPUS SECONDS [LIBFUZZER-OPTION...]
# The full libFuzzer log is left in build/fuzz/measure-<binary>.log.
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
    -print_final_stats=1 -print_coverage=1 -artifact_prefix="$work/artifacts/" "$@" > "$work/log" 2>&1 || true
read -r user sys < "$work/time"
mkdir -p "$BUILD/fuzz"
cp "$work/log" "$BUILD/fuzz/measure-$(basename "$bin").log"
final=$(grep -E '^#[0-9]+' "$work/log" | tail -1)
execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$work/log")
cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$final")
ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$final")
rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$work/log")
per_cpu=$(awk -v e="$execs" -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", e / (u + s) }')
crashes=$(ls "$work/artifacts" | wc -l)
# COVERED_FUNC: hits: N edges: A/B name path:line (and UNCOVERED_FUNC).
lib=$(awk '/^(COVERED|UNCOVERED)_FUNC/ && ($NF ~ /hw\/viommu\/engine\/|guest\/iova\//) {
        for (i = 1; i <= NF; i++) if ($i == "edges:") { split($(i + 1), e, "/"); a += e[1]; b += e[2] }
        if ($1 ~ /^COVERED/) f++; n++ }
    END { if (n) printf "library edges %d/%d, functions %d/%d", a, b, f, n; else printf "no library coverage" }' "$work/log")
printf '%s: %s s, load %s: %s executions, %s exec/s, %s exec per CPU-second (%.1f CPU-s), cov %s ft %s, %s, %s artifacts\n' \
    "$(basename "$bin")" "$secs" "$load" "$execs" "$rate" "$per_cpu" "$(awk -v u="$user" -v s="$sys" 'BEGIN{print u+s}')" "$cov" "$ft" "$lib" "$crashes"
if [ "$crashes" -gt 0 ]; then
    mkdir -p "$BUILD/fuzz/measure-artifacts"
    cp "$work/artifacts/"* "$BUILD/fuzz/measure-artifacts/"
    grep -m3 -E 'oracle failed|ERROR' "$work/log" || true
fi
