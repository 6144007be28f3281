/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-dma: a PCI DMA engine for IOMMU tests and benchmarks
 *
 * The device has several queues; each is a ring of descriptors in guest
 * memory (addressed by IOVA) with a doorbell register.  Descriptors copy,
 * fill or compare guest memory between IOVAs of any length and alignment.
 * All DMA goes through the PCI DMA API, so an IOMMU in front of the device
 * translates it, and a failed translation becomes a per-descriptor error
 * status.  The register and descriptor layout is in
 * include/viommu/viommu-dma.h.
 *
 * Work is done in a bottom half with a bounded budget per run, so a hostile
 * ring (huge, looping, unmapped) can never stall the main loop.
 *
 * This file is the register interface and the QOM device; the engine that
 * processes the rings is in viommu-dma-engine.c.
 */

#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qapi/error.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "system/runstate.h"
#include "viommu-dma-internal.h"
#include "trace.h"

static void vdma_queue_reset(VDMAQueue *q)
{
    memset(q, 0, sizeof(*q));
}

static void vdma_reset_all(ViommuDmaState *s)
{
    trace_viommu_dma_reset();
    for (uint32_t i = 0; i < VIOMMU_DMA_MAX_QUEUES; i++) {
        vdma_queue_reset(&s->q[i]);
    }
    s->descs = s->errors = s->bytes = s->faults = s->bh_ns = 0;
    s->next_queue = 0;
    memset(s->pf_head, 0, sizeof(s->pf_head));
    memset(s->pf_end, 0, sizeof(s->pf_end));
    qemu_bh_cancel(s->bh);
    viommu_dma_update_intx(s);
}

static uint32_t vdma_queue_read(VDMAQueue *q, hwaddr off)
{
    switch (off) {
    case VIOMMU_DMA_Q_RING_LO:
        return q->ring;
    case VIOMMU_DMA_Q_RING_HI:
        return q->ring >> 32;
    case VIOMMU_DMA_Q_RING_SIZE:
        return q->size;
    case VIOMMU_DMA_Q_CTRL:
        return q->ctrl;
    case VIOMMU_DMA_Q_HEAD:
        return q->head;
    case VIOMMU_DMA_Q_TAIL:
        return q->tail;
    case VIOMMU_DMA_Q_STATUS:
        return q->status | (vdma_queue_active(q) ? VIOMMU_DMA_QSTS_BUSY : 0);
    case VIOMMU_DMA_Q_ISR:
        return q->isr;
    case VIOMMU_DMA_Q_DONE:
        return q->done;
    case VIOMMU_DMA_Q_ERRS:
        return q->errs;
    default:
        return 0;
    }
}

static uint64_t vdma_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    ViommuDmaState *s = opaque;
    uint64_t val = 0;

    switch (addr) {
    case VIOMMU_DMA_REG_ID:
        val = VIOMMU_DMA_ID_MAGIC;
        break;
    case VIOMMU_DMA_REG_VERSION:
        val = VIOMMU_DMA_VERSION;
        break;
    case VIOMMU_DMA_REG_NQUEUES:
        val = s->nqueues;
        break;
    case VIOMMU_DMA_REG_MAXLEN:
        val = s->maxlen;
        break;
    case VIOMMU_DMA_REG_DESCS ... VIOMMU_DMA_REG_BH_NS + 7: {
        uint64_t c[] = { s->descs, s->errors, s->bytes, s->faults, s->bh_ns };
        hwaddr i = addr - VIOMMU_DMA_REG_DESCS;
        val = c[i / 8] >> ((i & 4) * 8);
        val &= 0xffffffff;
        break;
    }
    default:
        if (addr >= VIOMMU_DMA_Q_BASE(0) &&
            addr < VIOMMU_DMA_Q_BASE(s->nqueues)) {
            hwaddr qi = (addr - VIOMMU_DMA_Q_BASE(0)) / VIOMMU_DMA_Q_SIZE;
            val = vdma_queue_read(&s->q[qi], addr % VIOMMU_DMA_Q_SIZE);
        }
        break;
    }
    trace_viommu_dma_mmio_read(addr, val);
    return val;
}

