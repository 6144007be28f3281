/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-vtd: interrupt remapping (intremap=on).  The engine remaps; this
 * file brings it every interrupt request the machine makes and delivers
 * what it answers:
 *
 * - each device address space's interrupt window (0xFEE00000-0xFEEFFFFF)
 *   is an I/O region whose DWORD writes are interrupt requests: MSI/MSI-X
 *   messages (requester-id from the memory transaction), and the IOAPIC's
 *   messages, which QEMU writes into x86ms->ioapic_as, here an address
 *   space of its own with the IOAPIC's source-id from the DMAR table;
 * - X86IOMMUClass.int_remap, which KVM asks when it builds an MSI route
 *   (device MSIs with irqfd, the IOAPIC's pins under kernel-irqchip=split),
 *   without recording faults;
 * - the engine's interrupts_invalidated hook, which tells QEMU's IEC
 *   notifiers (KVM routes, the split IOAPIC) to rebuild those routes, once
 *   the register write that caused it returns.
 *
 * A remapped or passed-through interrupt goes to the APIC bus the way
 * QEMU's own vIOMMUs send it (APICCommonClass.send_msi: the TCG APIC or
 * KVM's); a blocked one is dropped, the engine having recorded its fault.
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "hw/i386/apic_internal.h"
#include "hw/i386/x86.h"
#include "viommu-vtd-internal.h"
#include "trace.h"

static void viommu_vtd_apic_send_bh(void *opaque)
{
    MSIMessage *msg = opaque;

    apic_get_class(NULL)->send_msi(msg);
    g_free(msg);
}

/*
 * To the APIC bus, not through the memory API, so that an x2APIC
 * destination's bits 31:8 in the upper address reach the APIC
 * (apic_send_msi() and KVM read them there).  The TCG APIC needs the BQL
 * (cpu_interrupt()); a fault raised by a translation on an I/O thread,
 * which holds none and must not wait for the main loop, is sent from
 * there instead.
 */
void viommu_vtd_apic_send(uint64_t addr, uint32_t data)
{
    MSIMessage msg = { .address = addr, .data = data };

    if (!bql_locked()) {
        trace_viommu_vtd_msi_deferred(addr, data);
        aio_bh_schedule_oneshot(qemu_get_aio_context(),
                                viommu_vtd_apic_send_bh,
                                g_memdup2(&msg, sizeof(msg)));
        return;
    }
    apic_get_class(NULL)->send_msi(&msg);
}

/*
 * Ask the engine about one request; true when it is to be delivered, as
 * *msg.  Traced here, where both the request and the answer are known.
 */
static bool viommu_vtd_ir_remap(ViommuVtdState *s, uint16_t sid,
                                MSIMessage *msg, bool record)
{
    VtdInterrupt out;
    VtdIrResult r = vtd_engine_remap_interrupt(s->engine, sid, msg->address,
                                               msg->data, record, &out);

    switch (r) {
    case VTD_IR_REMAPPED:
        trace_viommu_vtd_ir_remapped(sid, msg->address, msg->data, out.index,
                                     out.vector, out.dest, out.delivery_mode,
                                     out.level, out.dest_logical);
        msg->address = out.addr;
        msg->data = out.data;
        return true;
    case VTD_IR_PASS_THROUGH:
        trace_viommu_vtd_ir_passed(sid, msg->address, msg->data);
        return true;
    case VTD_IR_BLOCKED:
        trace_viommu_vtd_ir_blocked(sid, msg->address, msg->data, out.index,
                                    out.fault, record);
        return false;
    case VTD_IR_NOT_INTERRUPT:
        break;
    }
    trace_viommu_vtd_ir_not_interrupt(sid, msg->address, msg->data);
    return false;
}

/* The interrupt window */

/* Only DWORD writes are interrupt requests (VT-d 3.14); reads fail. */
static MemTxResult viommu_vtd_ir_read(void *opaque, hwaddr addr,
                                      uint64_t *data, unsigned size,
                                      MemTxAttrs attrs)
{
    ViommuVtdAS *vas = opaque;

    trace_viommu_vtd_ir_bad_access(attrs.unspecified ? viommu_vtd_sid(vas) :
                                   attrs.requester_id,
                                   VIOMMU_VTD_MSI_BASE + addr, size, false);
    *data = 0;
    return MEMTX_ERROR;
}

/*
 * A write into the window is an interrupt request.  A PCI device's MSI
 * carries its requester-id; a write without one (the IOAPIC's, a device's
 * plain DMA) comes from the owner of the address space.
 */
static MemTxResult viommu_vtd_ir_write(void *opaque, hwaddr addr,
                                       uint64_t value, unsigned size,
                                       MemTxAttrs attrs)
{
    ViommuVtdAS *vas = opaque;
    uint16_t sid = attrs.unspecified ? viommu_vtd_sid(vas) :
                   attrs.requester_id;
    MSIMessage msg = {
        .address = VIOMMU_VTD_MSI_BASE + addr,
        .data = value,
    };

    if (size != 4) {
        trace_viommu_vtd_ir_bad_access(sid, msg.address, size, true);
        return MEMTX_ERROR;
    }
    if (!viommu_vtd_ir_remap(vas->s, sid, &msg, true)) {
        return MEMTX_ERROR;
    }
    viommu_vtd_apic_send(msg.address, msg.data);
    return MEMTX_OK;
}

/*
 * Interrupt requests are DWORD writes (VT-d 5.1.1); other sizes fail.
 * Accesses up to 8 bytes come in whole, so that the memory core does not
 * split a wider write (a DMA of a buffer) into DWORD interrupt requests;
 * it still hands over a longer write in aligned pieces without its
 * length, so a 4-byte head (at 4 mod 8) or tail (a length of 4 mod 8)
 * of one is taken as an interrupt request.
 */
static const MemoryRegionOps viommu_vtd_ir_ops = {
    .read_with_attrs = viommu_vtd_ir_read,
    .write_with_attrs = viommu_vtd_ir_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .impl = {
        .min_access_size = 4,
        .max_access_size = 8,
    },
    .valid = {
        .min_access_size = 4,
        .max_access_size = 8,
    },
};

void viommu_vtd_ir_window_init(ViommuVtdAS *vas)
{
    memory_region_init_io(&vas->msi, OBJECT(vas->s), &viommu_vtd_ir_ops, vas,
                          "viommu-vtd-ir", VIOMMU_VTD_MSI_SIZE);
}

/*
 * The IOAPIC sends its messages through x86ms->ioapic_as.  Its address
 * space is not a PCI device's (devfn 0 of the root bus is the host
 * bridge): it has the source-id the DMAR table's IOAPIC scope names, which
 * a guest puts in the IOAPIC's IRTEs for source validation.
 */
void viommu_vtd_ir_realize(ViommuVtdState *s, PCIBus *bus)
{
    X86MachineState *x86ms = X86_MACHINE(qdev_get_machine());

    s->ioapic = viommu_vtd_as_new(s, bus, Q35_PSEUDO_DEVFN_IOAPIC,
                                  VIOMMU_VTD_IOAPIC_SID, "viommu-vtd-ioapic");
    x86ms->ioapic_as = &s->ioapic->as;
}

/*
 * KVM's MSI routes (target/i386/kvm: kvm_arch_fixup_msi_route).  A route
 * without a PCI device is the IOAPIC's on q35.  Only asking: no fault is
 * recorded.  An interrupt KVM delivers through a route (irqfd, the split
 * IOAPIC's pins) never reaches the window, so a blocked one records no
 * fault either; and for a blocked answer QEMU keeps the route it had
 * (kvm_irqchip_update_msi_route() fails before replacing it).  A route is
 * always an interrupt to KVM, which would deliver a message outside the
 * window (upper address bits set included) as it stands: refused too.
 */
int viommu_vtd_int_remap(X86IOMMUState *iommu, MSIMessage *src,
                         MSIMessage *dst, uint16_t sid)
{
    ViommuVtdState *s = VIOMMU_VTD(iommu);

    if (sid == X86_IOMMU_SID_INVALID) {
        sid = VIOMMU_VTD_IOAPIC_SID;
    }
    *dst = *src;
    trace_viommu_vtd_ir_route(sid, src->address, src->data);
    return viommu_vtd_ir_remap(s, sid, dst, false) ? 0 : -EINVAL;
}

/* IEC notifiers */

/*
 * The engine's hook: runs inside a register write or a queue slice, so
 * only note it (merging into a global one when a second index range
 * comes) for viommu_vtd_ir_process_pending().
 */
void viommu_vtd_interrupts_invalidated(void *opaque, bool global,
                                       uint16_t index, uint8_t index_mask)
{
    ViommuVtdState *s = opaque;

    if (s->iec_pending && (s->iec_global || s->iec_index != index ||
                           s->iec_mask != index_mask)) {
        global = true;
    }
    s->iec_pending = true;
    s->iec_global = global;
    s->iec_index = global ? 0 : index;
    s->iec_mask = global ? 0 : index_mask;
}

void viommu_vtd_ir_process_pending(ViommuVtdState *s)
{
    if (!s->iec_pending) {
        return;
    }
    s->iec_pending = false;
    trace_viommu_vtd_iec_notify(s->iec_global, s->iec_index, s->iec_mask);
    x86_iommu_iec_notify_all(X86_IOMMU_DEVICE(s), s->iec_global, s->iec_index,
                             s->iec_mask);
}
