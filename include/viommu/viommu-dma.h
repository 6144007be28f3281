/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-dma: a PCI DMA engine for IOMMU tests and benchmarks.
 *
 * Register and descriptor layout, shared by the device model
 * (hw/viommu/dma/viommu-dma.c) and the qtest driver library
 * (qtest/viommu-dma-driver.c).  Everything is little-endian.
 *
 * BAR0 (4 KiB MMIO, 32-bit accesses; 64-bit counters read as two halves):
 *   0x000 ID          RO  VIOMMU_DMA_ID_MAGIC
 *   0x004 VERSION     RO
 *   0x008 NQUEUES     RO  number of queues
 *   0x00c MAXLEN      RO  largest descriptor length accepted (bytes)
 *   0x010 CTRL        WO  bit 0: reset all queues and counters
 *   0x020 DESCS       RO  64-bit: descriptors completed (any status)
 *   0x028 ERRORS      RO  64-bit: descriptors completed with an error status
 *   0x030 BYTES       RO  64-bit: bytes moved successfully
 *   0x038 FAULTS      RO  64-bit: DMA accesses that failed (MEMTX error)
 *   0x040 BH_NS       RO  64-bit: host CPU time (ns, the thread's CPU clock)
 *                         spent processing descriptors; a host-side
 *                         measure for benchmarks, not migrated
 *   0x100 + q * 0x40  per-queue block, see VIOMMU_DMA_Q_*
 * BAR1: MSI-X table and PBA, one vector per queue (vector q for queue q).
 *
 * A queue is a ring of RING_SIZE 64-byte descriptors at RING_BASE (an IOVA,
 * 64-byte aligned).  Writing TAIL (the doorbell) hands descriptors
 * [HEAD, TAIL) to the device; it processes them in a bottom half, a bounded
 * number per run and only while the VM runs, writes each one's completion
 * (status, result) back into the descriptor, advances HEAD, and, if the
 * descriptor asked for it, sets the queue's ISR bit and raises its MSI-X
 * vector.  Without MSI-X, INTx is asserted while any queue's ISR bit is
 * set (also when MSI-X is turned off with ISR bits set).  A descriptor that
 * cannot be read or whose completion cannot be written stops the queue with
 * Q_STATUS.HALTED set; anything wrong inside a descriptor is reported in its
 * status and the queue goes on.
 */
#ifndef VIOMMU_DMA_H
#define VIOMMU_DMA_H

#define VIOMMU_DMA_VENDOR_ID        0x1234
#define VIOMMU_DMA_DEVICE_ID        0x11e9
#define VIOMMU_DMA_ID_MAGIC         0x414d4456u /* "VDMA" */
#define VIOMMU_DMA_VERSION          1

#define VIOMMU_DMA_BAR_SIZE         0x1000
#define VIOMMU_DMA_MAX_QUEUES       32
#define VIOMMU_DMA_MAX_RING_SIZE    4096

/* Global registers */
#define VIOMMU_DMA_REG_ID           0x000
#define VIOMMU_DMA_REG_VERSION      0x004
#define VIOMMU_DMA_REG_NQUEUES      0x008
#define VIOMMU_DMA_REG_MAXLEN       0x00c
#define VIOMMU_DMA_REG_CTRL         0x010
#define   VIOMMU_DMA_CTRL_RESET     (1u << 0)
#define VIOMMU_DMA_REG_DESCS        0x020
#define VIOMMU_DMA_REG_ERRORS       0x028
#define VIOMMU_DMA_REG_BYTES        0x030
#define VIOMMU_DMA_REG_FAULTS       0x038
#define VIOMMU_DMA_REG_BH_NS        0x040

/* Per-queue registers: VIOMMU_DMA_Q_BASE(q) + offset */
#define VIOMMU_DMA_Q_BASE(q)        (0x100 + (q) * 0x40)
#define VIOMMU_DMA_Q_RING_LO        0x00    /* RW, only while disabled */
#define VIOMMU_DMA_Q_RING_HI        0x04    /* RW, only while disabled */
#define VIOMMU_DMA_Q_RING_SIZE      0x08    /* RW, power of 2, 1..4096 */
#define VIOMMU_DMA_Q_CTRL           0x0c    /* RW */
#define   VIOMMU_DMA_QCTRL_ENABLE   (1u << 0)
#define VIOMMU_DMA_Q_HEAD           0x10    /* RO, next descriptor */
#define VIOMMU_DMA_Q_TAIL           0x14    /* RW, doorbell */
#define VIOMMU_DMA_Q_STATUS         0x18
#define   VIOMMU_DMA_QSTS_HALTED    (1u << 0)   /* RW1C, ring DMA failed */
#define   VIOMMU_DMA_QSTS_BADRING   (1u << 1)   /* RO, bad base/size */
#define   VIOMMU_DMA_QSTS_BUSY      (1u << 2)   /* RO, work pending */
#define VIOMMU_DMA_Q_ISR            0x1c    /* RW1C, bit 0: completion irq */
#define VIOMMU_DMA_Q_DONE           0x20    /* RO, descriptors completed */
#define VIOMMU_DMA_Q_ERRS           0x24    /* RO, ... with error status */
#define VIOMMU_DMA_Q_SIZE           0x40

/* Descriptor, 64 bytes */
#define VIOMMU_DMA_DESC_SIZE        64
#define VIOMMU_DMA_DESC_OP          0x00    /* u8 */
#define VIOMMU_DMA_DESC_FLAGS       0x01    /* u8 */
#define VIOMMU_DMA_DESC_LEN         0x04    /* u32, bytes */
#define VIOMMU_DMA_DESC_SRC         0x08    /* u64 IOVA */
#define VIOMMU_DMA_DESC_DST         0x10    /* u64 IOVA */
#define VIOMMU_DMA_DESC_PATTERN     0x18    /* u64, FILL pattern */
#define VIOMMU_DMA_DESC_STATUS      0x20    /* u32, written by the device */
#define VIOMMU_DMA_DESC_RESULT      0x24    /* u32, written by the device */
#define VIOMMU_DMA_DESC_PASID       0x28    /* u32, with FLAG_PASID */

#define VIOMMU_DMA_OP_NOP           0
#define VIOMMU_DMA_OP_COPY          1   /* dst[0..len) = src[0..len) */
#define VIOMMU_DMA_OP_FILL          2   /* dst[i] = pattern byte (i % 8) */
#define VIOMMU_DMA_OP_COMPARE       3   /* src vs dst, result = mismatch */
#define VIOMMU_DMA_OP_MAX           3

#define VIOMMU_DMA_FLAG_IRQ         (1u << 0)   /* interrupt on completion */
/*
 * With the device's pasid=on only (reserved otherwise): the descriptor's
 * src and dst accesses are requests with PASID (a PASID TLP prefix), the
 * PASID in DESC_PASID (1..VIOMMU_DMA_PASID_MAX); FLAG_PRIV (only with
 * FLAG_PASID) sets the prefix's privileged-mode-requested bit.  The ring
 * and the completion are requests without PASID.
 */
#define VIOMMU_DMA_FLAG_PASID       (1u << 1)
#define VIOMMU_DMA_FLAG_PRIV        (1u << 2)
#define VIOMMU_DMA_PASID_MAX        255     /* MemTxAttrs.pid is 8 bits */

/*
 * Completion status.  The driver writes 0 (PENDING) before submitting;
 * RESULT is the byte offset at which the operation stopped (COMPARE: first
 * mismatching byte; faults: start of the chunk whose access failed).
 */
#define VIOMMU_DMA_ST_PENDING       0x00
#define VIOMMU_DMA_ST_OK            0x01
#define VIOMMU_DMA_ST_MISMATCH      0x02
#define VIOMMU_DMA_ST_READ_FAULT    0x10    /* reading src (or dst for CMP) */
#define VIOMMU_DMA_ST_WRITE_FAULT   0x11    /* writing dst */
#define VIOMMU_DMA_ST_BAD_OP        0x20
#define VIOMMU_DMA_ST_BAD_LEN       0x21    /* len == 0 or len > MAXLEN */
#define VIOMMU_DMA_ST_BAD_ADDR      0x22    /* src/dst + len wraps */
#define VIOMMU_DMA_ST_BAD_FLAGS     0x23    /* reserved bits set */
#define VIOMMU_DMA_ST_BAD_PASID     0x24    /* FLAG_PASID, PASID 0 or above MAX */

#endif
