#!/usr/bin/env bash
# One dma boot like tests/guest/run.sh's dma_boot, in its own directory.
#   dma-loop.sh OUTDIR IOMMU MODE [extra run.sh args...]
set -u
out=$1 iommu=$2 mode=$3; shift 3
top=$(cd "$(dirname "$0")/../.." && pwd)
MIB=4
mkdir -p "$out/srv"
head -c $((MIB << 20)) /dev/urandom > "$out/srv/payload.bin"
rm -f "$out/disk.img" "$out/port"
truncate -s $((4 * MIB))M "$out/disk.img"
head -c $((MIB << 20)) /dev/urandom | dd of="$out/disk.img" conv=notrunc status=none
python3 "$top/scripts/guest/hostserver.py" --dir "$out/srv" --port-file "$out/port" --timeout 700 &
srv=$!
for ((i = 0; i < 100; i++)); do [ -s "$out/port" ] && break; sleep 0.1; done
bash "$top/scripts/guest/run.sh" --quiet --iommu "$iommu" --mode "$mode" --test dma --timeout ${TMO:-600} \
    --disk "$out/disk.img" --net --port "$(cat "$out/port")" --mib $MIB --log "$out/console.log" "$@"
rc=$?
kill $srv 2>/dev/null; wait $srv 2>/dev/null
echo "RESULT rc=$rc $(grep -a -o 'eth0 rx_packets=[0-9]*' "$out/console.log") $(grep -a -m1 'VIOMMU-TEST: end' "$out/console.log")"