/* A ring the device takes: a power-of-2 size it supports, aligned base. */
static bool vdma_ring_ok(const VDMAQueue *q)
{
    return q->size && q->size <= VIOMMU_DMA_MAX_RING_SIZE &&
           is_power_of_2(q->size) && !(q->ring & (VIOMMU_DMA_DESC_SIZE - 1));
}

static void vdma_queue_write(ViommuDmaState *s, uint32_t qi, hwaddr off,
                             uint32_t val)
{
    VDMAQueue *q = &s->q[qi];
    bool enabled = q->ctrl & VIOMMU_DMA_QCTRL_ENABLE;

    if (off != VIOMMU_DMA_Q_TAIL && off != VIOMMU_DMA_Q_ISR) {
        viommu_dma_prefetch_drop(s, qi);
    }

    switch (off) {
    case VIOMMU_DMA_Q_RING_LO:
    case VIOMMU_DMA_Q_RING_HI:
    case VIOMMU_DMA_Q_RING_SIZE:
        if (enabled) {
            qemu_log_mask(LOG_GUEST_ERROR, "viommu-dma: queue %u: ring "
                          "register written while enabled\n", qi);
            return;
        }
        if (off == VIOMMU_DMA_Q_RING_LO) {
            q->ring = deposit64(q->ring, 0, 32, val);
        } else if (off == VIOMMU_DMA_Q_RING_HI) {
            q->ring = deposit64(q->ring, 32, 32, val);
        } else {
            q->size = val;
        }
        break;
    case VIOMMU_DMA_Q_CTRL:
        val &= VIOMMU_DMA_QCTRL_ENABLE;
        if ((val & VIOMMU_DMA_QCTRL_ENABLE) && !enabled) {
            q->head = q->tail = 0;
            q->status = 0;
            if (!vdma_ring_ok(q)) {
                qemu_log_mask(LOG_GUEST_ERROR, "viommu-dma: queue %u: bad "
                              "ring 0x%" PRIx64 " size %u\n", qi, q->ring,
                              q->size);
                q->status = VIOMMU_DMA_QSTS_BADRING;
                val = 0;
            }
        }
        q->ctrl = val;
        trace_viommu_dma_queue_ctrl(qi, val, q->ring, q->size);
        break;
    case VIOMMU_DMA_Q_TAIL:
        if (!enabled) {
            qemu_log_mask(LOG_GUEST_ERROR, "viommu-dma: queue %u: doorbell "
                          "while disabled\n", qi);
            return;
        }
        q->tail = val & (q->size - 1);
        trace_viommu_dma_doorbell(qi, q->head, q->tail);
        viommu_dma_kick(s);
        break;
    case VIOMMU_DMA_Q_STATUS:
        q->status &= ~(val & VIOMMU_DMA_QSTS_HALTED);
        viommu_dma_kick(s);
        break;
    case VIOMMU_DMA_Q_ISR:
        q->isr &= ~val;
        viommu_dma_update_intx(s);
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "viommu-dma: write to read-only "
                      "queue register 0x%" HWADDR_PRIx "\n", off);
        break;
    }
}

static void vdma_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    ViommuDmaState *s = opaque;

    trace_viommu_dma_mmio_write(addr, val);
    if (addr == VIOMMU_DMA_REG_CTRL) {
        if (val & VIOMMU_DMA_CTRL_RESET) {
            vdma_reset_all(s);
        }
    } else if (addr >= VIOMMU_DMA_Q_BASE(0) &&
               addr < VIOMMU_DMA_Q_BASE(s->nqueues)) {
        uint32_t qi = (addr - VIOMMU_DMA_Q_BASE(0)) / VIOMMU_DMA_Q_SIZE;
        vdma_queue_write(s, qi, addr % VIOMMU_DMA_Q_SIZE, val);
    } else {
        qemu_log_mask(LOG_GUEST_ERROR, "viommu-dma: write to read-only or "
                      "unknown register 0x%" HWADDR_PRIx "\n", addr);
    }
}

