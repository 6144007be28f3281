#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Migration of a live guest behind viommu-vtd, as TAP: boot the viommu-lab
# guest (scripts/guest/run.sh, test "dma", virtio-blk and virtio-net behind the
# unit), migrate it to a file as soon as its scenario starts, restore it in a
# new QEMU and check that the DMA the guest does afterwards still translates:
# block reads and writes with read-back, network transfers, no DMAR faults.
# Two configurations, five cases each: legacy mode as the unit defaults to;
# scalable mode (first-stage tables, both stages offered) with interrupt
# remapping (xAPIC), so that the PASID-table and interrupt-remapping state
# cross too.  About 20 s each under TCG.  QEMU=path overrides the binary;
# MIGRATE_CONFIGS="legacy sm-ir" picks configurations.
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

migrate_config() {  # migrate_config legacy|sm-ir: five cases
    local cfg=$1 work=$top_work/$1 i port st ok src dst rc after before missing post c
    local -a common opts=()
    case $cfg in
        legacy) ;;
        sm-ir) opts=(--intremap on --iommu-opts "x-scalable-mode=on,x-flts=on,second-stage=on"
                     --append "viommu.ir=xapic viommu.sm=first viommu.sm_offer=both iomem=relaxed") ;;
    esac
    mkdir -p "$work/srv"
    truncate -s 64M "$work/disk.img"
    head -c 4M /dev/urandom > "$work/srv/payload.bin"
    python3 "$TOP/scripts/guest/hostserver.py" --dir "$work/srv" --port-file "$work/port" --timeout 900 &
    srv_pid=$!
    for ((i = 0; i < 100; i++)); do [ -s "$work/port" ] && break; sleep 0.1; done
    port=$(cat "$work/port" 2>/dev/null || echo 0)
    common=(--iommu "${IOMMU:-viommu-vtd}" --test dma --disk "$work/disk.img" --net --port "$port" --quiet "${opts[@]}")

    # Source: runs until the guest starts its scenario, then migrates while running
    # (a source stopped first would leave the destination paused).
    bash "$TOP/scripts/guest/run.sh" "${common[@]}" --timeout 400 --qmp "$work/src.qmp" --hold \
        --log "$work/src.log" >"$work/src.out" 2>&1 &
    src=$!
    for ((i = 0; i < 3600; i++)); do
        grep -q '^VIOMMU-TEST: begin' "$work/src.log" 2>/dev/null && break
        kill -0 "$src" 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -q '^VIOMMU-TEST: begin' "$work/src.log" 2>/dev/null; then
        tap fail "$cfg: source guest boots behind ${IOMMU:-viommu-vtd}" "no scenario start; log $work/src.log"
        echo "# remaining cases not run"; for c in 2 3 4 5; do tap fail "$cfg: case $c (source did not boot)"; done
        kill "$srv_pid" 2>/dev/null; srv_pid=
        return
    fi
    tap ok "$cfg: source guest boots behind ${IOMMU:-viommu-vtd}"

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
    if [ "$ok" = 1 ] && [ -s "$work/state" ]; then
        tap ok "$cfg: migration of the running guest to a file completes"
    else
        tap fail "$cfg: migration of the running guest to a file completes" "status ${st:-none}; $(tail -3 "$work/src.out" | tr '\n' ' ')"
    fi

    # Destination: restores the state and lets the guest finish its DMA.
    bash "$TOP/scripts/guest/run.sh" "${common[@]}" --timeout 400 --log "$work/dst.log" \
        --qmp "$work/dst.qmp" -- -incoming "exec:cat $work/state" >"$work/dst.out" 2>&1 &
    dst=$!
    # For diagnosis: the unit's statistics, refreshed while the guest runs.
    while kill -0 "$dst" 2>/dev/null; do
        python3 "$TOP/scripts/viommu-stats" --qmp "$work/dst.qmp" --timeout 10 \
            >"$work/dst-stats.tmp" 2>/dev/null && mv "$work/dst-stats.tmp" "$work/dst-stats.txt"
        sleep 10
    done
    wait "$dst"
    rc=$?
    after=$(grep -aE '^VIOMMU-(CHECK|DATA|TEST)' "$work/dst.log" 2>/dev/null | tr -d '\r')
    if grep -q '^VIOMMU-TEST: end' <<<"$after"; then
        tap ok "$cfg: restored guest resumes and finishes its scenario"
    else
        tap fail "$cfg: restored guest resumes and finishes its scenario" "exit $rc; log $work/dst.log"
    fi
    # Which DMA checks fall after the switch-over depends on timing: all must pass
    # across both halves, and the restored guest must have done some of them.
    before=$(grep -aE '^VIOMMU-CHECK' "$work/src.log" 2>/dev/null | tr -d '\r')
    missing= post=
    for c in blk_read blk_write blk_readback net_fetch net_upload; do
        if grep -q "^VIOMMU-CHECK: ok $c " <<<"$after"; then post+=" $c"
        elif ! grep -q "^VIOMMU-CHECK: ok $c " <<<"$before"; then missing+=" $c"; fi
    done
    if [ -z "$missing" ] && [ -n "$post" ] && ! grep -q '^VIOMMU-CHECK: fail' <<<"$after"; then
        tap ok "$cfg: DMA after migration translates (block and network I/O; after switch-over:$post)"
    else
        tap fail "$cfg: DMA after migration translates (block and network I/O)" \
            "not ok:${missing:- none}; after switch-over:${post:- none}; failed: $(grep '^VIOMMU-CHECK: fail' <<<"$after" | tr '\n' ' ')"
    fi
    if grep -q '^VIOMMU-DATA: dmar_faults=0$' <<<"$after" && grep -q '^VIOMMU-TEST: end dma pass' <<<"$after"; then
        tap ok "$cfg: no DMAR faults after migration; the guest's scenario passes"
    else
        tap fail "$cfg: no DMAR faults after migration; the guest's scenario passes" "$(grep -E 'dmar_faults|TEST: end' <<<"$after" | tr '\n' ' ')"
    fi
    kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null; srv_pid=
}

configs=${MIGRATE_CONFIGS:-legacy sm-ir}
for cfg in $configs; do
    case $cfg in legacy|sm-ir) ;; *) echo "Bail out! MIGRATE_CONFIGS: unknown configuration '$cfg' (legacy, sm-ir)"; rm -rf "$top_work"; exit 1 ;; esac
done
set -- $configs
echo "1..$((5 * $#))"
for cfg in $configs; do migrate_config "$cfg"; done
[ "$failed" = 0 ] && rm -rf "$top_work"
[ "$failed" = 0 ]
