#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The default short profile comparison (make run): memcached, lazy
# invalidation, no IOMMU versus $IOMMU (default viommu-vtd), one table with
# ratios to "none" and an SVG plot under build/profile/; then a recording of
# the $IOMMU run's DMA stream replayed by viommu-sim at 2, 16 and 64 CPUs.
#
#   run-default.sh [PROFILE.PY OPTION...]
#                             DURATION=S seconds of load per run (1 to 3600, default 10)
#                             IOMMU=viommu-vtd|intel-iommu|none
#                             VCPUS=N the guest's vCPUs (1 to 64, default 2; profile.py --vcpus)
#                             VIOMMU_ACCEL=tcg|kvm (default: scripts/accel.sh's probe)
#   Extra arguments go to profile.py, both runs (e.g. --conns 128,
#   --qemu-arg=-d --qemu-arg=guest_errors); --trace-kb goes to the recording
#   only.  The options this script sets itself are refused among them:
#   --out, --compare, --record, --repeat, --iommu, --policy, --duration,
#   --vcpus, --accel, --workload, --check-args.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

for a in "$@"; do
    case $a in
        -h|--h|--he|--hel|--help)
            sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'
            echo "profile.py's options: python3 scripts/profile/profile.py --help"
            exit 0 ;;
    esac
done

check_run_settings
qemu=${QEMU:-$BUILD/qemu-system-x86_64}
[ -x "$qemu" ] || die "no QEMU at $qemu; run 'bash scripts/fetch-qemu.sh && bash scripts/build-qemu.sh' first."
command -v debootstrap >/dev/null || die "the profiling guest needs debootstrap; install it with 'apt-get install debootstrap'."

IOMMU=${IOMMU:-viommu-vtd}
case $IOMMU in
    viommu-vtd|intel-iommu) configs="none:lazy,$IOMMU:lazy" boots=2 ;;
    none) configs="none:lazy" boots=1 ;;
    *) die "unknown IOMMU '$IOMMU' (use viommu-vtd, intel-iommu or none)." ;;
esac

