# Like straddle.gdb, but kills a boot whose ring pages are contiguous (the
# bug cannot show there), to hunt for a layout that shows it.
# Catch the used-ring element writes that straddle an IOVA page boundary in a
# 1024-entry split ring whose used ring starts at page offset 0x840:
# element i is at used + 4 + 8*i; i=247 and i=759 straddle (cache offsets
# 1980 and 6076).  Show where each half should go and where it went.
set pagination off
set confirm off
set print thread-events off
set print inferior-events off
handle SIGUSR1 SIGUSR2 SIGPIPE SIG38 nostop noprint pass
set $wrong = 0
break address_space_write_cached_slow if (addr == 1980 || addr == 6076) && len == 8
commands
silent
if $wrong
printf "GDB:   after the previous straddling write: u32 at wrong gpa = %#x, at right gpa = %#x\n", *$wrong, *$right
end
set $iova = cache->xlat + addr
set $mr = (IOMMUMemoryRegion *) cache->mrs.mr
set $cls = (IOMMUMemoryRegionClass *) ((Object *) $mr)->class
set $t0 = $cls->translate($mr, $iova, 2, 0)
set $t1 = $cls->translate($mr, $iova + 4, 2, 0)
set $g0 = ($t0.translated_addr & ~$t0.addr_mask) | ($iova & $t0.addr_mask)
set $g1 = ($t1.translated_addr & ~$t1.addr_mask) | (($iova + 4) & $t1.addr_mask)
printf "GDB: used elem write at iova %#lx: id should go to gpa %#lx, len to gpa %#lx (next IOVA page); a linear continuation writes len to gpa %#lx\n", $iova, $g0, $g1, $g0 + 4
set $wrong = (unsigned int *) qemu_map_ram_ptr(0, $g0 + 4)
set $right = (unsigned int *) qemu_map_ram_ptr(0, $g1)
printf "GDB:   before: u32 at wrong gpa %#lx = %#x, at right gpa %#lx = %#x; elem = {id %u, len %u}\n", $g0 + 4, *$wrong, $g1, *$right, ((unsigned int *) buf)[0], ((unsigned int *) buf)[1]
if $g1 != $g0 + 4
printf "GDB:   DISCONTIGUOUS: this write splits across two unrelated guest pages\n"
end
if addr == 1980
set $t2 = $cls->translate($mr, $iova + 0x1000, 2, 0)
set $t3 = $cls->translate($mr, $iova + 0x1004, 2, 0)
if $g1 == $g0 + 4 && $t3.translated_addr == $t2.translated_addr + 0x1000
printf "GDB: ring pages contiguous in this boot, the bug cannot show: giving up on it\n"
kill
end
end
continue
end
break virtio_error
commands
printf "GDB: virtio_error\n"
if $wrong
printf "GDB:   after the last straddling write: u32 at wrong gpa = %#x, at right gpa = %#x\n", *$wrong, *$right
end
bt 6
source /work/main/tests/debug/dump-vq.gdb
end
run
