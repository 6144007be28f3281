#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Migration of a live guest behind viommu-vtd, as TAP: boot the viommu-lab
# guest (scripts/guest/run.sh), migrate it to a file while it runs, restore it
# in a new QEMU and check that the DMA the guest does afterwards still
# translates.  Five configurations, five cases each:
#   legacy  test "dma" (virtio-blk and virtio-net behind the unit) in legacy
#           mode as the unit defaults to, migrated as soon as its scenario
#           starts: block reads and writes with read-back (during or after
#           the migration), then, held until the source is gone
#           (viommu.hold=1), network transfers on the destination; no DMAR
#           faults;
#   sm-ir   the same in scalable mode (first-stage tables, both stages
#           offered) with interrupt remapping (xAPIC), so that the PASID-table
#           and interrupt-remapping state cross too;
#   vfio    test "vfio" (a user-space driver through VFIO, pass-through
#           default domains, 5-level tables) driving viommu-dma (QEMU's edu,
#           which the guest suite's vfio boots use, has no migration state),
#           held between its VFIO_IOMMU_MAP_DMA calls and its first DMA
#           (viommu.hold=1) until the host has migrated it: every transfer,
#           the MSI-X through its eventfd and the two faults it provokes
#           happen on the destination, through mappings made on the source;
#   hotplug test "hotplug" (strict, interrupt remapping): a virtio-blk disk
#           hot-added to a PCIe root port and bound to its driver on the
#           source, held there (viommu.hold=1); the destination starts with
#           that disk on its command line, the guest does its I/O on it,
#           the host removes it, hot-adds a second one to the same slot and
#           removes that too (tests/guest/cues.py on each side);
#   hotplug-sm  the same in scalable mode (first-stage tables, both stages
#           offered, lazy) with x2APIC interrupt remapping, so that the
#           disk's RID_PASID entry is made on the source.
# About 20 s each under TCG.  QEMU=path overrides the binary;
# MIGRATE_CONFIGS="legacy sm-ir vfio hotplug hotplug-sm" picks configurations.
set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
export QEMU=${QEMU:-$TOP/build/qemu-system-x86_64}
top_work=$(mktemp -d "${TMPDIR:-/tmp}/viommu-guest-migrate.XXXXXX")
srv_pid=
cleanup() { [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null; }
trap cleanup EXIT

n=0 failed=0
tap() {  # tap ok|fail NAME [DETAIL]
    n=$((n + 1))
    if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
    [ -n "${3:-}" ] && echo "# $3"
    return 0
}
qmp() {  # qmp SOCKET COMMAND [JSON-ARGS]: prints the return value
    python3 "$TOP/scripts/qmp.py" --wait 5 "$@"
}
# sm_iommu_opts, sm_offer, hotplug_opts (as the guest suite boots them)
. "$TOP/tests/guest/boot-opts.sh"

migrate_config() {  # migrate_config legacy|sm-ir|vfio|hotplug|hotplug-sm: five cases
    local cfg=$1 work=$top_work/$1 i port st ok src dst rc after before fails missing post c ended end
    local test=dma marker='VIOMMU-TEST: begin' iommu=${IOMMU:-viommu-vtd} aw=57 cues= cue_rounds=0
    local -a common opts=(--disk "$work/disk.img") dma_checks=(blk_read blk_write blk_readback net_fetch net_upload)
    local -a qemu_extra=() dst_extra=() hotplug_run_opts hotplug_qemu_args
    case $cfg in
        # dma: the guest holds between its disk and network halves until the
        # source is gone, so its network DMA is the destination's whenever
        # the switch-over comes (its disk DMA may run during the migration)
        legacy) opts+=(--append "viommu.hold=1") ;;
        sm-ir) opts+=(--intremap on --iommu-opts "$(sm_iommu_opts first)"
                      --append "viommu.ir=xapic viommu.sm=first viommu.sm_offer=$(sm_offer first) iomem=relaxed viommu.hold=1") ;;
        vfio)
            # as tests/guest/run.sh's vfio boot; intel-iommu offers 48 bits at most
            [ "$iommu" = intel-iommu ] && aw=48
            test=vfio marker='VIOMMU-TEST: hold vfio-mapped'
            opts=(--vdma --mode pt --intremap on --iommu-opts "aw-bits=$aw"
                  --append "viommu.ir=xapic viommu.aw=$aw viommu.vfio=vdma viommu.hold=1")
            dma_checks=(hold vfio_dma_roundtrip vfio_msi vfio_readonly_blocked vfio_unmap
                        vfio_no_dma_after_unmap vfio_remap vfio_fault_unmapped)
            # intel-iommu records no fault for that write (docs/intel-iommu-deviations.rst, D1)
            [ "$iommu" = intel-iommu ] || dma_checks+=(vfio_fault_ro) ;;
        hotplug|hotplug-sm)
            # as tests/guest/run.sh's hotplug boots, two rounds; the first
            # disk is added on the source, the destination has it from the start
            test=hotplug marker='VIOMMU-TEST: hold hotplug-added' cue_rounds=2
            hotplug_opts "$work" "$cue_rounds" "$([ "$cfg" = hotplug-sm ] && echo first)" viommu.hold=1
            opts=("${hotplug_run_opts[@]}") qemu_extra=("${hotplug_qemu_args[@]}")
            dma_checks=(hp1_hold hp1_blk_read hp1_blk_write hp1_blk_readback hp1_removed
                        hp2_blk_read hp2_blk_write hp2_blk_readback hp2_removed)
            mkdir -p "$work"
            for ((i = 1; i <= cue_rounds; i++)); do truncate -s 64M "$work/disk$i.img"; done
            dst_extra=(-device virtio-blk-pci,id=hpblk1,bus=rp1,drive=hp1,iommu_platform=on,disable-legacy=on) ;;
    esac
    mkdir -p "$work/srv"
    truncate -s 64M "$work/disk.img"
    head -c 4M /dev/urandom > "$work/srv/payload.bin"
    python3 "$TOP/scripts/guest/hostserver.py" --dir "$work/srv" --port-file "$work/port" --timeout 900 &
    srv_pid=$!
    for ((i = 0; i < 100; i++)); do [ -s "$work/port" ] && break; sleep 0.1; done
    port=$(cat "$work/port" 2>/dev/null || echo 0)
    common=(--iommu "$iommu" --test "$test" --net --port "$port" --quiet "${opts[@]}")

    # Source: runs until the guest starts its scenario (vfio: holds after its
    # mappings), then migrates while running (a source stopped first would
    # leave the destination paused).
    bash "$TOP/scripts/guest/run.sh" "${common[@]}" --timeout 400 --qmp "$work/src.qmp" --hold \
        --log "$work/src.log" -- "${qemu_extra[@]}" >"$work/src.out" 2>&1 &
    src=$!
    if [ "$cue_rounds" != 0 ]; then
        python3 "$TOP/tests/guest/cues.py" "$work/src.qmp" "$work/src.log" "$cue_rounds" 400 >"$work/src-cues.out" 2>&1 &
        cues=$!
    fi
    for ((i = 0; i < 3600; i++)); do
        grep -q "^$marker" "$work/src.log" 2>/dev/null && break
        kill -0 "$src" 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -q "^$marker" "$work/src.log" 2>/dev/null; then
        tap fail "$cfg: source guest boots behind $iommu" "no '$marker' line; log $work/src.log"
        echo "# remaining cases not run"; for c in 2 3 4 5; do tap fail "$cfg: case $c (source did not boot)"; done
        kill "$srv_pid" 2>/dev/null; srv_pid=
        return
    fi
    tap ok "$cfg: source guest boots behind $iommu"

    ok=1
    qmp "$work/src.qmp" migrate "{\"uri\": \"exec:cat > $work/state\"}" >/dev/null || ok=0
    for ((i = 0; i < 600 && ok; i++)); do
        st=$(qmp "$work/src.qmp" query-migrate | python3 -c 'import json,sys; print(json.load(sys.stdin).get("status"))')
        [ "$st" = completed ] && break
        case $st in failed|cancelled) ok=0 ;; esac
        sleep 0.1
    done
    [ "${st:-}" = completed ] || ok=0
    qmp "$work/src.qmp" quit >/dev/null 2>&1
    wait "$src" 2>/dev/null
    if [ -n "$cues" ]; then
        kill "$cues" 2>/dev/null; wait "$cues" 2>/dev/null
        sed 's/^/# cues.py (source): /' "$work/src-cues.out"
    fi
    if [ "$ok" = 1 ] && [ -s "$work/state" ]; then
        tap ok "$cfg: migration of the running guest to a file completes"
    else
        tap fail "$cfg: migration of the running guest to a file completes" "status ${st:-none}; $(tail -3 "$work/src.out" | tr '\n' ' ')"
    fi

    # The held guest may go on once the source is gone: only the destination
    # can see /go.
    touch "$work/srv/go"

    # Destination: restores the state and lets the guest finish its DMA.
    bash "$TOP/scripts/guest/run.sh" "${common[@]}" --timeout 400 --log "$work/dst.log" \
        --qmp "$work/dst.qmp" --hold -- "${qemu_extra[@]}" "${dst_extra[@]}" -incoming "exec:cat $work/state" \
        >"$work/dst.out" 2>&1 &
    dst=$!
    if [ "$cue_rounds" != 0 ]; then
        python3 "$TOP/tests/guest/cues.py" "$work/dst.qmp" "$work/dst.log" "$cue_rounds" 400 >"$work/dst-cues.out" 2>&1 &
        cues=$!
    fi
    # For diagnosis: the unit's statistics, every 10 s while the guest runs
    # and once it has ended (--hold keeps QEMU until the 'quit', so that
    # cues.py's last device_del also sees the device go).
    for ((i = 0; ; i++)); do
        kill -0 "$dst" 2>/dev/null || break
        ended=0
        grep -q '^VIOMMU-TEST: end' "$work/dst.log" 2>/dev/null && ended=1
        if [ "$ended" = 1 ] || ((i % 100 == 0)); then
            [ "$ended" = 1 ] && [ -n "$cues" ] && wait "$cues" 2>/dev/null
            python3 "$TOP/scripts/viommu-stats" --qmp "$work/dst.qmp" --timeout 10 \
                >"$work/dst-stats.tmp" 2>/dev/null && mv "$work/dst-stats.tmp" "$work/dst-stats.txt"
        fi
        if [ "$ended" = 1 ]; then qmp "$work/dst.qmp" quit >/dev/null 2>&1; break; fi
        sleep 0.1
    done
    wait "$dst"
    rc=$?
    [ -n "$cues" ] && { wait "$cues" 2>/dev/null; sed 's/^/# cues.py (destination): /' "$work/dst-cues.out"; }
    after=$(grep -aE '^VIOMMU-(CHECK|DATA|TEST)' "$work/dst.log" 2>/dev/null | tr -d '\r')
    if grep -q '^VIOMMU-TEST: end' <<<"$after"; then
        tap ok "$cfg: restored guest resumes and finishes its scenario"
    else
        tap fail "$cfg: restored guest resumes and finishes its scenario" "exit $rc; log $work/dst.log"
    fi
    # Which DMA checks fall after the switch-over depends on timing: all must
    # pass across both halves, and the restored guest must have done some of
    # them; a held guest (vfio, hotplug*) must have done all of them.
    before=$(grep -aE '^VIOMMU-CHECK' "$work/src.log" 2>/dev/null | tr -d '\r')
    # a failure on either side fails (the guest's own end line says so too,
    # except where a known deviation makes it end "fail")
    fails=$(grep -h '^VIOMMU-CHECK: fail' <<<"$before"$'\n'"$after")
    [ "$cfg/$iommu" = vfio/intel-iommu ] && fails=$(grep -v '^VIOMMU-CHECK: fail vfio_fault_ro ' <<<"$fails")
    missing= post=
    for c in "${dma_checks[@]}"; do
        if grep -q "^VIOMMU-CHECK: ok $c " <<<"$after"; then post+=" $c"
        elif [[ $marker = "VIOMMU-TEST: hold"* ]] || ! grep -q "^VIOMMU-CHECK: ok $c " <<<"$before"; then missing+=" $c"; fi
    done
    if [ -z "$missing" ] && [ -n "$post" ] && [ -z "$fails" ]; then
        tap ok "$cfg: DMA after migration translates ($test scenario; after switch-over:$post)"
    else
        tap fail "$cfg: DMA after migration translates ($test scenario)" \
            "not ok:${missing:- none}; after switch-over:${post:- none}; failed: $(tr '\n' ' ' <<<"$fails")"
    fi
    if [ "$cfg" = vfio ]; then
        # the two writes vfio-user provokes must fault
        # (intel-iommu: the write after the unmap only, and then its scenario
        # ends "fail" on vfio_fault_ro alone)
        c="its two blocked writes fault on the destination; the guest's scenario passes"
        end='^VIOMMU-TEST: end vfio pass'
        if [ "$iommu" = intel-iommu ]; then
            c="its write after VFIO_IOMMU_UNMAP_DMA faults on the destination; no other check fails"
            end='^VIOMMU-TEST: end vfio'
        fi
        if grep -q "^VIOMMU-CHECK: ok vfio_fault_unmapped " <<<"$after" && grep -q "$end" <<<"$after" && [ -z "$fails" ]; then
            tap ok "$cfg: $c"
        else
            tap fail "$cfg: $c" "$(grep -E 'vfio_fault|TEST: end' <<<"$after" | tr '\n' ' ')"
        fi
    elif grep -q '^VIOMMU-DATA: dmar_faults=0$' <<<"$after" && grep -q "^VIOMMU-TEST: end $test pass" <<<"$after"; then
        tap ok "$cfg: no DMAR faults after migration; the guest's scenario passes"
    else
        tap fail "$cfg: no DMAR faults after migration; the guest's scenario passes" "$(grep -E 'dmar_faults|TEST: end' <<<"$after" | tr '\n' ' ')"
    fi
    kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null; srv_pid=
}

configs=${MIGRATE_CONFIGS:-legacy sm-ir vfio hotplug hotplug-sm}
for cfg in $configs; do
    case $cfg in legacy|sm-ir|vfio|hotplug|hotplug-sm) ;; *) echo "Bail out! MIGRATE_CONFIGS: unknown configuration '$cfg' (legacy, sm-ir, vfio, hotplug, hotplug-sm)"; rm -rf "$top_work"; exit 1 ;; esac
done
set -- $configs
echo "1..$((5 * $#))"
for cfg in $configs; do migrate_config "$cfg"; done
[ "$failed" = 0 ] && rm -rf "$top_work"
[ "$failed" = 0 ]