# The extra arguments: none of the options set below (profile.py would take
# the last one, and the recording step's paths would not be where this
# script looks; argparse also takes an unambiguous prefix, so a prefix of
# one is refused too), and --trace-kb only for the recording.
own() {  # own OPTION -> why not and what to use instead; fails for another option
    case $1 in
        --out) echo "run-default.sh sets it (its results go to \$BUILD/profile/<time>-memcached-compare); set BUILD=DIR, or run profile.py --compare ... --out DIR" ;;
        --compare) echo "run-default.sh sets it (none:lazy against \$IOMMU:lazy); set IOMMU=viommu-vtd|intel-iommu|none, or run profile.py --compare LIST" ;;
        --record) echo "run-default.sh sets it (memcached.trace in its run directory); run profile.py --record FILE for another" ;;
        --repeat) echo "not with run-default.sh (its recording takes no --repeat); run profile.py --compare ... --repeat N" ;;
        --iommu) echo "run-default.sh sets it; set IOMMU=viommu-vtd|intel-iommu|none" ;;
        --policy) echo "not with run-default.sh (it compares lazy invalidation); run profile.py --compare none:strict,viommu-vtd:strict" ;;
        --duration) echo "run-default.sh sets it; set DURATION=S" ;;
        --vcpus) echo "run-default.sh sets it; set VCPUS=N" ;;
        --accel) echo "run-default.sh sets it; set VIOMMU_ACCEL=tcg|kvm" ;;
        --workload) echo "run-default.sh sets it (memcached); run profile.py --compare --workload nginx" ;;
        --check-args) echo "run-default.sh uses it itself; run profile.py --check-args" ;;
        *) return 1 ;;
    esac
}
OWN="--out --compare --record --repeat --iommu --policy --duration --vcpus --accel --workload --check-args"
extra=() rec_extra=()
while [ $# -gt 0 ]; do
    a=$1; shift
    case $a in
        --?*) name=${a%%=*} ;;
        *) extra+=("$a"); continue ;;
    esac
    if [ "$name" = --trace-kb ]; then
        if [ "$a" = --trace-kb ]; then
            [ $# -gt 0 ] || die "--trace-kb needs a number of KiB."
            rec_extra+=("$a" "$1"); shift
        else
            rec_extra+=("$a")
        fi
        continue
    fi
    [[ --trace-kb == "$name"* ]] && [[ ${#name} -gt 3 ]] && die "$name: write --trace-kb in full (it goes to the recording only)."
    for o in $OWN; do
        if [[ $o == "$name"* ]]; then
            die "$name$([ "$name" = "$o" ] || echo " ($o)"): $(own "$o")."
        fi
    done
    extra+=("$a")
done

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
out=$BUILD/profile/$(date +%Y%m%d-%H%M%S)-memcached-compare
runs() {  # runs ACCEL: the two profile.py command lines
    compare=(python3 "$TOP/scripts/profile/profile.py" --workload memcached --duration "$DURATION"
             --vcpus "$VCPUS" --accel "$1" --compare "$configs" --out "$out" ${extra[@]+"${extra[@]}"})
    recording=(python3 "$TOP/scripts/profile/profile.py" --workload memcached --iommu "$IOMMU"
               --duration "$DURATION" --vcpus "$VCPUS" --accel "$1" --no-perf
               --record "$out/memcached.trace" --out "$out/record"
               --quiet ${extra[@]+"${extra[@]}"} ${rec_extra[@]+"${rec_extra[@]}"})
}
# Both runs' arguments before anything boots, the KVM probe included (it
# answers tcg or kvm, and kvm only where KVM works, so its answer cannot
# make them wrong); a refusal is profile.py's own message and status (2).
runs tcg
"${compare[@]}" --check-args || exit $?
[ $record = 0 ] || "${recording[@]}" --check-args || exit $?
accel=$(bash "$TOP/scripts/accel.sh")
runs "$accel"
per=$((60 + DURATION + 40))
first=""
ls "$CACHE"/profile/rootfs/*.cpio >/dev/null 2>&1 || first=" plus about 4 minutes once to build the guest image"
say "profile: memcached, ${configs/,/ vs }$([ $record = 1 ] && echo ", then a recording of the $IOMMU run replayed at 2, 16 and 64 CPUs"): $boots guest boot(s) under ${accel^^}, about $(( (boots * per + 59) / 60 )) minutes${first}."
# A failed row of the comparison (exit status 1 after its table) does not
# stop the recording; the exit status still says it failed.  Anything else
# (no table: QEMU, the image or the result directory failed; interrupted)
# stops here, after profile.py's own message.
rc=0
"${compare[@]}" || rc=$?
if [ $rc -gt 1 ]; then
    exit $rc
elif [ ! -f "$out/compare.txt" ]; then
    [ $rc != 0 ] || die "the comparison wrote no table in $out (messages above)."
    exit $rc
fi
[ $record = 1 ] || exit $rc
say "recording $IOMMU's DMA stream: memcached for $DURATION s with the guest kernel's iommu tracepoints and kprobes (one more boot)"
"${recording[@]}" > "$out/record.log" 2>&1 || {
    sed 's/^/    /' "$out/record.log" | tail -n 20 || true
    die "the recording run failed (its report: $out/record/report.txt)."
}
sed -n '/^-- recording/,/^-- /p' "$out/record/report.txt" | sed '$d'
# The recording run's own load (idle share, host), as the table's rows have it.
echo "-- the recording run's load"
sed -n '/^   guest idle/,/^   QEMU threads/p' "$out/record/report.txt"
[ -s "$out/memcached.trace" ] || die "the recording run wrote no trace (its report: $out/record/report.txt)."
vcpus=$VCPUS  # (--vcpus is refused among the extra arguments)
say "replaying $out/memcached.trace with viommu-sim at 2, 16 and 64 CPUs"
python3 "$TOP/scripts/profile/replay.py" "$out/memcached.trace" --cpus 2,16,64 \
    --svg "$out/replay.svg" --json "$out/replay.json" \
    --title "memcached recorded behind $IOMMU ($vcpus vCPU, ${accel^^}), replayed by viommu-sim" | tee "$out/replay.txt"
[ "${PIPESTATUS[0]}" = 0 ] || die "the replay failed (messages above)."
say "replay table: $out/replay.txt  plot: $out/replay.svg"
exit $rc
