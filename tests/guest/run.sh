#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Guest tests: boot the Debian guest behind an IOMMU under TCG and check, from
# inside and from the host, that DMA really goes through it.  TAP on stdout.
#
#   tests/guest/run.sh [--iommu viommu-vtd|intel-iommu] [--only BOOT,...]
#
# Fifteen boots by default, seventeen known (about 40-80 s each under TCG):
#   dma-lazy    virtio-blk + virtio-net (iommu_platform=on) move random payloads
#               both ways, checksums compared host <-> guest; DMAR with queued
#               invalidation, lazy TLB policy, devices in DMA-FQ domains, no
#               DMAR fault; for viommu-vtd, its statistics over QMP.
#               Interrupt remapping on (intremap=on, xAPIC): the guest must
#               report it enabled, the IO-APIC's pins and the devices' MSI-X
#               vectors remapped; for viommu-vtd the statistics must show each
#               device's interrupts remapped under its source-id.
#   dma-strict  the same with iommu.strict=1 (DMA domains), and interrupt
#               remapping in x2APIC mode (eim=on): the second vCPU has APIC
#               ID 256, takes eth0's RX interrupt during the fetch.
#   dma-cm      dma-strict's checks with the unit in caching mode
#               (caching-mode=on, as for VFIO) and xAPIC interrupt remapping:
#               6.1 then also invalidates after every map, and the statistics
#               must tell those invalidations from the unmaps' ones;
#               viommu-vtd also offers 57 bits (aw-bits=57), so the DMA
#               domains have 5-level tables.
#   dma-pt      dma-lazy's checks with pass-through default domains
#               (iommu.passthrough=1, as iommu=pt servers run): the devices'
#               groups are identity domains, their DMA bypasses translation
#               and their interrupts are still remapped; for viommu-vtd the
#               statistics must show context entries read and nothing
#               translated.
#   sm-fs-lazy, sm-fs-strict, sm-ss-lazy, sm-ss-strict
#               the dma data checks (no interrupt remapping) with the unit in
#               scalable mode (x-scalable-mode=on), lazy or strict: sm-fs-*
#               offer both stages (x-flts=on,second-stage=on; intel-iommu:
#               x-flts=on, first-stage only), where 6.1 maps DMA with
#               first-stage tables; sm-ss-* offer second-stage tables only.
#               The guest checks ECAP and RTADDR.TTM; for viommu-vtd the
#               statistics must show translations by that PASID-entry PGTT.
#               By default only sm-fs-lazy and sm-ss-strict run (each stage
#               once, each policy once); name the other two with --only.
#   fault       QEMU's edu device DMAs from an unmapped IOVA: the guest's DMAR
#               fault handler reports it, edu and QEMU keep working.
#   vfio        edu bound to vfio-pci and driven from user space
#               (scripts/guest/vfio-user.c), as DPDK or SPDK in a VM are, with
#               pass-through default domains (iommu.passthrough=1): its own
#               IOVAs in an unmanaged domain (one read-only, one the top page
#               of the usable range; viommu-vtd runs with aw-bits=57, so that
#               is 0x1fffffffffff000 through 5-level tables), a copy through
#               the device, its MSI through an eventfd (xAPIC interrupt
#               remapping), a write to the read-only IOVA and one after
#               VFIO_IOMMU_UNMAP_DMA that must both fault and change nothing,
#               then a fresh mapping; for viommu-vtd the statistics must show
#               that domain's translations, faults and page invalidations,
#               and the MSI remapped.
#   vfio-sm     the same, strict, with the unit in scalable mode offering first-stage
#               tables only, so that both the DMA domain and VFIO's
#               unmanaged one are first-stage; viommu-vtd with aw-bits=57
#               and a guest CPU with LA57, so 5-level first-stage tables
#               (the top usable page is the canonical lower half's last,
#               0xfffffffffff000; 0x7ffffffff000 behind intel-iommu).
#   vhost       two virtio-net NICs (iommu_platform=on) with vhost-user backends
#               served by dpdk-testpmd, which forwards each one's frames to
#               the other; the NICs sit in separate guest network namespaces
#               and fetch random payloads (VHOST_KIB, default 128 KiB) from
#               each other over HTTP (sha256 compared in the guest);
#               iommu.strict=1, so unmaps reach the
#               backend while traffic flows; the backend must have forwarded
#               packets, and the statistics must show UNMAP notifications.
#   vhost-ats   the same with ats=on NICs and viommu-vtd device-iotlb=on: the
#               guest enables ATS, and the backend's IOTLB is invalidated by
#               device-IOTLB descriptors (DEVIOTLB_UNMAP notifications).
#   hotplug     a virtio-blk disk (iommu_platform=on) hot-added to an empty
#               PCIe root port while the guest runs, used (the host's payload
#               read, the guest's written and read back, O_DIRECT, checksums
#               compared with the host's file), removed with device_del, then
#               a second disk added to the same slot and used the same way;
#               iommu.strict=1 and interrupt remapping on, so each disk gets a
#               domain, IRTEs and a context entry, and gives them back at
#               removal (tests/guest/cues.py drives QMP on the guest's cue);
#               for viommu-vtd the statistics must show a device-selective
#               context-cache invalidation per removal.
#   hotplug-sm  the same with the unit in scalable mode (both stages offered,
#               6.1 maps DMA with first-stage tables), the lazy policy and
#               x2APIC interrupt remapping (eim=on, a vCPU at APIC ID 256):
#               each removal also tears down the disk's RID_PASID entry (a
#               PASID-cache invalidation).
#   map-race    QEMU's memory core under the IOMMU's guests, no DMA: two edu
#               devices; CPU 0 turns the memory decoding of the one with the
#               lower BAR off and on 20,000 times while CPU 1 reads the other's
#               identification register, and every read must return it
#               (scripts/guest/map-race.c; patches/qemu/0003-*).
#   reboot      the virtio-blk half of dma-lazy (strict, interrupt remapping
#               on), then the guest reboots with the IOMMU translating and
#               remapping: the warm reset must leave nothing behind, and the
#               second boot runs the same checks (boot2_*) on a unit it
#               finds as at power-on.
#   suspend     the same virtio-blk checks, then suspend to RAM (S3) with the
#               IOMMU translating and remapping; the host wakes the guest over
#               QMP (tests/guest/cues.py) and the checks run again (s3_*):
#               QEMU resets the unit on wake-up and the guest's driver must
#               find it usable again after restoring it.
# VHOST_NIC_OPTS, VHOST_EAL_ARGS and VHOST_QEMU_ARGS add NIC properties,
# dpdk-testpmd EAL arguments and QEMU arguments to the vhost boots.
# Console logs and artefacts are kept in build/guest-tests/<iommu>/ (or GUEST_TESTS_WORK).
# Exit status non-zero when any check failed.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

