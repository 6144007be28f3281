/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Driver for the viommu-dma PCI DMA engine, for qtests.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "hw/pci/pci_regs.h"
#include "viommu-dma-driver.h"

#define VDMA_POLL_MAX   1000000

void vdma_init(VdmaDev *d, QPCIBus *bus, int devfn)
{
    memset(d, 0, sizeof(*d));
    d->pdev = qpci_device_find(bus, devfn);
    g_assert_nonnull(d->pdev);
    g_assert_cmphex(qpci_config_readw(d->pdev, PCI_VENDOR_ID), ==,
                    VIOMMU_DMA_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(d->pdev, PCI_DEVICE_ID), ==,
                    VIOMMU_DMA_DEVICE_ID);
    d->qts = bus->qts;
    d->sid = devfn;
    qpci_device_enable(d->pdev);
    d->bar = qpci_iomap(d->pdev, 0, NULL);
    g_assert_cmphex(vdma_reg_read(d, VIOMMU_DMA_REG_ID), ==,
                    VIOMMU_DMA_ID_MAGIC);
    d->nqueues = vdma_reg_read(d, VIOMMU_DMA_REG_NQUEUES);
}

void vdma_free(VdmaDev *d)
{
    if (d->pdev) {
        if (d->pdev->msix_enabled) {
            qpci_msix_disable(d->pdev);
        }
        qpci_iounmap(d->pdev, d->bar);
        g_free(d->pdev);
        d->pdev = NULL;
    }
}

uint32_t vdma_reg_read(VdmaDev *d, uint32_t off)
{
    return qpci_io_readl(d->pdev, d->bar, off);
}

void vdma_reg_write(VdmaDev *d, uint32_t off, uint32_t val)
{
    qpci_io_writel(d->pdev, d->bar, off, val);
}

uint64_t vdma_counter(VdmaDev *d, uint32_t off)
{
    return vdma_reg_read(d, off) | (uint64_t)vdma_reg_read(d, off + 4) << 32;
}

bool vdma_queue_setup(VdmaDev *d, unsigned qi, uint64_t ring_gpa,
                      uint64_t ring_iova, uint32_t size)
{
    uint32_t qb = VIOMMU_DMA_Q_BASE(qi);

    g_assert_cmpuint(qi, <, d->nqueues);
    vdma_reg_write(d, qb + VIOMMU_DMA_Q_CTRL, 0);
    vdma_reg_write(d, qb + VIOMMU_DMA_Q_RING_LO, ring_iova);
    vdma_reg_write(d, qb + VIOMMU_DMA_Q_RING_HI, ring_iova >> 32);
    vdma_reg_write(d, qb + VIOMMU_DMA_Q_RING_SIZE, size);
    vdma_reg_write(d, qb + VIOMMU_DMA_Q_CTRL, VIOMMU_DMA_QCTRL_ENABLE);
    d->q[qi].ring_gpa = ring_gpa;
    d->q[qi].ring_iova = ring_iova;
    d->q[qi].size = size;
    d->q[qi].tail = 0;
    return vdma_reg_read(d, qb + VIOMMU_DMA_Q_CTRL) & VIOMMU_DMA_QCTRL_ENABLE;
}

void vdma_queue_disable(VdmaDev *d, unsigned qi)
{
    vdma_reg_write(d, VIOMMU_DMA_Q_BASE(qi) + VIOMMU_DMA_Q_CTRL, 0);
}