static const MemoryRegionOps vdma_mmio_ops = {
    .read = vdma_mmio_read,
    .write = vdma_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 8,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

/* INTx is the queues' ISRs again once MSI-X is off (it is silent while on). */
static void vdma_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                              int len)
{
    pci_default_write_config(pdev, addr, val, len);
    viommu_dma_update_intx(VIOMMU_DMA(pdev));
}

static void vdma_vm_state_change(void *opaque, bool running, RunState state)
{
    if (running) {
        viommu_dma_kick(opaque);
    }
}

static void vdma_realize(PCIDevice *pdev, Error **errp)
{
    ViommuDmaState *s = VIOMMU_DMA(pdev);

    if (s->nqueues < 1 || s->nqueues > VIOMMU_DMA_MAX_QUEUES) {
        error_setg(errp, "queues must be between 1 and %d",
                   VIOMMU_DMA_MAX_QUEUES);
        return;
    }
    if (s->maxlen < 1 || s->maxlen > 64 * MiB) {
        error_setg(errp, "max-len must be between 1 and %u", (unsigned)(64 * MiB));
        return;
    }

    pci_config_set_interrupt_pin(pdev->config, 1);
    memory_region_init_io(&s->mmio, OBJECT(s), &vdma_mmio_ops, s,
                          "viommu-dma-mmio", VIOMMU_DMA_BAR_SIZE);
    pci_register_bar(pdev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->mmio);

    if (msix_init_exclusive_bar(pdev, s->nqueues, 1, errp)) {
        return;
    }
    for (uint32_t i = 0; i < s->nqueues; i++) {
        msix_vector_use(pdev, i);
    }
    s->bh = qemu_bh_new_guarded(viommu_dma_bh, s,
                                &DEVICE(pdev)->mem_reentrancy_guard);
    s->vmstate_change = qdev_add_vm_change_state_handler(DEVICE(pdev),
                                                         vdma_vm_state_change,
                                                         s);
    viommu_dma_map_notifier_realize(s);
}

static void vdma_exit(PCIDevice *pdev)
{
    ViommuDmaState *s = VIOMMU_DMA(pdev);

    viommu_dma_map_notifier_exit(s);
    qemu_del_vm_change_state_handler(s->vmstate_change);
    qemu_bh_delete(s->bh);
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
}

static void vdma_reset(DeviceState *dev)
{
    ViommuDmaState *s = VIOMMU_DMA(dev);

    vdma_reset_all(s);
}

/*
 * What the registers cannot hold is refused: the bottom half starts at
 * next_queue and an enabled queue's ring registers bound its DMA.
 */
static const char *vdma_queue_invalid(const VDMAQueue *q)
{
    const uint32_t status = VIOMMU_DMA_QSTS_HALTED | VIOMMU_DMA_QSTS_BADRING;

    if (q->ctrl & ~VIOMMU_DMA_QCTRL_ENABLE || q->isr & ~1u ||
        q->status & ~status) {
        return "undefined bits set";
    }
    if (!(q->ctrl & VIOMMU_DMA_QCTRL_ENABLE)) {
        return NULL;
    }
    if (!vdma_ring_ok(q) || q->status & VIOMMU_DMA_QSTS_BADRING) {
        return "enabled with a ring it refuses";
    }
    if (q->head >= q->size || q->tail >= q->size) {
        return "head or tail beyond its ring";
    }
    return NULL;
}

static int vdma_post_load(void *opaque, int version_id)
{
    ViommuDmaState *s = opaque;

    memset(s->pf_head, 0, sizeof(s->pf_head));
    memset(s->pf_end, 0, sizeof(s->pf_end));

    if (s->next_queue >= s->nqueues) {
        error_report("viommu-dma: migrated state refused: next queue %u of %u",
                     s->next_queue, s->nqueues);
        return -EINVAL;
    }
    for (uint32_t i = 0; i < VIOMMU_DMA_MAX_QUEUES; i++) {
        VDMAQueue *q = &s->q[i];
        const char *why;

        if (i >= s->nqueues) {
            vdma_queue_reset(q);
            continue;
        }
        why = vdma_queue_invalid(q);
        if (why) {
            error_report("viommu-dma: migrated state refused: queue %u: %s",
                         i, why);
            return -EINVAL;
        }
    }
    viommu_dma_kick(s);
    return 0;
}