# make check runs the default boots: each scalable-mode stage once and each
# TLB policy once (sm-fs-lazy, sm-ss-strict); sm-fs-strict and sm-ss-lazy
# complete the four combinations with --only.
ALL_BOOTS="dma-lazy,dma-strict,dma-cm,dma-pt,sm-fs-lazy,sm-fs-strict,sm-ss-lazy,sm-ss-strict,fault,vfio,vfio-sm,vhost,vhost-ats,hotplug,hotplug-sm,map-race,reboot,suspend"
DEFAULT_BOOTS="dma-lazy,dma-strict,dma-cm,dma-pt,sm-fs-lazy,sm-ss-strict,fault,vfio,vfio-sm,vhost,vhost-ats,hotplug,hotplug-sm,map-race,reboot,suspend"
iommu=viommu-vtd only=$DEFAULT_BOOTS
while [ $# -gt 0 ]; do
    case $1 in
        --iommu) [ $# -ge 2 ] || die "--iommu needs a value."; iommu=$2; shift 2 ;;
        --only) [ $# -ge 2 ] || die "--only needs a value."; only=$2; shift 2 ;;
        -h|--help) sed -n '2,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "tests/guest/run.sh: unknown option '$1' (use --iommu DEV, --only LIST)." ;;
    esac
done
case $iommu in viommu-vtd|intel-iommu) ;; *) die "--iommu must be viommu-vtd or intel-iommu, not '$iommu'." ;; esac
for b in ${only//,/ }; do
    case ,$ALL_BOOTS, in *",$b,"*) ;; *) die "--only: unknown boot '$b' (${ALL_BOOTS//,/, })." ;; esac
done
wants() { case ",$only," in *",$1,"*) return 0 ;; esac; return 1; }

runsh=$TOP/scripts/guest/run.sh
qmppy=$TOP/scripts/qmp.py
qemu=${QEMU:-$BUILD/qemu-system-x86_64}
work=${GUEST_TESTS_WORK:-$BUILD/guest-tests/$iommu}
MIB=4
VHOST_KIB=${VHOST_KIB:-128}   # vhost payload each way (see docs/guest.rst, known problems)
# Diagnostics for the vhost boots (docs/guest.rst, known problems), all empty
# by default: more virtio-net-pci properties for both NICs (e.g.
# "packed=on"), more dpdk-testpmd EAL arguments (e.g.
# "--log-level=lib.vhost.config:debug"), more QEMU arguments (e.g.
# "-trace vhost_iotlb_miss"; split on blanks).
VHOST_NIC_OPTS=${VHOST_NIC_OPTS:-}
VHOST_EAL_ARGS=${VHOST_EAL_ARGS:-}
VHOST_QEMU_ARGS=${VHOST_QEMU_ARGS:-}
BOOT_TIMEOUT=300

