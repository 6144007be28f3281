#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Print the accelerator guests should use: "kvm" only when a probe shows a
# guest really executes under KVM, else "tcg".  On the machines this project
# is developed on /dev/kvm exists and firmware runs, but a Linux guest hangs
# in the host kernel, so the probe boots the guest image under KVM and waits
# (bounded) for its scenario to report.  The answer is cached in build/accel.
#   VIOMMU_ACCEL=tcg|kvm overrides the probe.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

case ${VIOMMU_ACCEL:-} in
    tcg|kvm) echo "$VIOMMU_ACCEL"; exit 0 ;;
    "") ;;
    *) die "VIOMMU_ACCEL must be tcg or kvm, not '$VIOMMU_ACCEL'." ;;
esac
cache=$BUILD/accel
if [ -f "$cache" ]; then cat "$cache"; exit 0; fi

qemu=$BUILD/qemu-system-x86_64
accel=tcg
if [ -r /dev/kvm ] && [ -w /dev/kvm ] && [ -x "$qemu" ]; then
    say "probing whether a guest really runs under KVM (at most 60 s)" >&2
    image=$(bash "$TOP/scripts/guest/build-image.sh" --print)
    log=$(mktemp)
    timeout -k 2 60 "$qemu" -accel kvm -M q35 -m 512 -smp 1 -display none -nodefaults -no-reboot \
        -L /usr/share/seabios -L /usr/lib/ipxe/qemu -L /usr/share/qemu -serial "file:$log" \
        -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
        -append "console=ttyS0 panic=-1 viommu.test=boot" >/dev/null 2>&1 || true
    grep -q 'VIOMMU-TEST: end boot pass' "$log" && accel=kvm
    rm -f "$log"
fi
mkdir -p "$BUILD"
echo "$accel" > "$cache"
echo "$accel"