static const VMStateDescription vmstate_vdma_queue = {
    .name = "viommu-dma-queue",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(ring, VDMAQueue),
        VMSTATE_UINT32(size, VDMAQueue),
        VMSTATE_UINT32(ctrl, VDMAQueue),
        VMSTATE_UINT32(head, VDMAQueue),
        VMSTATE_UINT32(tail, VDMAQueue),
        VMSTATE_UINT32(status, VDMAQueue),
        VMSTATE_UINT32(isr, VDMAQueue),
        VMSTATE_UINT32(done, VDMAQueue),
        VMSTATE_UINT32(errs, VDMAQueue),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_vdma = {
    .name = TYPE_VIOMMU_DMA,
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = vdma_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, ViommuDmaState),
        VMSTATE_MSIX(parent_obj, ViommuDmaState),
        VMSTATE_UINT32_EQUAL(nqueues, ViommuDmaState, NULL),
        VMSTATE_UINT32(next_queue, ViommuDmaState),
        VMSTATE_STRUCT_ARRAY(q, ViommuDmaState, VIOMMU_DMA_MAX_QUEUES, 1,
                             vmstate_vdma_queue, VDMAQueue),
        VMSTATE_UINT64(descs, ViommuDmaState),
        VMSTATE_UINT64(errors, ViommuDmaState),
        VMSTATE_UINT64(bytes, ViommuDmaState),
        VMSTATE_UINT64(faults, ViommuDmaState),
        VMSTATE_END_OF_LIST()
    },
};

static const Property vdma_properties[] = {
    DEFINE_PROP_UINT32("queues", ViommuDmaState, nqueues, 4),
    DEFINE_PROP_UINT32("max-len", ViommuDmaState, maxlen, 1 * MiB),
    /*
     * COPY reads and writes 4 KiB chunks through MemoryRegionCaches, as
     * virtio reaches its rings: a test of the memory core's cached slow
     * path behind an IOMMU (patches/qemu/0002).
     */
    DEFINE_PROP_BOOL("x-cached-copy", ViommuDmaState, cached_copy, false),
    /* descriptors may tag their DMA with a PASID (VIOMMU_DMA_FLAG_PASID) */
    DEFINE_PROP_BOOL("pasid", ViommuDmaState, pasid, false),
    /*
     * Register MAP and UNMAP notifiers on the IOMMU regions of its address
     * space, as VFIO does (viommu-dma-notifier.c): tests of an IOMMU's
     * notifier support without a host device.
     */
    DEFINE_PROP_BOOL("x-map-notifier", ViommuDmaState, map_notifier, false),
};

static void vdma_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = vdma_realize;
    k->config_write = vdma_write_config;
    k->exit = vdma_exit;
    k->vendor_id = VIOMMU_DMA_VENDOR_ID;
    k->device_id = VIOMMU_DMA_DEVICE_ID;
    k->revision = VIOMMU_DMA_VERSION;
    k->class_id = PCI_CLASS_SYSTEM_DMA;
    dc->desc = "viommu-lab DMA engine for IOMMU tests";
    dc->vmsd = &vmstate_vdma;
    device_class_set_legacy_reset(dc, vdma_reset);
    device_class_set_props(dc, vdma_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo vdma_info = {
    .name          = TYPE_VIOMMU_DMA,
    .parent        = TYPE_PCI_DEVICE,
    .instance_size = sizeof(ViommuDmaState),
    .class_init    = vdma_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void vdma_register_types(void)
{
    type_register_static(&vdma_info);
}

type_init(vdma_register_types)
