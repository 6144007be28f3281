#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make bench: every benchmark, reported (never pass/fail).  Figures are ratios
# against baselines measured in the same run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bash "$TOP/scripts/setup-host.sh" qemu
bash "$TOP/scripts/build-standalone.sh"
say "standalone benchmarks (engine, allocator, simulator)"
meson test -C "$BUILD/standalone" --no-rebuild --benchmark --verbose

bash "$TOP/scripts/fetch-qemu.sh"
bash "$TOP/scripts/build-qemu.sh"
bash "$TOP/scripts/build-qemu.sh" tests/qtest/viommu/viommu-bench-dma tests/qtest/viommu/viommu-bench-inv tests/qtest/viommu/viommu-bench-msi
say "viommu-dma traffic and invalidations through viommu-vtd and intel-iommu in legacy mode and scalable mode (x-scalable-mode=on, without and with x-flts=on), and an MSI storm (every ratio above 1: viommu-vtd better)"
for b in dma inv msi; do
    QTEST_QEMU_BINARY=$BUILD/qemu-system-x86_64 "$BUILD/qemu/tests/qtest/viommu/viommu-bench-$b"
done
