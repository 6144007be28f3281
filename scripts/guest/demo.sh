#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The first `make run` main job: boot the Debian guest behind an IOMMU
# (viommu-vtd by default), move data through IOMMU-translated virtio-blk and
# virtio-net devices, show what moved with checksums from both sides, then
# the vIOMMU's statistics read over QMP.
#
#   demo.sh [--iommu viommu-vtd|intel-iommu|none] [--mode lazy|strict]
#           [--mib N] [--smp N] [-- extra QEMU arguments]
# Work files and the console log are kept in build/demo/.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

iommu=viommu-vtd mode=lazy mib=4 smp=2
while [ $# -gt 0 ]; do
    case $1 in
        --iommu) [ $# -ge 2 ] || die "--iommu needs a value."; iommu=$2; shift 2 ;;
        --mode) [ $# -ge 2 ] || die "--mode needs a value."; mode=$2; shift 2 ;;
        --mib) [ $# -ge 2 ] || die "--mib needs a value."; mib=$2; shift 2 ;;
        --smp) [ $# -ge 2 ] || die "--smp needs a value."; smp=$2; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        *) die "demo.sh: unknown option '$1' (see --help)." ;;
    esac
done
case $iommu in viommu-vtd|intel-iommu|none) ;; *) die "demo.sh: --iommu must be viommu-vtd, intel-iommu or none." ;; esac
[[ $mib =~ ^[1-9][0-9]*$ ]] && [ "$mib" -le 64 ] || die "demo.sh: --mib must be 1..64."

BOOT_TIMEOUT=300
say "demo: one guest boot under TCG behind $iommu ($mode mode), moving ${mib} MiB each way over virtio-blk and virtio-net; about 1 minute (plus about 20 s to build the guest image the first time)"

work=$BUILD/demo
rm -rf "$work"; mkdir -p "$work/srv"
log=$work/console.log qmp=$work/qmp.sock
head -c $((mib << 20)) /dev/urandom > "$work/srv/payload.bin"
truncate -s $((4 * mib))M "$work/disk.img"
head -c $((mib << 20)) /dev/urandom | dd of="$work/disk.img" conv=notrunc status=none
disk_sha=$(head -c $((mib << 20)) "$work/disk.img" | sha256sum | cut -d' ' -f1)
payload_sha=$(sha256sum "$work/srv/payload.bin" | cut -d' ' -f1)

server_pid= boot_pid=
cleanup() {
    [ -z "$boot_pid" ] || { kill "$boot_pid" 2>/dev/null || true; wait "$boot_pid" 2>/dev/null || true; }
    [ -z "$server_pid" ] || { kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; }
}
trap cleanup EXIT
python3 "$TOP/scripts/guest/hostserver.py" --dir "$work/srv" --port-file "$work/port" --timeout $((BOOT_TIMEOUT + 60)) &
server_pid=$!
for ((i = 0; i < 100; i++)); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || die "the host HTTP server (scripts/guest/hostserver.py) did not start."
port=$(cat "$work/port")

bash "$TOP/scripts/guest/run.sh" --iommu "$iommu" --mode "$mode" --smp "$smp" --test dma \
    --disk "$work/disk.img" --net --port "$port" --mib "$mib" \
    --qmp "$qmp" --hold --log "$log" --timeout "$BOOT_TIMEOUT" -- "$@" &
boot_pid=$!
for ((i = 0; i < BOOT_TIMEOUT + 30; i++)); do
    grep -q '^VIOMMU-TEST: end' "$log" 2>/dev/null && break
    kill -0 "$boot_pid" 2>/dev/null || break
    sleep 1
done
stats_rc=0
if grep -q '^VIOMMU-TEST: end' "$log" 2>/dev/null; then
    sleep 1
    if [ "$iommu" = viommu-vtd ]; then
        timeout 30 python3 "$TOP/scripts/viommu-stats" --qmp "$qmp" > "$work/stats.txt" 2>&1 || stats_rc=$?
        timeout 30 python3 "$TOP/scripts/viommu-stats" --qmp "$qmp" --json > "$work/stats.json" 2>/dev/null || true
    fi
    python3 "$TOP/scripts/qmp.py" --wait 5 "$qmp" quit >/dev/null 2>&1 || true
fi
boot_rc=0
wait "$boot_pid" || boot_rc=$?
boot_pid=
kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; server_pid=
tr -d '\r' < "$log" > "$work/console.txt"
grep -q '^VIOMMU-TEST: end' "$work/console.txt" \
    || die "the guest did not finish its scenario; console log kept in $log."

datum() { sed -n "s/^VIOMMU-DATA: $1=//p" "$work/console.txt" | tail -1; }
bad=0
row() {  # row DEVICE WHAT GUEST-SHA HOST-SHA
    local verdict=match
    if [ -z "$3" ] || [ "$3" != "$4" ]; then verdict="MISMATCH (host ${4:-none})"; bad=$((bad + 1)); fi
    printf '  %-10s %-34s %s  %s\n' "$1" "$2" "${3:-(none)}" "$verdict"
}
blk_write_host=$(dd if="$work/disk.img" bs=1M skip=$((2 * mib)) count="$mib" status=none | sha256sum | cut -d' ' -f1)
upload_host=$(cut -d' ' -f1 "$work/srv"/upload-*.sha256 2>/dev/null | tail -1 || true)

echo
echo "What moved (sha256 seen by the guest; compared with the host's copy):"
row virtio-blk "read  ${mib} MiB  disk -> guest" "$(datum blk_read_sha256)" "$disk_sha"
row virtio-blk "write ${mib} MiB  guest -> disk" "$(datum blk_write_sha256)" "$blk_write_host"
row virtio-net "GET   ${mib} MiB  host -> guest" "$(datum net_fetch_sha256)" "$payload_sha"
row virtio-net "POST  ${mib} MiB  guest -> host" "$(datum net_upload_sha256)" "$upload_host"
echo
echo "Guest view:"
echo "  devices:  virtio-blk $(datum blk_bdf) (iommu group $(datum blk_iommu_group), $(datum blk_domain_type)), virtio-net $(datum net_bdf) (iommu group $(datum net_iommu_group), $(datum net_domain_type))"
sed -n 's/^VIOMMU-CHECK: ok queued_invalidation - \[[ 0-9.]*\] /  QI:       /p; s/^VIOMMU-CHECK: ok tlb_policy - \[[ 0-9.]*\] /  policy:   /p' "$work/console.txt"
echo "  faults:   $(datum dmar_faults) DMAR fault lines in the guest's dmesg"
fails=$(grep -c '^VIOMMU-CHECK: fail' "$work/console.txt" || true)
if [ "$fails" != 0 ]; then
    echo "  failed guest checks:"
    grep '^VIOMMU-CHECK: fail' "$work/console.txt" | sed 's/^VIOMMU-CHECK: fail /    /'
fi
if [ "$iommu" = viommu-vtd ]; then
    echo
    echo "viommu-vtd statistics (scripts/viommu-stats --qmp):"
    sed 's/^/  /' "$work/stats.txt"
    [ "$stats_rc" = 0 ] || { bad=$((bad + 1)); say "scripts/viommu-stats failed (status $stats_rc)."; }
fi
echo
if [ "$bad" != 0 ] || [ "$fails" != 0 ] || [ "$boot_rc" != 0 ]; then
    die "demo: $bad transfer(s) or statistics read failed and $fails guest check(s) failed behind $iommu; console log kept in $log."
fi
say "demo complete: all four transfers matched behind $iommu; console log in $log, statistics in $work/stats.json"
