#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Guest tests: boot the Debian guest behind an IOMMU under TCG and check, from
# inside and from the host, that DMA really goes through it.  TAP on stdout.
#
#   tests/guest/run.sh [--iommu viommu-vtd|intel-iommu] [--only dma-lazy,dma-strict,fault]
#
# Three boots (about 40-60 s each under TCG):
#   dma-lazy    virtio-blk + virtio-net (iommu_platform=on) move random payloads
#               both ways, checksums compared host <-> guest; DMAR with queued
#               invalidation, lazy TLB policy, devices in DMA-FQ domains, no
#               DMAR fault; for viommu-vtd, its statistics over QMP.
#   dma-strict  the same with iommu.strict=1 (DMA domains).
#   fault       QEMU's edu device DMAs from an unmapped IOVA: the guest's DMAR
#               fault handler reports it, edu and QEMU keep working.
# Console logs and artefacts are kept in build/guest-tests/<iommu>/.
# Exit status non-zero when any check failed.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

iommu=viommu-vtd only="dma-lazy,dma-strict,fault"
while [ $# -gt 0 ]; do
    case $1 in
        --iommu) [ $# -ge 2 ] || die "--iommu needs a value."; iommu=$2; shift 2 ;;
        --only) [ $# -ge 2 ] || die "--only needs a value."; only=$2; shift 2 ;;
        -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "tests/guest/run.sh: unknown option '$1' (use --iommu DEV, --only LIST)." ;;
    esac
done
case $iommu in viommu-vtd|intel-iommu) ;; *) die "--iommu must be viommu-vtd or intel-iommu, not '$iommu'." ;; esac
for b in ${only//,/ }; do
    case $b in dma-lazy|dma-strict|fault) ;; *) die "--only: unknown boot '$b' (dma-lazy, dma-strict, fault)." ;; esac
done
wants() { case ",$only," in *",$1,"*) return 0 ;; esac; return 1; }

runsh=$TOP/scripts/guest/run.sh
qmppy=$TOP/scripts/guest/qmp.py
qemu=${QEMU:-$BUILD/qemu-system-x86_64}
work=$BUILD/guest-tests/$iommu
MIB=4
BOOT_TIMEOUT=300

# Everything a boot reports; "not reported" cases count as failures.
DMA_GUEST_CHECKS="dmar_enabled queued_invalidation tlb_policy blk_present iommu_group_blk blk_read blk_write blk_readback net_present iommu_group_net net_fetch net_upload no_dmar_faults"
DMA_HOST_CHECKS="scenario_completed blk_read_matches_host blk_write_matches_host net_fetch_matches_host net_upload_matches_host qemu_exit_clean"
FAULT_GUEST_CHECKS="dmar_enabled queued_invalidation tlb_policy edu_present iommu_group_edu edu_ident fault_reported fault_details edu_dma_done edu_alive_after_fault"
FAULT_HOST_CHECKS="scenario_completed qemu_alive_after_fault qemu_exit_clean"
DMA_STATS_CHECKS="stats_schema stats_translations stats_invalidations stats_no_faults"
FAULT_STATS_CHECKS="stats_schema stats_fault_recorded"

plan=0
count_words() { set -- $1; echo $#; }
for b in dma-lazy dma-strict; do
    wants "$b" || continue
    plan=$((plan + $(count_words "$DMA_GUEST_CHECKS $DMA_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "$DMA_STATS_CHECKS")))
done
if wants fault; then
    plan=$((plan + $(count_words "$FAULT_GUEST_CHECKS $FAULT_HOST_CHECKS")))
    [ "$iommu" = viommu-vtd ] && plan=$((plan + $(count_words "$FAULT_STATS_CHECKS")))
fi

bail() { echo "Bail out! $*"; exit 1; }
[ -x "$qemu" ] || bail "no QEMU at $qemu (run scripts/fetch-qemu.sh and scripts/build-qemu.sh)."
devices=$("$qemu" -device help 2>/dev/null || true)
grep -q "name \"$iommu\"" <<< "$devices" || bail "$qemu has no -device $iommu."
wants fault && { grep -q 'name "edu"' <<< "$devices" || bail "$qemu has no -device edu (CONFIG_EDU)."; }
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

server_pid=
stop_server() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    server_pid=
}
boot_pid=
cleanup() {
    stop_server
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
    tr -d '\r' < "$log" > "$work/$name.log"
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
    python3 "$TOP/tests/guest/stats_check.py" "$kind" "$work/$name.stats.json" > "$work/$name.stats.checks" 2>&1 || true
    for c in "$@"; do
        line=$(grep -m1 "^[a-z]* $c - " "$work/$name.stats.checks" || true)
        case $line in
            "ok $c - "*) tap ok "$name: $c" "${line#ok $c - }" ;;
            "fail $c - "*) tap fail "$name: $c" "${line#fail $c - }" ;;
            *) tap fail "$name: $c" "no statistics ($(head -c 200 "$work/$name.stats.err" 2>/dev/null; head -1 "$work/$name.stats.checks"))" ;;
        esac
    done
}

