#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make run: the main job.  Boots Debian guests running memcached with
# traffic crossing IOMMU-translated NICs, with no IOMMU and behind the chosen
# vIOMMU, and prints throughput, the vIOMMU's statistics and the guest's
# profile side by side.
#   IOMMU=viommu-vtd|intel-iommu|none   VCPUS=N guest vCPUs (default 2)
#   DURATION=S seconds of load per run (default 10, at most 3600)
#   QEMU_ARGS="extra QEMU options" (one argument per word; not -smp: VCPUS)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# Checked before any setup (scripts/profile/run-default.sh and profile.py
# check them again).
IOMMU=${IOMMU:-viommu-vtd}
case $IOMMU in viommu-vtd|intel-iommu|none) ;; *) die "unknown IOMMU '$IOMMU' (use viommu-vtd, intel-iommu or none)." ;; esac
check_run_settings
set -f
for a in ${QEMU_ARGS:-}; do
    case $a in -smp|-smp=*|--smp|--smp=*) die "QEMU_ARGS: -smp would give the guest other vCPUs than the report, the load generator and the replay assume; set VCPUS=N instead." ;; esac
done
set +f

say "make run: host setup, QEMU build, guest images, then the profile (first run on 2 cores: about 15 minutes; later runs about 4 minutes)"
bash "$TOP/scripts/setup-host.sh" guest
bash "$TOP/scripts/fetch-qemu.sh"
bash "$TOP/scripts/build-qemu.sh"
qemu_args=()
set -f
for a in ${QEMU_ARGS:-}; do qemu_args+=("--qemu-arg=$a"); done
set +f
IOMMU=$IOMMU VCPUS=$VCPUS DURATION=$DURATION exec bash "$TOP/scripts/profile/run-default.sh" "${qemu_args[@]}"
