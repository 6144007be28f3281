#!/usr/bin/env bash
# loop2.sh TAG QEMU-BINARY "IOMMU MODE" ["IOMMU MODE"...]: one dma boot per
# pair, in order, with QEMU-BINARY (no gdb); summary in /tmp/virtio-dbg/TAG.summary.
tag=$1 bin=$2; shift 2
d=/tmp/virtio-dbg i=0
for pair in "$@"; do
    set -- $pair; i=$((i + 1))
    rm -rf $d/$tag-$i
    QEMU=$bin TMO=${TMO:-420} bash "$(dirname "$0")/dma-loop.sh" $d/$tag-$i $1 $2 > $d/$tag-$i.out 2>&1
    r=$(grep -a RESULT $d/$tag-$i.out)
    e=$(grep -a -h -m1 "Guest moved\|not a head\|translation failure" $d/$tag-$i/console.log.stderr 2>/dev/null | head -1)
    f=$(grep -a -h "VIOMMU-CHECK: fail" $d/$tag-$i/console.log | cut -c1-90 | tr '\n' ';')
    echo "$tag-$i $1 $2 $r | $e | $f" >> $d/$tag.summary
done