dma_boot() {  # dma_boot NAME MODE
    local name=$1 mode=$2 d=$work/$1 port i want got
    mkdir -p "$d/srv"
    head -c $((MIB << 20)) /dev/urandom > "$d/srv/payload.bin"
    truncate -s $((4 * MIB))M "$d/disk.img"
    head -c $((MIB << 20)) /dev/urandom | dd of="$d/disk.img" conv=notrunc status=none
    local disk_sha; disk_sha=$(head -c $((MIB << 20)) "$d/disk.img" | sha256sum | cut -d' ' -f1 || true)
    python3 "$TOP/scripts/guest/hostserver.py" --dir "$d/srv" --port-file "$d/port" --timeout $((BOOT_TIMEOUT + 60)) &
    server_pid=$!
    for ((i = 0; i < 100; i++)); do [ -s "$d/port" ] && break; sleep 0.1; done
    port=$(cat "$d/port" 2>/dev/null || true); [ -n "$port" ] || port=0

    boot "$name" "$([ "$iommu" = viommu-vtd ] && echo dma || echo none)" \
        --mode "$mode" --test dma --disk "$d/disk.img" --net --port "$port"
    stop_server
    local log=$work/$name.log
    guest_checks "$name" $DMA_GUEST_CHECKS
    completed_check "$name"
    got=$(datum "$log" blk_read_sha256)
    [ -n "$got" ] && [ "$got" = "$disk_sha" ] && tap ok "$name: blk_read_matches_host" "guest read the host's $MIB MiB: $got" \
        || tap fail "$name: blk_read_matches_host" "guest sha256 '${got:-none}', host wrote $disk_sha"
    got=$(datum "$log" blk_write_sha256)
    want=$(dd if="$d/disk.img" bs=1M skip=$((2 * MIB)) count="$MIB" status=none | sha256sum | cut -d' ' -f1)
    [ -n "$got" ] && [ "$got" = "$want" ] && tap ok "$name: blk_write_matches_host" "disk holds what the guest wrote: $want" \
        || tap fail "$name: blk_write_matches_host" "guest wrote sha256 '${got:-none}', the disk holds $want"
    got=$(datum "$log" net_fetch_sha256); want=$(sha_of "$d/srv/payload.bin")
    [ -n "$got" ] && [ "$got" = "$want" ] && tap ok "$name: net_fetch_matches_host" "guest fetched the host's $MIB MiB: $want" \
        || tap fail "$name: net_fetch_matches_host" "guest sha256 '${got:-none}', host served $want"
    got=$(datum "$log" net_upload_sha256)
    want=$(cat "$d/srv"/upload-*.sha256 2>/dev/null | tail -1 | cut -d' ' -f1 || true)
    [ -n "$got" ] && [ "$got" = "$want" ] && tap ok "$name: net_upload_matches_host" "host received what the guest sent: $want" \
        || tap fail "$name: net_upload_matches_host" "guest sent sha256 '${got:-none}', host received '${want:-nothing}'"
    exit_check "$name"
    [ "$iommu" = viommu-vtd ] && stats_checks "$name" dma $DMA_STATS_CHECKS
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

wants dma-lazy && dma_boot dma-lazy lazy
wants dma-strict && dma_boot dma-strict strict
wants fault && fault_boot

[ "$n" = "$plan" ] || { echo "# internal error: planned $plan checks, ran $n"; failures=$((failures + 1)); }
echo "# $((n - failures)) of $n checks passed on $iommu; logs in ${work#$TOP/}/"
[ "$failures" = 0 ]
