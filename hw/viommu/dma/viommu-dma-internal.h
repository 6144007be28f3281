/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-dma: declarations shared by the device's register interface
 * (viommu-dma.c) and its DMA engine (viommu-dma-engine.c).
 */
#ifndef HW_VIOMMU_DMA_VIOMMU_DMA_INTERNAL_H
#define HW_VIOMMU_DMA_VIOMMU_DMA_INTERNAL_H

#include "qemu/units.h"
#include "hw/pci/pci_device.h"
#include "viommu/viommu-dma.h"

#define TYPE_VIOMMU_DMA "viommu-dma"
OBJECT_DECLARE_SIMPLE_TYPE(ViommuDmaState, VIOMMU_DMA)

/* Bounds on the work done by one bottom-half run. */
#define VDMA_BUDGET_DESCS   256
#define VDMA_BUDGET_BYTES   (4 * MiB)
#define VDMA_CHUNK          4096
/* Descriptors fetched by one DMA read (never across a ring page). */
#define VDMA_PREFETCH       16

typedef struct VdmaIommuNotifier VdmaIommuNotifier;

typedef struct VDMAQueue {
    uint64_t ring;
    uint32_t size;
    uint32_t ctrl;
    uint32_t head;
    uint32_t tail;
    uint32_t status;
    uint32_t isr;
    uint32_t done;
    uint32_t errs;
} VDMAQueue;

struct ViommuDmaState {
    PCIDevice parent_obj;

    MemoryRegion mmio;
    QEMUBH *bh;
    VMChangeStateEntry *vmstate_change;
    uint32_t next_queue;        /* round-robin start for the next run */

    VDMAQueue q[VIOMMU_DMA_MAX_QUEUES];
    uint64_t descs;
    uint64_t errors;
    uint64_t bytes;
    uint64_t faults;
    uint64_t bh_ns;             /* CPU time in viommu_dma_bh; not migrated */

    uint8_t buf[2][VDMA_CHUNK];

    /*
     * Descriptors read ahead, per queue: pf[qi] holds ring entries from
     * index pf_base on; those in [pf_head, pf_end) are not consumed yet
     * (never wrapping).  Not migrated: anything that may change what a
     * queue's descriptors mean (ring registers, enable, reset, halt, load)
     * empties it, and an empty buffer is simply read again.
     */
    uint8_t pf[VIOMMU_DMA_MAX_QUEUES][VDMA_PREFETCH * VIOMMU_DMA_DESC_SIZE];
    uint32_t pf_base[VIOMMU_DMA_MAX_QUEUES];
    uint32_t pf_head[VIOMMU_DMA_MAX_QUEUES];
    uint32_t pf_end[VIOMMU_DMA_MAX_QUEUES];

    /* properties */
    uint32_t nqueues;
    uint32_t maxlen;
    bool cached_copy;           /* COPY through MemoryRegionCaches */
    bool pasid;                 /* descriptors may tag DMA with a PASID */
    bool map_notifier;          /* x-map-notifier: VFIO-style notifiers */

    /* x-map-notifier=on (viommu-dma-notifier.c); not migrated */
    MemoryListener map_listener;
    QLIST_HEAD(, VdmaIommuNotifier) map_notifiers;
    uint64_t map_events, unmap_events, map_refusals;
};

static inline bool vdma_queue_active(VDMAQueue *q)
{
    return (q->ctrl & VIOMMU_DMA_QCTRL_ENABLE) &&
           !(q->status & (VIOMMU_DMA_QSTS_HALTED | VIOMMU_DMA_QSTS_BADRING)) &&
           q->head != q->tail;
}

/* viommu-dma-notifier.c */
void viommu_dma_map_notifier_realize(ViommuDmaState *s);
void viommu_dma_map_notifier_exit(ViommuDmaState *s);

/* viommu-dma-engine.c */
void viommu_dma_update_intx(ViommuDmaState *s);
void viommu_dma_prefetch_drop(ViommuDmaState *s, uint32_t qi);
void viommu_dma_bh(void *opaque);
void viommu_dma_kick(ViommuDmaState *s);

#endif
