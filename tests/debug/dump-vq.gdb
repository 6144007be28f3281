frame function virtqueue_num_heads
p *vq
p vq->vring.caches->avail
p vq->vring.caches->avail.mrs.mr->name
p vq->vdev->dma_as->name
set $z = (MemTxAttrs *) calloc(1, 64)
set $res = (int *) calloc(1, 16)
printf "GDB: avail.idx via cache now = %u res=%d\n", address_space_lduw_le_cached_slow(&vq->vring.caches->avail, 2, *$z, $res), *$res
set $mr = (IOMMUMemoryRegion *) vq->vring.caches->avail.mrs.mr
set $cls = (IOMMUMemoryRegionClass *) ((Object *) $mr)->class
set $e = $cls->translate($mr, vq->vring.avail, 1, 0)
p/x $e
set $gpa = ($e.translated_addr & ~$e.addr_mask) | (vq->vring.avail & $e.addr_mask)
printf "GDB: avail iova=%#lx -> gpa=%#lx perm=%d\n", vq->vring.avail, $gpa, $e.perm
printf "GDB: guest RAM at gpa: flags=%u idx=%u\n", *(unsigned short *) qemu_map_ram_ptr(0, $gpa), *(unsigned short *) qemu_map_ram_ptr(0, $gpa + 2)
set $d = $cls->translate($mr, vq->vring.desc, 0, 0)
p/x $d
set $u = $cls->translate($mr, vq->vring.used, 1, 0)
p/x $u
set $ugpa = ($u.translated_addr & ~$u.addr_mask) | (vq->vring.used & $u.addr_mask)
printf "GDB: guest RAM used: flags=%u idx=%u\n", *(unsigned short *) qemu_map_ram_ptr(0, $ugpa), *(unsigned short *) qemu_map_ram_ptr(0, $ugpa + 2)
x/16hx qemu_map_ram_ptr(0, $gpa)
x/8hx qemu_map_ram_ptr(0, $gpa + 4 + 2 * 752)
info threads
thread apply all bt 6