# Everything a boot reports; "not reported" cases count as failures.
DMA_GUEST_CHECKS="dmar_enabled queued_invalidation tlb_policy blk_present iommu_group_blk blk_read blk_write blk_readback net_present iommu_group_net net_fetch net_upload no_dmar_faults"
# Interrupt remapping, reported by the dma boots: xAPIC in dma-lazy, x2APIC
# (eim=on, a vCPU at APIC ID 256) in dma-strict.
IR_XAPIC_GUEST_CHECKS="ir_enabled ir_ioapic ir_msix_blk ir_msix_net"
IR_X2APIC_GUEST_CHECKS="ir_enabled ir_ioapic x2apic_enabled cpu_high_apic ir_msix_blk irq_cpu1 ir_msix_net"
DMA_HOST_CHECKS="scenario_completed blk_read_matches_host blk_write_matches_host net_fetch_matches_host net_upload_matches_host qemu_exit_clean"
# Scalable mode, reported by the sm-* boots.
SM_GUEST_CHECKS="sm_ecap sm_rtaddr"
SM_STATS_CHECKS="stats_sm_stage"
FAULT_GUEST_CHECKS="dmar_enabled queued_invalidation tlb_policy edu_present iommu_group_edu edu_ident fault_reported fault_details edu_dma_done edu_alive_after_fault"
FAULT_HOST_CHECKS="scenario_completed qemu_alive_after_fault qemu_exit_clean"
DMA_STATS_CHECKS="stats_schema stats_translations stats_invalidations stats_no_faults"
IR_STATS_CHECKS="stats_ir_config stats_ir_remapped stats_ir_sources stats_ir_iec"
CM_STATS_CHECKS="stats_cm_maps"
PT_STATS_CHECKS="stats_schema stats_pt_bypass"
FAULT_STATS_CHECKS="stats_schema stats_fault_recorded"
VFIO_GUEST_CHECKS="dmar_enabled queued_invalidation tlb_policy ir_enabled ir_ioapic edu_present iommu_group_edu vfio_bound vfio_container vfio_group vfio_iova_ranges vfio_device vfio_map vfio_dma_roundtrip vfio_msi vfio_readonly_blocked vfio_unmap vfio_no_dma_after_unmap vfio_remap vfio_fault_ro vfio_fault_unmapped"
VFIO_HOST_CHECKS="scenario_completed qemu_exit_clean"
VFIO_STATS_CHECKS="stats_schema stats_vfio_domain stats_vfio_msi"
VHOST_GUEST_CHECKS="dmar_enabled queued_invalidation tlb_policy vhost_nics iommu_group_net0 iommu_group_net1 ats_net0 ats_net1 vhost_ping vhost_transfer_1to0 vhost_transfer_0to1 no_dmar_faults"
VHOST_HOST_CHECKS="scenario_completed backend_forwarded qemu_exit_clean"
VHOST_STATS_CHECKS="stats_schema stats_no_faults stats_vhost_translations stats_vhost_notifications"
HOTPLUG_ROUNDS=2
prefixed() {  # prefixed PREFIX WORD...: each word with the prefix
    local p=$1 w; shift
    for w in "$@"; do printf '%s%s ' "$p" "$w"; done
}
BLK_GUEST_CHECKS="blk_present iommu_group_blk blk_read blk_write blk_readback"
HOTPLUG_ROUND_CHECKS="$BLK_GUEST_CHECKS removed"
HOTPLUG_GUEST_CHECKS="dmar_enabled queued_invalidation tlb_policy $(prefixed hp1_ $HOTPLUG_ROUND_CHECKS) $(prefixed hp2_ $HOTPLUG_ROUND_CHECKS) no_dmar_faults"
HOTPLUG_SM_GUEST_CHECKS="$HOTPLUG_GUEST_CHECKS $SM_GUEST_CHECKS ir_enabled ir_ioapic x2apic_enabled cpu_high_apic hp1_ir_msix_blk hp2_ir_msix_blk"
HOTPLUG_HOST_CHECKS="scenario_completed device_add1 hp1_blk_read_matches_host hp1_blk_write_matches_host device_del1 device_add2 hp2_blk_read_matches_host hp2_blk_write_matches_host device_del2 qemu_exit_clean"
HOTPLUG_STATS_CHECKS="stats_schema stats_translations stats_invalidations stats_no_faults stats_hotplug_context"
MAP_RACE_GUEST_CHECKS="map_race_devices map_race_ran map_race_reads_right"
MAP_RACE_HOST_CHECKS="scenario_completed qemu_exit_clean"
REBOOT_BOOT_CHECKS="dmar_enabled queued_invalidation tlb_policy unit_found_reset ir_enabled ir_ioapic $BLK_GUEST_CHECKS ir_msix_blk no_dmar_faults"
REBOOT_GUEST_CHECKS="$REBOOT_BOOT_CHECKS reboot_mark $(prefixed boot2_ $REBOOT_BOOT_CHECKS)"
REBOOT_HOST_CHECKS="rebooted scenario_completed blk_read_matches_host boot2_blk_read_matches_host boot2_blk_write_matches_host qemu_exit_clean"
REBOOT_STATS_CHECKS="stats_schema stats_translations stats_invalidations stats_no_faults stats_reinit"
SUSPEND_BLK_CHECKS="$BLK_GUEST_CHECKS ir_msix_blk"
SUSPEND_GUEST_CHECKS="dmar_enabled queued_invalidation tlb_policy ir_enabled ir_ioapic $SUSPEND_BLK_CHECKS suspended resumed $(prefixed s3_ $SUSPEND_BLK_CHECKS no_dmar_faults)"
SUSPEND_HOST_CHECKS="system_wakeup scenario_completed blk_read_matches_host s3_blk_read_matches_host s3_blk_write_matches_host qemu_exit_clean"
SUSPEND_STATS_CHECKS="stats_schema stats_translations stats_invalidations stats_no_faults stats_reinit"