void vdma_msix_set_message(VdmaDev *d, unsigned qi, uint64_t addr,
                           uint32_t data)
{
    uint64_t off;

    if (!d->pdev->msix_enabled) {
        qpci_msix_enable(d->pdev);
    }
    off = d->pdev->msix_table_off + qi * PCI_MSIX_ENTRY_SIZE;
    qpci_io_writel(d->pdev, d->pdev->msix_table_bar,
                   off + PCI_MSIX_ENTRY_LOWER_ADDR, (uint32_t)addr);
    qpci_io_writel(d->pdev, d->pdev->msix_table_bar,
                   off + PCI_MSIX_ENTRY_UPPER_ADDR, addr >> 32);
    qpci_io_writel(d->pdev, d->pdev->msix_table_bar,
                   off + PCI_MSIX_ENTRY_DATA, data);
    qpci_io_writel(d->pdev, d->pdev->msix_table_bar,
                   off + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
}

void vdma_msix_setup(VdmaDev *d, unsigned qi, uint8_t vector)
{
    vdma_msix_set_message(d, qi, 0xfee00000, vector);
}

uint32_t vdma_raise_irq(VdmaDev *d, unsigned qi)
{
    VdmaDesc nop = { .op = VIOMMU_DMA_OP_NOP, .flags = VIOMMU_DMA_FLAG_IRQ };

    return vdma_run(d, qi, &nop, NULL);
}

uint32_t vdma_push(VdmaDev *d, unsigned qi, const VdmaDesc *desc)
{
    VdmaQueue *q = &d->q[qi];
    uint32_t idx = q->tail;
    uint8_t buf[VIOMMU_DMA_DESC_SIZE] = { 0 };

    buf[VIOMMU_DMA_DESC_OP] = desc->op;
    buf[VIOMMU_DMA_DESC_FLAGS] = desc->flags;
    stl_le_p(buf + VIOMMU_DMA_DESC_LEN, desc->len);
    stq_le_p(buf + VIOMMU_DMA_DESC_SRC, desc->src);
    stq_le_p(buf + VIOMMU_DMA_DESC_DST, desc->dst);
    stq_le_p(buf + VIOMMU_DMA_DESC_PATTERN, desc->pattern);
    stl_le_p(buf + VIOMMU_DMA_DESC_PASID, desc->pasid);
    qtest_memwrite(d->qts, q->ring_gpa + (uint64_t)idx * VIOMMU_DMA_DESC_SIZE,
                   buf, sizeof(buf));
    q->tail = (q->tail + 1) % q->size;
    return idx;
}

void vdma_ring_doorbell(VdmaDev *d, unsigned qi)
{
    vdma_reg_write(d, VIOMMU_DMA_Q_BASE(qi) + VIOMMU_DMA_Q_TAIL, d->q[qi].tail);
}

uint32_t vdma_wait(VdmaDev *d, unsigned qi, uint32_t idx, uint32_t *result)
{
    uint64_t addr = d->q[qi].ring_gpa + (uint64_t)idx * VIOMMU_DMA_DESC_SIZE;

    for (int i = 0; i < VDMA_POLL_MAX; i++) {
        uint64_t v = qtest_readq(d->qts, addr + VIOMMU_DMA_DESC_STATUS);
        if ((uint32_t)v != VIOMMU_DMA_ST_PENDING) {
            if (result) {
                *result = v >> 32;
            }
            return v;
        }
        if (vdma_reg_read(d, VIOMMU_DMA_Q_BASE(qi) + VIOMMU_DMA_Q_STATUS) &
            (VIOMMU_DMA_QSTS_HALTED | VIOMMU_DMA_QSTS_BADRING)) {
            return VIOMMU_DMA_ST_PENDING;
        }
    }
    g_error("viommu-dma queue %u: descriptor %u neither completed nor "
            "halted the queue after %d polls", qi, idx, VDMA_POLL_MAX);
}

uint32_t vdma_run(VdmaDev *d, unsigned qi, const VdmaDesc *desc,
                  uint32_t *result)
{
    uint32_t idx = vdma_push(d, qi, desc);

    vdma_ring_doorbell(d, qi);
    return vdma_wait(d, qi, idx, result);
}

uint32_t vdma_copy(VdmaDev *d, uint64_t src, uint64_t dst, uint32_t len,
                   uint32_t *result)
{
    VdmaDesc desc = { .op = VIOMMU_DMA_OP_COPY, .len = len,
                      .src = src, .dst = dst };
    return vdma_run(d, 0, &desc, result);
}

uint32_t vdma_fill(VdmaDev *d, uint64_t dst, uint32_t len, uint64_t pattern,
                   uint32_t *result)
{
    VdmaDesc desc = { .op = VIOMMU_DMA_OP_FILL, .len = len,
                      .dst = dst, .pattern = pattern };
    return vdma_run(d, 0, &desc, result);
}

uint32_t vdma_compare(VdmaDev *d, uint64_t a, uint64_t b, uint32_t len,
                      uint32_t *result)
{
    VdmaDesc desc = { .op = VIOMMU_DMA_OP_COMPARE, .len = len,
                      .src = a, .dst = b };
    return vdma_run(d, 0, &desc, result);
}
