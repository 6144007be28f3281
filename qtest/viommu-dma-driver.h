/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Driver for the viommu-dma PCI DMA engine, for qtests.  The device's
 * layout is in include/viommu/viommu-dma.h; see docs/qtest.rst.
 */
#ifndef VIOMMU_DMA_DRIVER_H
#define VIOMMU_DMA_DRIVER_H

#include "libqtest.h"
#include "libqos/pci.h"
#include "viommu/viommu-dma.h"

typedef struct VdmaQueue {
    uint64_t ring_gpa;          /* where the driver writes descriptors */
    uint64_t ring_iova;         /* what the device is told */
    uint32_t size;
    uint32_t tail;
} VdmaQueue;

typedef struct VdmaDev {
    QTestState *qts;
    QPCIDevice *pdev;
    QPCIBar bar;
    uint16_t sid;               /* requester id: bus << 8 | devfn */
    uint32_t nqueues;
    VdmaQueue q[VIOMMU_DMA_MAX_QUEUES];
} VdmaDev;

typedef struct VdmaDesc {
    uint8_t op;
    uint8_t flags;
    uint32_t len;
    uint64_t src, dst, pattern;
    uint32_t pasid;             /* with VIOMMU_DMA_FLAG_PASID */
} VdmaDesc;

/* find the device at devfn on bus 0, enable memory and bus mastering */
void vdma_init(VdmaDev *d, QPCIBus *bus, int devfn);
void vdma_free(VdmaDev *d);
uint32_t vdma_reg_read(VdmaDev *d, uint32_t off);
void vdma_reg_write(VdmaDev *d, uint32_t off, uint32_t val);
uint64_t vdma_counter(VdmaDev *d, uint32_t off);

/*
 * Set up queue qi with a ring of size descriptors.  The ring lives at
 * ring_gpa; the device reaches it at ring_iova (map it first when the
 * IOMMU translates).  Returns false if the device refused the ring.
 */
bool vdma_queue_setup(VdmaDev *d, unsigned qi, uint64_t ring_gpa,
                      uint64_t ring_iova, uint32_t size);
void vdma_queue_disable(VdmaDev *d, unsigned qi);
/* MSI-X: route vector qi to LAPIC vector `vector` on CPU 0 */
void vdma_msix_setup(VdmaDev *d, unsigned qi, uint8_t vector);
/* MSI-X: vector qi sends the message {addr, data} (any format) */
void vdma_msix_set_message(VdmaDev *d, unsigned qi, uint64_t addr,
                           uint32_t data);
/* run a NOP with the IRQ flag on queue qi: the device sends vector qi */
uint32_t vdma_raise_irq(VdmaDev *d, unsigned qi);

/* write a descriptor at the tail with status PENDING; returns its index */
uint32_t vdma_push(VdmaDev *d, unsigned qi, const VdmaDesc *desc);
/* write queue qi's TAIL doorbell: the device runs what was pushed */
void vdma_ring_doorbell(VdmaDev *d, unsigned qi);
/*
 * Poll a descriptor's status until the device completes it; PENDING if the
 * queue halted first (the ring or the completion unreachable).  Neither
 * within VDMA_POLL_MAX polls fails the test.
 */
uint32_t vdma_wait(VdmaDev *d, unsigned qi, uint32_t idx, uint32_t *result);
/* push + kick + wait */
uint32_t vdma_run(VdmaDev *d, unsigned qi, const VdmaDesc *desc,
                  uint32_t *result);

uint32_t vdma_copy(VdmaDev *d, uint64_t src, uint64_t dst, uint32_t len,
                   uint32_t *result);
uint32_t vdma_fill(VdmaDev *d, uint64_t dst, uint32_t len, uint64_t pattern,
                   uint32_t *result);
uint32_t vdma_compare(VdmaDev *d, uint64_t a, uint64_t b, uint32_t len,
                      uint32_t *result);

#endif
