#!/usr/bin/env bash
# loop.sh TAG IOMMU MODE N [run.sh args]: up to N dma boots; stops at the first
# "Guest moved"/virtio_error.  Summary lines in /tmp/virtio-dbg/TAG.summary.
tag=$1 iommu=$2 mode=$3 n=$4; shift 4
d=/tmp/virtio-dbg
for ((i = 1; i <= n; i++)); do
    rm -rf $d/$tag-$i
    bash "$(dirname "$0")/dma-loop.sh" $d/$tag-$i $iommu $mode "$@" > $d/$tag-$i.out 2>&1
    r=$(grep -a RESULT $d/$tag-$i.out)
    e=$(grep -a -h -m1 "Guest moved\|not a head\|GDB: virtio_error" $d/$tag-$i.out $d/$tag-$i/console.log.stderr 2>/dev/null | head -1)
    echo "$tag-$i $r | $e" >> $d/$tag.summary
    [ "${STOP:-1}" = 1 ] && grep -q "GDB: virtio_error" $d/$tag-$i.out && break
done
