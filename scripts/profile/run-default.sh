#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The default short profile comparison (make run): memcached, lazy
# invalidation, no IOMMU versus $IOMMU (default viommu-vtd), one table with
# ratios to "none" and an SVG plot under build/profile/.
#
#   run-default.sh            DURATION=S seconds of load per run (default 10)
#                             IOMMU=viommu-vtd|intel-iommu|none
#   Extra arguments go to profile.py (e.g. --vcpus 1, --qemu-arg=-smp).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

DURATION=${DURATION:-10}
[[ $DURATION =~ ^[0-9]+$ ]] && [ "$DURATION" -ge 1 ] || die "DURATION must be a whole number of seconds, not '$DURATION'."
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

per=$((60 + DURATION + 40))
first=""
ls "$CACHE"/profile/rootfs/*.cpio >/dev/null 2>&1 || first=" plus about 4 minutes once to build the guest image"
say "profile: memcached, ${configs/,/ vs }: $boots guest boot(s) under ${accel^^}, about $(( (boots * per + 59) / 60 )) minutes${first}."
exec python3 "$TOP/scripts/profile/profile.py" --workload memcached --duration "$DURATION" \
    --accel "$accel" --compare "$configs" "$@"
