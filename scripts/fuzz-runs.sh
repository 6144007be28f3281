#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run one libFuzzer binary for a fixed number of executions with a fixed
# seed from a seed corpus, and report its CPU time (user + system, from
# /usr/bin/time), executions per CPU-second, libFuzzer's final cov/ft, the
# load average at the start and the end, and the library edges and
# functions (hw/viommu/engine/, guest/iova/, guest/sim/) that the seeds plus
# what the run added reach (-runs=0 -print_coverage=1 over both, after the
# run, not counted in its CPU time).  Two binaries or two option sets run
# with the same RUNS and seeds compare on work done, not on the machine's
# load.
#
#   fuzz-runs.sh NAME BINARY SEED_CORPUS RUNS [LIBFUZZER-OPTION...]
# Defaults passed before the options: -seed=1 -max_len=4096 -timeout=10
# (a later -max_len wins).  Logs: build/fuzz/runs-NAME/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -ge 4 ] || die "usage: fuzz-runs.sh NAME BINARY SEED_CORPUS RUNS [OPTION...]"
name=$1 bin=$2 seeds=$3 runs=$4; shift 4
d=$BUILD/fuzz/runs-$name
rm -rf "$d"; mkdir -p "$d/corpus" "$d/artifacts"
load0=$(cut -d' ' -f1 /proc/loadavg)
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 /usr/bin/time -f '%U %S %e' -o "$d/time" \
    "$bin" "$d/corpus" "$seeds" -runs="$runs" -seed=1 -max_len=4096 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$d/artifacts/" "$@" > "$d/log" 2>&1 || true
load1=$(cut -d' ' -f1 /proc/loadavg)
read -r user sys wall < "$d/time"
execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$d/log")
final=$(grep -aE '^#[0-9]+' "$d/log" | tail -1 | grep -o 'cov: [0-9]* ft: [0-9]*' || echo 'no cov')
"$bin" -runs=0 -print_coverage=1 "$d/corpus" "$seeds" > "$d/coverage" 2>&1 || true
lib=$(awk '/^(COVERED|UNCOVERED)_FUNC/ && ($NF ~ /hw\/viommu\/engine\/|guest\/iova\/|guest\/sim\//) {
        for (i = 1; i <= NF; i++) if ($i == "edges:") { split($(i + 1), e, "/"); a += e[1]; b += e[2] }
        if ($1 ~ /^COVERED/) f++; n++ }
    END { printf "library edges %d/%d, functions %d/%d", a, b, f, n }' "$d/coverage")
printf '%s: %s executions, %.2f CPU-s, %s s wall, %.0f exec per CPU-second, %s, %s, load %s..%s, %s artifacts\n' \
    "$name" "${execs:-?}" "$(awk -v u="$user" -v s="$sys" 'BEGIN{print u+s}')" "$wall" \
    "$(awk -v e="${execs:-0}" -v u="$user" -v s="$sys" 'BEGIN{print e/(u+s)}')" "$final" "$lib" \
    "$load0" "$load1" "$(ls "$d/artifacts" | wc -l)"
