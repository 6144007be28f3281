#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The default short profile comparison: memcached, lazy invalidation,
# no IOMMU versus viommu-vtd (intel-iommu while this QEMU has no viommu-vtd),
# one table with ratios to "none" and an SVG plot under build/profile/.
#
#   run-default.sh            DURATION=S seconds of load per run (default 10)
#   Extra arguments go to profile.py (e.g. --vcpus 1, --workload nginx).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

DURATION=${DURATION:-10}
[[ $DURATION =~ ^[0-9]+$ ]] && [ "$DURATION" -ge 1 ] || die "DURATION must be a whole number of seconds, not '$DURATION'."
qemu=${QEMU:-$BUILD/qemu-system-x86_64}
[ -x "$qemu" ] || die "no QEMU at $qemu; run 'bash scripts/fetch-qemu.sh && bash scripts/build-qemu.sh' first."
command -v debootstrap >/dev/null || die "the profiling guest needs debootstrap; install it with 'apt-get install debootstrap'."

if timeout 60 "$qemu" -device help 2>/dev/null | grep -q 'name "viommu-vtd"'; then
    other=viommu-vtd:lazy
else
    other=intel-iommu:lazy
    say "note: $qemu has no '-device viommu-vtd' yet; comparing with intel-iommu instead."
fi

per=$((60 + DURATION + 40))
first=""
ls "$CACHE"/profile/rootfs/*.cpio >/dev/null 2>&1 || first=" plus about 4 minutes once to build the guest image"
say "profile: memcached, none:lazy vs $other: 2 guest boots under TCG, about $(( (2 * per + 59) / 60 )) minutes${first}."
exec python3 "$TOP/scripts/profile/profile.py" --workload memcached --duration "$DURATION" \
    --compare "none:lazy,$other" "$@"