plan=0
count_words() { set -- $1; echo $#; }
ir_guest_checks() { [ "$1" = xapic ] && echo "$IR_XAPIC_GUEST_CHECKS" || echo "$IR_X2APIC_GUEST_CHECKS"; }
for b in dma-lazy:xapic dma-strict:x2apic; do
    wants "${b%:*}" || continue
    plan=$((plan + $(count_words "$DMA_GUEST_CHECKS $(ir_guest_checks "${b#*:}") $DMA_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "$DMA_STATS_CHECKS $IR_STATS_CHECKS")))
done
if wants dma-pt; then
    plan=$((plan + $(count_words "$DMA_GUEST_CHECKS $(ir_guest_checks xapic) $DMA_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "$PT_STATS_CHECKS $IR_STATS_CHECKS")))
fi
if wants dma-cm; then
    plan=$((plan + $(count_words "$DMA_GUEST_CHECKS $(ir_guest_checks xapic) cm_cap $DMA_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "aw_cap $DMA_STATS_CHECKS $IR_STATS_CHECKS $CM_STATS_CHECKS")))
fi
for b in sm-fs-lazy sm-fs-strict sm-ss-lazy sm-ss-strict; do
    wants "$b" || continue
    plan=$((plan + $(count_words "$DMA_GUEST_CHECKS $SM_GUEST_CHECKS $DMA_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "$DMA_STATS_CHECKS $SM_STATS_CHECKS")))
done
if wants fault; then
    plan=$((plan + $(count_words "$FAULT_GUEST_CHECKS $FAULT_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "$FAULT_STATS_CHECKS")))
fi
if wants vfio; then
    plan=$((plan + $(count_words "$VFIO_GUEST_CHECKS $VFIO_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "aw_cap $VFIO_STATS_CHECKS")))
fi
if wants vfio-sm; then
    plan=$((plan + $(count_words "$VFIO_GUEST_CHECKS $SM_GUEST_CHECKS $VFIO_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "aw_cap $VFIO_STATS_CHECKS $SM_STATS_CHECKS")))
fi
for b in vhost vhost-ats; do
    wants "$b" || continue
    plan=$((plan + $(count_words "$VHOST_GUEST_CHECKS $VHOST_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "$VHOST_STATS_CHECKS")))
done

if wants hotplug; then
    plan=$((plan + $(count_words "$HOTPLUG_GUEST_CHECKS $HOTPLUG_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "$HOTPLUG_STATS_CHECKS")))
fi
if wants hotplug-sm; then
    plan=$((plan + $(count_words "$HOTPLUG_SM_GUEST_CHECKS $HOTPLUG_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "$HOTPLUG_STATS_CHECKS")))
fi
wants map-race && plan=$((plan + $(count_words "$MAP_RACE_GUEST_CHECKS $MAP_RACE_HOST_CHECKS")))
if wants reboot; then
    plan=$((plan + $(count_words "$REBOOT_GUEST_CHECKS $REBOOT_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "$REBOOT_STATS_CHECKS")))
fi
if wants suspend; then
    plan=$((plan + $(count_words "$SUSPEND_GUEST_CHECKS $SUSPEND_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "$SUSPEND_STATS_CHECKS")))
fi

bail() { echo "Bail out! $*"; exit 1; }
[ -x "$qemu" ] || bail "no QEMU at $qemu (run scripts/fetch-qemu.sh and scripts/build-qemu.sh)."
devices=$("$qemu" -device help 2>/dev/null || true)
grep -q "name \"$iommu\"" <<< "$devices" || bail "$qemu has no -device $iommu."
if wants fault || wants vfio || wants vfio-sm; then
    grep -q 'name "edu"' <<< "$devices" || bail "$qemu has no -device edu (CONFIG_EDU)."
fi
if wants vhost || wants vhost-ats; then
    testpmd=$(command -v dpdk-testpmd || true)
    [ -n "$testpmd" ] || bail "no dpdk-testpmd (Debian's dpdk-dev; scripts/setup-host.sh guest installs it)."
    netdevs=$("$qemu" -netdev help 2>/dev/null || true)
    grep -qx 'vhost-user' <<< "$netdevs" || bail "$qemu has no -netdev vhost-user (configure with --enable-vhost-user)."
fi
echo "# guest image (cached after the first build)"
bash "$TOP/scripts/guest/build-image.sh" 2>&1 | sed 's/^/# /' || bail "building the guest image failed."
[ "${PIPESTATUS[0]}" = 0 ] || bail "building the guest image failed."

rm -rf "$work"; mkdir -p "$work"
echo "1..$plan"
n=0 failures=0
tap() {  # tap ok|fail NAME DETAIL
    n=$((n + 1))
    if [ "$1" = ok ]; then
        echo "ok $n - $2${3:+: $3}"
    else
        failures=$((failures + 1))
        echo "not ok $n - $2 # ${3:-failed}"
    fi
}
sha_of() { sha256sum "$1" | cut -d' ' -f1; }
datum() {  # datum LOG KEY
    sed -n "s/^VIOMMU-DATA: $2=//p" "$1" | tail -1
}

backend_pid= backend_rundir=
stop_backend() {  # SIGINT: testpmd stops forwarding and prints its statistics
    local i
    if [ -n "$backend_pid" ]; then
        kill -INT "$backend_pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do kill -0 "$backend_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$backend_pid" 2>/dev/null || true
        wait "$backend_pid" 2>/dev/null || true
    fi
    backend_pid=
    # DPDK's runtime directory for this run's --file-prefix.
    [ -z "$backend_rundir" ] || rm -rf "$backend_rundir"
    backend_rundir=
}
server_pid=
stop_server() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    server_pid=
}
boot_pid=
cleanup() {
    stop_server
    stop_backend
    if [ -n "$boot_pid" ]; then kill "$boot_pid" 2>/dev/null || true; wait "$boot_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

# boot NAME STATS-KIND RUN.SH-ARGS...: one guest boot, held after power-off
# so that QMP can still be asked; leaves NAME.log (console, \r removed),
# NAME.status (QEMU's exit status), NAME.qmp-status, NAME.stats.json.
boot() {
    local name=$1 kind=$2; shift 2
    local log=$work/$name.console qmp=$work/$name.qmp i
    echo "# boot '$name' on $iommu: $* (console log: ${log#$TOP/})"
    bash "$runsh" --quiet --iommu "$iommu" --qmp "$qmp" --hold --log "$log" \
        --timeout "$BOOT_TIMEOUT" --mib "$MIB" "$@" > "$work/$name.run.out" 2>&1 &
    boot_pid=$!
    for ((i = 0; i < BOOT_TIMEOUT + 30; i++)); do
        grep -q '^VIOMMU-TEST: end' "$log" 2>/dev/null && break
        kill -0 "$boot_pid" 2>/dev/null || break
        sleep 1
    done
    if grep -q '^VIOMMU-TEST: end' "$log" 2>/dev/null; then
        sleep 1
        python3 "$qmppy" --wait 5 "$qmp" query-status > "$work/$name.qmp-status" 2>&1 || true
        if [ "$kind" != none ]; then
            timeout 30 python3 "$TOP/scripts/viommu-stats" --qmp "$qmp" --json > "$work/$name.stats.json" 2>"$work/$name.stats.err" || true
        fi
        python3 "$qmppy" --wait 5 "$qmp" quit > /dev/null 2>&1 || true
    fi
    wait "$boot_pid" || true
    boot_pid=
    # run.sh may have refused its arguments before it made the console log.
    tr -d '\r' < "$log" > "$work/$name.log" 2>/dev/null || : > "$work/$name.log"
    [ -s "$work/$name.log" ] || tail -n 3 "$work/$name.run.out" 2>/dev/null | sed 's/^/# run.sh: /'
    echo "# $(grep -m1 '^VIOMMU-TEST: end' "$work/$name.log" || echo "no end line; last console lines:")"
    grep -q '^VIOMMU-TEST: end' "$work/$name.log" || tail -n 5 "$work/$name.log" | sed 's/^/#   /'
    # QEMU's own complaints (virtio_error, vtd_* reports) explain most failures.
    if grep -v 'terminating on signal' "$log.stderr" 2>/dev/null | grep -q .; then
        grep -v 'terminating on signal' "$log.stderr" | head -n 5 | sed 's/^/# qemu stderr: /'
    fi
    grep '^VIOMMU-INFO: eth0 ' "$work/$name.log" | sed 's/^VIOMMU-INFO: /# guest: /' || true
}

guest_checks() {  # guest_checks NAME CHECKS...
    local name=$1 c line; shift
    for c in "$@"; do
        line=$(grep -m1 "^VIOMMU-CHECK: [a-z]* $c - " "$work/$name.log" || true)
        case $line in
            "VIOMMU-CHECK: ok $c - "*) tap ok "$name: $c" "${line#VIOMMU-CHECK: ok $c - }" ;;
            "VIOMMU-CHECK: fail $c - "*) tap fail "$name: $c" "${line#VIOMMU-CHECK: fail $c - } (log ${work#$TOP/}/$name.log)" ;;
            *) tap fail "$name: $c" "not reported by the guest (log ${work#$TOP/}/$name.log)" ;;
        esac
    done
}

# A guest check that intel-iommu is known to fail (docs/intel-iommu-
# deviations.rst): passes while the deviation reproduces, as the qtests do.
# MEASURED: a check that must have passed for the failure to be the
# deviation rather than a measurement not taken (the store the deviating
# check looks for a fault of did happen, and was blocked).
deviation_check() {  # deviation_check NAME CHECK Dn WHAT [MEASURED]
    local line; line=$(grep -m1 "^VIOMMU-CHECK: [a-z]* $2 - " "$work/$1.log" || true)
    if [ -n "${5:-}" ] && [[ $line = "VIOMMU-CHECK: fail $2 - "* ]] &&
        ! grep -q "^VIOMMU-CHECK: ok $5 - " "$work/$1.log"; then
        tap fail "$1: $2" "failed, but $5 did not pass: not measured, not deviation $3"
        return
    fi
    case $line in
        "VIOMMU-CHECK: fail $2 - "*) tap ok "$1: $2" "known intel-iommu deviation $3: $4 (${line#VIOMMU-CHECK: fail $2 - })" ;;
        "VIOMMU-CHECK: ok $2 - "*) tap fail "$1: $2" "known intel-iommu deviation $3 no longer reproduces: ${line#VIOMMU-CHECK: ok $2 - }" ;;
        *) tap fail "$1: $2" "not reported by the guest (log ${work#$TOP/}/$1.log)" ;;
    esac
}

exit_check() {  # exit_check NAME
    local st; st=$(cat "$work/$1.console.status" 2>/dev/null || echo none)
    [ "$st" = 0 ] && tap ok "$1: qemu_exit_clean" "QEMU exited with status 0 after QMP quit" \
                  || tap fail "$1: qemu_exit_clean" "QEMU exit status '$st'; stderr in ${work#$TOP/}/$1.console.stderr"
}

completed_check() {
    local line; line=$(grep -m1 '^VIOMMU-TEST: end' "$work/$1.log" || true)
    [ -n "$line" ] && tap ok "$1: scenario_completed" "${line#VIOMMU-TEST: }" \
                   || tap fail "$1: scenario_completed" "the guest never reported the end of its scenario (log ${work#$TOP/}/$1.log)"
}

stats_checks() {  # stats_checks NAME KIND CHECKS...
    local name=$1 kind=$2 c line; shift 2
    python3 "$TOP/tests/guest/stats_check.py" "$kind" "$work/$name.stats.json" "$work/$name.log" > "$work/$name.stats.checks" 2>&1 || true
    for c in "$@"; do
        line=$(grep -m1 "^[a-z]* $c - " "$work/$name.stats.checks" || true)
        case $line in
            "ok $c - "*) tap ok "$name: $c" "${line#ok $c - }" ;;
            "fail $c - "*) tap fail "$name: $c" "${line#fail $c - }" ;;
            *) tap fail "$name: $c" "no statistics ($(head -c 200 "$work/$name.stats.err" 2>/dev/null; head -1 "$work/$name.stats.checks"))" ;;
        esac
    done
}

# A raw disk of 4 x MIB MiB with MIB MiB of random payload at 0; prints the
# payload's sha256.
new_disk() {  # new_disk FILE
    truncate -s $((4 * MIB))M "$1"
    head -c $((MIB << 20)) /dev/urandom | dd of="$1" conv=notrunc status=none
    head -c $((MIB << 20)) "$1" | sha256sum | cut -d' ' -f1
}

# The sha256 of [2 MIB, 3 MIB) MiB of a disk image: what test_blk wrote.
written_sha() { dd if="$1" bs=1M skip=$((2 * MIB)) count="$MIB" status=none | sha256sum | cut -d' ' -f1; }

# A checksum the guest reported (VIOMMU-DATA KEY) against the host's.
sha_check() {  # sha_check NAME CHECK KEY HOST-SHA WHAT
    local got; got=$(datum "$work/$1.log" "$3")
    [ -n "$got" ] && [ "$got" = "$4" ] && tap ok "$1: $2" "$5: $got" \
        || tap fail "$1: $2" "$5: guest '${got:-none}', host $4"
}

# The disk checks of test_blk's data under PREFIX: the guest read the
# host's payload; what it wrote is on the image after QEMU exited.
disk_checks() {  # disk_checks NAME PREFIX IMAGE PAYLOAD-SHA
    sha_check "$1" "${2}blk_read_matches_host" "${2}blk_read_sha256" "$4" "${2}read of the host's $MIB MiB"
    sha_check "$1" "${2}blk_write_matches_host" "${2}blk_write_sha256" "$(written_sha "$3")" "${2}write, on the image"
}

# What tests/guest/cues.py said of ACTION, as a TAP line.
cue_check() {  # cue_check NAME ACTION CUES-OUTPUT
    local line; line=$(grep -m1 -E "^(ok|fail) $2 - " "$3" || true)
    case $line in
        "ok "*) tap ok "$1: $2" "${line#ok $2 - }" ;;
        "fail "*) tap fail "$1: $2" "${line#fail $2 - }" ;;
        *) tap fail "$1: $2" "cues.py did not get there ($(tail -1 "$3" 2>/dev/null))" ;;
    esac
}

# sm_iommu_opts, sm_offer, hotplug_opts
. "$TOP/tests/guest/boot-opts.sh"

dma_boot() {  # dma_boot NAME MODE IR(xapic|x2apic|none) [SM(first|second|"")] [CM(0|1)]
    local name=$1 mode=$2 ir=$3 sm=${4:-} cm=${5:-0} d=$work/$1 port i want ir_args sm_args
    mkdir -p "$d/srv"
    head -c $((MIB << 20)) /dev/urandom > "$d/srv/payload.bin"
    local disk_sha; disk_sha=$(new_disk "$d/disk.img")
    python3 "$TOP/scripts/guest/hostserver.py" --dir "$d/srv" --port-file "$d/port" --timeout $((BOOT_TIMEOUT + 60)) &
    server_pid=$!
    for ((i = 0; i < 100; i++)); do [ -s "$d/port" ] && break; sleep 0.1; done
    port=$(cat "$d/port" 2>/dev/null || true); [ -n "$port" ] || port=0

    local append=
    case $ir in
        x2apic) ir_args=(--x2apic); append="viommu.ir=$ir" ;;
        xapic) ir_args=(--intremap on); append="viommu.ir=$ir" ;;
        *) ir_args=() ;;
    esac
    # Scalable mode: iomem=relaxed lets the guest read RTADDR_REG with devmem
    # (the driver holds the register page; CONFIG_IO_STRICT_DEVMEM=y).
    sm_args=()
    if [ -n "$sm" ]; then
        sm_args=(--iommu-opts "$(sm_iommu_opts "$sm")")
        append+="${append:+ }viommu.sm=$sm viommu.sm_offer=$(sm_offer "$sm") iomem=relaxed"
    elif [ "$cm" = 1 ] && [ "$iommu" = viommu-vtd ]; then
        # and 5-level tables for the DMA API's domains (intel-iommu: 48 bits)
        sm_args=(--iommu-opts caching-mode=on,aw-bits=57)
        append+="${append:+ }viommu.cm=1 viommu.aw=57"
    elif [ "$cm" = 1 ]; then
        sm_args=(--iommu-opts caching-mode=on)
        append+="${append:+ }viommu.cm=1"
    fi
    boot "$name" "$([ "$iommu" = viommu-vtd ] && echo dma || echo none)" \
        --mode "$mode" --test dma --disk "$d/disk.img" --net --port "$port" \
        "${ir_args[@]}" "${sm_args[@]}" ${append:+--append "$append"}
    stop_server
    if [ -n "$sm" ]; then
        guest_checks "$name" $DMA_GUEST_CHECKS $SM_GUEST_CHECKS
    else
        guest_checks "$name" $DMA_GUEST_CHECKS $(ir_guest_checks "$ir")
        [ "$cm" = 0 ] || guest_checks "$name" cm_cap
        [ "$cm" = 0 ] || [ "$iommu" != viommu-vtd ] || guest_checks "$name" aw_cap
    fi
    completed_check "$name"
    disk_checks "$name" "" "$d/disk.img" "$disk_sha"
    sha_check "$name" net_fetch_matches_host net_fetch_sha256 "$(sha_of "$d/srv/payload.bin")" \
        "fetch of the host's $MIB MiB"
    want=$(cat "$d/srv"/upload-*.sha256 2>/dev/null | tail -1 | cut -d' ' -f1 || true)
    sha_check "$name" net_upload_matches_host net_upload_sha256 "${want:-nothing received}" \
        "upload, as the host received it"
    exit_check "$name"
    if [ "$iommu" = viommu-vtd ]; then
        if [ -n "$sm" ]; then
            stats_checks "$name" "dma-sm-$sm" $DMA_STATS_CHECKS $SM_STATS_CHECKS
        elif [ "$cm" = 1 ]; then
            stats_checks "$name" "dma-cm" $DMA_STATS_CHECKS $IR_STATS_CHECKS $CM_STATS_CHECKS
        elif [ "$mode" = pt ]; then
            stats_checks "$name" "dma-pt" $PT_STATS_CHECKS $IR_STATS_CHECKS
        else
            stats_checks "$name" "dma-$ir" $DMA_STATS_CHECKS $IR_STATS_CHECKS
        fi
    fi
    return 0
}

fault_boot() {
    local name=fault st
    boot "$name" "$([ "$iommu" = viommu-vtd ] && echo fault || echo none)" --mode lazy --test fault --edu
    guest_checks "$name" $FAULT_GUEST_CHECKS
    completed_check "$name"
    st=$(cat "$work/$name.qmp-status" 2>/dev/null || true)
    case $st in
        *'"status"'*) tap ok "$name: qemu_alive_after_fault" "QMP query-status after the guest's fault scenario: $st" ;;
        *) tap fail "$name: qemu_alive_after_fault" "QMP did not answer after the fault scenario: ${st:-no answer}" ;;
    esac
    exit_check "$name"
    [ "$iommu" = viommu-vtd ] && stats_checks "$name" fault $FAULT_STATS_CHECKS
    return 0
}

# vfio_boot NAME [SM(first)]: the vfio scenario (see the header).
vfio_boot() {
    local name=$1 sm=${2:-} mode=pt opts= qemu_args=() append=viommu.ir=xapic
    local checks=$VFIO_GUEST_CHECKS
    # Legacy mode: pass-through default domains, as iommu=pt hosts of DPDK
    # VMs run, so edu's context goes from pass-through to VFIO's domain and
    # back.  Scalable mode: first-stage tables only, so that 6.1 gives the
    # unmanaged domain first-stage tables too (with both stages offered,
    # first_level_by_default() gives it second-stage ones).
    if [ -n "$sm" ]; then
        mode=strict opts="x-scalable-mode=on,x-flts=on"
        [ "$iommu" = intel-iommu ] && opts+=",aw-bits=48"
        append+=" viommu.sm=$sm viommu.sm_offer=$sm iomem=relaxed"
        checks+=" $SM_GUEST_CHECKS"
    fi
    if [ "$iommu" = viommu-vtd ]; then
        # 5-level tables for every domain (intel-iommu offers 39 and 48
        # bits); 5-level first-stage tables need a CPU with LA57.
        opts+="${opts:+,}aw-bits=57"
        append+=" viommu.aw=57"
        checks+=" aw_cap"
        [ -z "$sm" ] || qemu_args=(-- -cpu qemu64,+la57)
    fi
    boot "$name" "$([ "$iommu" = viommu-vtd ] && echo vfio || echo none)" --mode "$mode" --test vfio \
        --edu --intremap on ${opts:+--iommu-opts "$opts"} --append "$append" "${qemu_args[@]}"
    if [ "$iommu" = intel-iommu ]; then
        guest_checks "$name" ${checks/ vfio_fault_ro/}
        deviation_check "$name" vfio_fault_ro D1 "no fault recorded for edu's write to the read-only IOVA, \
whose translation edu's earlier read had put in intel-iommu's IOTLB" vfio_readonly_blocked
    else
        guest_checks "$name" $checks
    fi
    completed_check "$name"
    exit_check "$name"
    if [ "$iommu" = viommu-vtd ]; then
        if [ -n "$sm" ]; then
            stats_checks "$name" vfio-sm-$sm-aw57 $VFIO_STATS_CHECKS $SM_STATS_CHECKS
        else
            stats_checks "$name" vfio-aw57 $VFIO_STATS_CHECKS
        fi
    fi
    return 0
}

# vhost_boot NAME ATS(0|1): the vhost-user scenario (see the header).
vhost_boot() {
    local name=$1 ats=$2 d=$work/$1 i t line rx0 rx1 tx0 tx1 opts= append=
    mkdir -p "$d"
    local tp_log=$d/testpmd.log
    # Two vhost-user ports (server sockets), IOTLB support on, forwarded to
    # each other.  No hugepages and no PCI: plain memory, vdev ports only.
    # An IOTLB miss makes the vhost library refuse the packet while it asks
    # QEMU for the translation; in strict mode every fresh RX buffer misses
    # once, so plain io forwarding would drop nearly every packet towards
    # the guest.  "io retry" retries a refused burst (200 us apart, up to
    # 1 s) until the translation has arrived.
    printf 'set fwd io retry\nset burst tx delay 200 retry 5000\n' > "$d/testpmd.cmds"
    local prefix="viommu-$$-$name"
    if [ "$(id -u)" = 0 ]; then backend_rundir=/var/run/dpdk/$prefix; else backend_rundir=${XDG_RUNTIME_DIR:-/tmp}/dpdk/$prefix; fi
    # shellcheck disable=SC2086 # VHOST_EAL_ARGS: words on purpose
    "$testpmd" -l 0-1 --no-huge --no-pci -m 128 --no-shconf --file-prefix "$prefix" $VHOST_EAL_ARGS \
        --vdev "net_vhost0,iface=$d/vu0.sock,queues=1,iommu-support=1" \
        --vdev "net_vhost1,iface=$d/vu1.sock,queues=1,iommu-support=1" \
        -- --forward-mode=io --nb-cores=1 --total-num-mbufs=8192 --stats-period 10 \
        --cmdline-file="$d/testpmd.cmds" > "$tp_log" 2>&1 < /dev/null &
    backend_pid=$!
    for ((i = 0; i < 300; i++)); do
        [ -S "$d/vu0.sock" ] && [ -S "$d/vu1.sock" ] && break
        kill -0 "$backend_pid" 2>/dev/null || break
        sleep 0.1
    done
    # The forwarding core busy-polls: let QEMU's vCPUs go first whenever
    # they have work (per thread: renice acts on thread ids).
    for t in /proc/"$backend_pid"/task/*; do renice -n 10 -p "${t##*/}" > /dev/null 2>&1 || true; done
    local nic="iommu_platform=on,disable-legacy=on,romfile=,mrg_rxbuf=on,csum=off,guest_csum=off,gso=off"
    nic+=",host_tso4=off,host_tso6=off,host_ecn=off,host_ufo=off,guest_tso4=off,guest_tso6=off,guest_ecn=off,guest_ufo=off"
    [ -z "$VHOST_NIC_OPTS" ] || nic+=",$VHOST_NIC_OPTS"
    if [ "$ats" = 1 ]; then
        nic+=",ats=on"
        opts=device-iotlb=on
    fi
    append="viommu.ats=$ats viommu.kib=$VHOST_KIB"
    # shellcheck disable=SC2086 # VHOST_QEMU_ARGS: words on purpose
    boot "$name" "$([ "$iommu" = viommu-vtd ] && echo vhost || echo none)" \
        --mode strict --test vhost --append "$append" ${opts:+--iommu-opts "$opts"} -- \
        -object "memory-backend-memfd,id=vmem,size=1024M,share=on" -machine memory-backend=vmem \
        -device pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1 \
        -device pcie-root-port,id=rp2,bus=pcie.0,chassis=2,slot=2 \
        -chardev "socket,id=vu0,path=$d/vu0.sock" -netdev vhost-user,id=vn0,chardev=vu0 \
        -device "virtio-net-pci,netdev=vn0,bus=rp1,mac=52:54:00:12:34:01,$nic" \
        -chardev "socket,id=vu1,path=$d/vu1.sock" -netdev vhost-user,id=vn1,chardev=vu1 \
        -device "virtio-net-pci,netdev=vn1,bus=rp2,mac=52:54:00:12:34:02,$nic" $VHOST_QEMU_ARGS
    stop_backend
    guest_checks "$name" $VHOST_GUEST_CHECKS
    completed_check "$name"
    # testpmd's closing report: "Forward statistics for port N" blocks.
    tr -d '\033' < "$tp_log" > "$d/testpmd.txt"
    read -r rx0 tx0 rx1 tx1 < <(awk '
        /Forward statistics for port 0/ { p = 0 } /Forward statistics for port 1/ { p = 1 }
        /Accumulated forward statistics/ { p = -1 }
        p >= 0 && /RX-packets:/ { rx[p] = $2 } p >= 0 && /TX-packets:/ { tx[p] = $2 }
        END { printf "%d %d %d %d\n", rx[0], tx[0], rx[1], tx[1] }' "$d/testpmd.txt")
    if [ "${rx0:-0}" -gt 0 ] && [ "${rx1:-0}" -gt 0 ] && [ "${tx0:-0}" -gt 0 ] && [ "${tx1:-0}" -gt 0 ]; then
        tap ok "$name: backend_forwarded" "dpdk-testpmd port 0 RX $rx0 TX $tx0, port 1 RX $rx1 TX $tx1 packets"
    else
        tap fail "$name: backend_forwarded" "dpdk-testpmd port 0 RX ${rx0:-?} TX ${tx0:-?}, port 1 RX ${rx1:-?} TX ${tx1:-?} (log ${tp_log#$TOP/})"
    fi
    exit_check "$name"
    [ "$iommu" = viommu-vtd ] && stats_checks "$name" "vhost-ats$ats" $VHOST_STATS_CHECKS
    return 0
}

wants dma-lazy && dma_boot dma-lazy lazy xapic
wants dma-strict && dma_boot dma-strict strict x2apic
wants dma-cm && dma_boot dma-cm strict xapic "" 1
wants dma-pt && dma_boot dma-pt pt xapic
wants sm-fs-lazy && dma_boot sm-fs-lazy lazy none first
wants sm-fs-strict && dma_boot sm-fs-strict strict none first
wants sm-ss-lazy && dma_boot sm-ss-lazy lazy none second
wants sm-ss-strict && dma_boot sm-ss-strict strict none second
wants fault && fault_boot
wants vfio && vfio_boot vfio
wants vfio-sm && vfio_boot vfio-sm first
# The hotplug scenario (see the header): the disks' block nodes exist from
# the start; cues.py adds and removes the devices on the guest's cue.
hotplug_boot() {  # hotplug_boot NAME [first]: legacy mode, or scalable mode (first stage)
    local name=$1 sm=${2:-} d=$work/$1 r a drv kind=hotplug${2:+-sm}
    local -a disk_sha=() hotplug_run_opts hotplug_qemu_args
    hotplug_opts "$d" "$HOTPLUG_ROUNDS" "$sm"
    mkdir -p "$d"
    for ((r = 1; r <= HOTPLUG_ROUNDS; r++)); do
        disk_sha[r]=$(new_disk "$d/disk$r.img")
    done
    python3 "$TOP/tests/guest/cues.py" "$work/$name.qmp" "$work/$name.console" \
        "$HOTPLUG_ROUNDS" $((BOOT_TIMEOUT + 30)) > "$d/driver.out" 2>&1 &
    drv=$!
    boot "$name" "$([ "$iommu" = viommu-vtd ] && echo "$kind" || echo none)" \
        --test hotplug "${hotplug_run_opts[@]}" -- "${hotplug_qemu_args[@]}"
    wait "$drv" || true
    sed 's/^/# cues.py: /' "$d/driver.out"
    if [ -n "$sm" ]; then
        guest_checks "$name" $HOTPLUG_SM_GUEST_CHECKS
    else
        guest_checks "$name" $HOTPLUG_GUEST_CHECKS
    fi
    completed_check "$name"
    for ((r = 1; r <= HOTPLUG_ROUNDS; r++)); do
        for a in add del; do
            cue_check "$name" "device_$a$r" "$d/driver.out"
            [ "$a" = del ] || disk_checks "$name" "hp${r}_" "$d/disk$r.img" "${disk_sha[r]}"
        done
    done
    exit_check "$name"
    [ "$iommu" = viommu-vtd ] && stats_checks "$name" "$kind" $HOTPLUG_STATS_CHECKS
    return 0
}

# The map-race scenario (see the header): two edu devices, no DMA.
map_race_boot() {
    local name=map-race
    boot "$name" none --mode lazy --test map-race -- -device edu -device edu
    guest_checks "$name" $MAP_RACE_GUEST_CHECKS
    completed_check "$name"
    exit_check "$name"
    return 0
}

# The reboot scenario (see the header): one QEMU, two boots, one disk.
reboot_boot() {
    local name=reboot d=$work/reboot log disk_sha
    mkdir -p "$d"
    disk_sha=$(new_disk "$d/disk.img")
    boot "$name" "$([ "$iommu" = viommu-vtd ] && echo reinit || echo none)" \
        --mode strict --test reboot --reboot --intremap on --disk "$d/disk.img" --append "viommu.ir=xapic"
    log=$work/$name.log
    guest_checks "$name" $REBOOT_GUEST_CHECKS
    # the second boot began after the first one's reset
    if grep -q '^VIOMMU-REBOOT: resetting' "$log" && [ "$(grep -c '^VIOMMU-TEST: begin' "$log")" = 2 ] \
        && grep -q '^VIOMMU-REBOOT: second boot' "$log"; then
        tap ok "$name: rebooted" "the guest reset the machine with the IOMMU on and booted again behind it"
    else
        tap fail "$name: rebooted" "$(grep -c '^VIOMMU-TEST: begin' "$log") boots seen in ${log#$TOP/}"
    fi
    completed_check "$name"
    sha_check "$name" blk_read_matches_host blk_read_sha256 "$disk_sha" "first boot's read of the host's $MIB MiB"
    disk_checks "$name" boot2_ "$d/disk.img" "$disk_sha"
    exit_check "$name"
    [ "$iommu" = viommu-vtd ] && stats_checks "$name" reinit $REBOOT_STATS_CHECKS
    return 0
}

# The suspend scenario (see the header): S3 enabled in the firmware
# (ICH9-LPC.disable_s3=0), cues.py wakes the guest.
suspend_boot() {
    local name=suspend d=$work/suspend drv disk_sha
    mkdir -p "$d"
    disk_sha=$(new_disk "$d/disk.img")
    python3 "$TOP/tests/guest/cues.py" "$work/$name.qmp" "$work/$name.console" 0 \
        $((BOOT_TIMEOUT + 30)) > "$d/driver.out" 2>&1 &
    drv=$!
    boot "$name" "$([ "$iommu" = viommu-vtd ] && echo reinit || echo none)" \
        --mode strict --test suspend --intremap on --disk "$d/disk.img" --append "viommu.ir=xapic" -- \
        -global ICH9-LPC.disable_s3=0
    wait "$drv" || true
    sed 's/^/# cues.py: /' "$d/driver.out"
    guest_checks "$name" $SUSPEND_GUEST_CHECKS
    cue_check "$name" system_wakeup "$d/driver.out"
    completed_check "$name"
    sha_check "$name" blk_read_matches_host blk_read_sha256 "$disk_sha" "read of the host's $MIB MiB before S3"
    disk_checks "$name" s3_ "$d/disk.img" "$disk_sha"
    exit_check "$name"
    [ "$iommu" = viommu-vtd ] && stats_checks "$name" reinit $SUSPEND_STATS_CHECKS
    return 0
}

wants vhost && vhost_boot vhost 0
wants vhost-ats && vhost_boot vhost-ats 1
wants hotplug && hotplug_boot hotplug
wants hotplug-sm && hotplug_boot hotplug-sm first
wants map-race && map_race_boot
wants reboot && reboot_boot
wants suspend && suspend_boot

[ "$n" = "$plan" ] || { echo "# internal error: planned $plan checks, ran $n"; failures=$((failures + 1)); }
echo "# $((n - failures)) of $n checks passed on $iommu; logs in ${work#$TOP/}/"
[ "$failures" = 0 ]
