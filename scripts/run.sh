#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make run: the main job.  Boots a Debian guest behind the chosen vIOMMU,
# moves data through IOMMU-translated virtio devices and prints the vIOMMU's
# statistics.
#   IOMMU=viommu-vtd|intel-iommu|none   QEMU_ARGS="extra QEMU options"
set -euo pipefail
. "$(dirname "$0")/lib.sh"

IOMMU=${IOMMU:-viommu-vtd}
case $IOMMU in viommu-vtd|intel-iommu|none) ;; *) die "unknown IOMMU '$IOMMU' (use viommu-vtd, intel-iommu or none)." ;; esac

say "make run: host setup, QEMU build, guest image, then one guest boot (first run on 2 cores: about 8 minutes; later runs about 1 minute)"
bash "$TOP/scripts/setup-host.sh" guest
bash "$TOP/scripts/fetch-qemu.sh"
bash "$TOP/scripts/build-qemu.sh"
exec bash "$TOP/scripts/guest/demo.sh" --iommu "$IOMMU" -- ${QEMU_ARGS:-}
