# SPDX-License-Identifier: GPL-2.0-or-later
# Guest-boot options that the guest suite (tests/guest/run.sh) and the
# migration test (tests/glue/guest-migrate.sh) share, sourced by both.  The
# functions read the caller's $iommu (viommu-vtd or intel-iommu).

# scalable-mode options per stage: what the unit offers, and its properties.
sm_iommu_opts() {  # sm_iommu_opts first|second
    case $iommu/$1 in
        viommu-vtd/first) echo "x-scalable-mode=on,x-flts=on,second-stage=on" ;;
        intel-iommu/first) echo "x-scalable-mode=on,x-flts=on,aw-bits=48" ;;
        */second) echo "x-scalable-mode=on" ;;
    esac
}
sm_offer() {  # the stages the unit offers with sm_iommu_opts
    case $iommu/$1 in viommu-vtd/first) echo both ;; *) echo "$1" ;; esac
}

# The hotplug scenario's scripts/guest/run.sh options (hotplug_run_opts) and
# QEMU arguments (hotplug_qemu_args: root port rp1, block nodes hpN on
# DIR/diskN.img): legacy mode, strict, xAPIC interrupt remapping; or
# scalable mode with that stage's tables, lazy, x2APIC interrupt remapping
# (a vCPU at APIC ID 256).  APPEND adds to the kernel command line.
hotplug_opts() {  # hotplug_opts DIR ROUNDS [first|second] [APPEND]
    local dir=$1 rounds=$2 sm=${3:-} append="viommu.rounds=$2${4:+ $4}" r
    if [ -n "$sm" ]; then
        hotplug_run_opts=(--mode lazy --x2apic --iommu-opts "$(sm_iommu_opts "$sm")" --append
            "$append viommu.sm=$sm viommu.sm_offer=$(sm_offer "$sm") iomem=relaxed viommu.ir=x2apic")
    else
        hotplug_run_opts=(--mode strict --intremap on --append "$append")
    fi
    hotplug_qemu_args=(-device pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1)
    for ((r = 1; r <= rounds; r++)); do
        hotplug_qemu_args+=(-blockdev "driver=file,node-name=hpf$r,filename=$dir/disk$r.img,cache.direct=on"
                            -blockdev "driver=raw,node-name=hp$r,file=hpf$r")
    done
}
