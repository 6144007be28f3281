#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make run: the main job.  Boots Debian guests running memcached with
# traffic crossing IOMMU-translated NICs, with no IOMMU and behind the chosen
# vIOMMU, and prints throughput, the vIOMMU's statistics and the guest's
# profile side by side.
#   IOMMU=viommu-vtd|intel-iommu|none   QEMU_ARGS="extra QEMU options"
set -euo pipefail
. "$(dirname "$0")/lib.sh"

IOMMU=${IOMMU:-viommu-vtd}
case $IOMMU in viommu-vtd|intel-iommu|none) ;; *) die "unknown IOMMU '$IOMMU' (use viommu-vtd, intel-iommu or none)." ;; esac

say "make run: host setup, QEMU build, guest images, then the profile (first run on 2 cores: about 15 minutes; later runs about 4 minutes)"
bash "$TOP/scripts/setup-host.sh" guest
bash "$TOP/scripts/fetch-qemu.sh"
bash "$TOP/scripts/build-qemu.sh"
qemu_args=()
for a in ${QEMU_ARGS:-}; do qemu_args+=("--qemu-arg=$a"); done
IOMMU=$IOMMU exec bash "$TOP/scripts/profile/run-default.sh" "${qemu_args[@]}"
