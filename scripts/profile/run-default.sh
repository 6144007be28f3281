#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The default short profile comparison (make run): memcached, lazy
# invalidation, no IOMMU versus $IOMMU (default viommu-vtd), one table with
# ratios to "none" and an SVG plot under build/profile/; then a recording of
# the $IOMMU run's DMA stream replayed by viommu-sim at 2, 16 and 64 CPUs.
#
#   run-default.sh            DURATION=S seconds of load per run (default 10)
#                             IOMMU=viommu-vtd|intel-iommu|none
#                             VCPUS=N the guest's vCPUs (default 2; profile.py --vcpus)
#   Extra arguments go to profile.py (e.g. --conns 128, --qemu-arg=-d --qemu-arg=guest_errors).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

DURATION=${DURATION:-10}
[[ $DURATION =~ ^[0-9]+$ ]] && [ "$DURATION" -ge 1 ] || die "DURATION must be a whole number of seconds, not '$DURATION'."
VCPUS=${VCPUS:-2}
[[ $VCPUS =~ ^[1-9][0-9]?$ ]] && [ "$VCPUS" -le 64 ] || die "VCPUS must be a whole number of vCPUs from 1 to 64, not '$VCPUS'."
qemu=${QEMU:-$BUILD/qemu-system-x86_64}
[ -x "$qemu" ] || die "no QEMU at $qemu; run 'bash scripts/fetch-qemu.sh && bash scripts/build-qemu.sh' first."
command -v debootstrap >/dev/null || die "the profiling guest needs debootstrap; install it with 'apt-get install debootstrap'."

IOMMU=${IOMMU:-viommu-vtd}
case $IOMMU in
    viommu-vtd|intel-iommu) configs="none:lazy,$IOMMU:lazy" boots=2 ;;
    none) configs="none:lazy" boots=1 ;;
    *) die "unknown IOMMU '$IOMMU' (use viommu-vtd, intel-iommu or none)." ;;
esac
accel=$(bash "$TOP/scripts/accel.sh")

# After the comparison, one more boot records the $IOMMU run's DMA stream
# (a run of its own, so that tracing does not slow the compared run) and
# viommu-sim replays it at 2, 16 and 64 CPUs (scripts/profile/replay.py).
record=0
if [ "$IOMMU" != none ]; then
    if [ -x "$TOP/scripts/trace/viommu-trace" ]; then
        record=1 boots=$((boots + 1))
    else
        say "note: no trace tools (scripts/trace/viommu-trace) in this tree: no recording and replay."
    fi
fi
per=$((60 + DURATION + 40))
first=""
ls "$CACHE"/profile/rootfs/*.cpio >/dev/null 2>&1 || first=" plus about 4 minutes once to build the guest image"
say "profile: memcached, ${configs/,/ vs }$([ $record = 1 ] && echo ", then a recording of the $IOMMU run replayed at 2, 16 and 64 CPUs"): $boots guest boot(s) under ${accel^^}, about $(( (boots * per + 59) / 60 )) minutes${first}."
out=$BUILD/profile/$(date +%Y%m%d-%H%M%S)-memcached-compare
# A failed row of the comparison does not stop the recording; the exit
# status still says it failed.
rc=0
python3 "$TOP/scripts/profile/profile.py" --workload memcached --duration "$DURATION" \
    --vcpus "$VCPUS" --accel "$accel" --compare "$configs" --out "$out" "$@" || rc=$?
[ $record = 1 ] || exit $rc
say "recording $IOMMU's DMA stream: memcached for $DURATION s with the guest kernel's iommu tracepoints and kprobes (one more boot)"
python3 "$TOP/scripts/profile/profile.py" --workload memcached --iommu "$IOMMU" --duration "$DURATION" \
    --vcpus "$VCPUS" --accel "$accel" --no-perf --record "$out/memcached.trace" --out "$out/record" --quiet "$@" \
    > "$out/record.log" 2>&1 || { sed 's/^/    /' "$out/record.log" | tail -n 20; die "the recording run failed (its report: $out/record/report.txt)."; }
sed -n '/^-- recording/,/^-- /p' "$out/record/report.txt" | sed '$d'
# The recording run's own load (idle share, host), as the table's rows have it.
echo "-- the recording run's load"
sed -n '/^   guest idle/,/^   QEMU threads/p' "$out/record/report.txt"
[ -s "$out/memcached.trace" ] || die "the recording run wrote no trace (its report: $out/record/report.txt)."
# The recording's vCPUs as profile.py ran it (a --vcpus among the extra
# arguments overrides VCPUS).
vcpus=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["vcpus"])' \
    "$out/record/result.json" 2>/dev/null) || vcpus=$VCPUS
say "replaying $out/memcached.trace with viommu-sim at 2, 16 and 64 CPUs"
python3 "$TOP/scripts/profile/replay.py" "$out/memcached.trace" --cpus 2,16,64 \
    --svg "$out/replay.svg" --json "$out/replay.json" \
    --title "memcached recorded behind $IOMMU ($vcpus vCPU, ${accel^^}), replayed by viommu-sim" | tee "$out/replay.txt"
[ "${PIPESTATUS[0]}" = 0 ] || die "the replay failed (messages above)."
say "replay table: $out/replay.txt  plot: $out/replay.svg"
exit $rc
