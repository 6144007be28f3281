/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the viommu-dma device on its own (no IOMMU): operations,
 * completion status, counters, interrupts and hostile descriptors/rings.
 */
#include "qemu/osdep.h"
#include "viommu-test-env.h"
#include "hw/pci/pci_regs.h"

static void start(VtEnv *e)
{
    vt_start(e, NULL, NULL, 1, 256, NULL);
}

static void test_ops(void)
{
    VtEnv e;
    VdmaDev *d;
    uint64_t src, dst;
    uint8_t in[12000], out[12000];
    uint32_t res;

    start(&e);
    d = &e.dma[0];
    g_assert_cmpuint(vdma_reg_read(d, VIOMMU_DMA_REG_NQUEUES), ==, 4);
    g_assert_cmpuint(vdma_reg_read(d, VIOMMU_DMA_REG_VERSION), ==,
                     VIOMMU_DMA_VERSION);
    src = vtd_alloc(&e.g, 16384, 4096);
    dst = vtd_alloc(&e.g, 16384, 4096);
    for (int i = 0; i < sizeof(in); i++) {
        in[i] = i * 7 + 3;
    }
    qtest_memwrite(e.qts, src, in, sizeof(in));

    /* odd length, odd alignments, crossing several pages */
    g_assert_cmphex(vdma_copy(d, src + 3, dst + 4091, 9001, &res), ==,
                    VIOMMU_DMA_ST_OK);
    g_assert_cmpuint(res, ==, 9001);
    qtest_memread(e.qts, dst + 4091, out, 9001);
    g_assert_cmpmem(out, 9001, in + 3, 9001);
    /* bytes around the copy untouched */
    g_assert_cmphex(qtest_readb(e.qts, dst + 4090), ==, 0);
    g_assert_cmphex(qtest_readb(e.qts, dst + 4091 + 9001), ==, 0);

    /* compare: equal, then one byte different */
    g_assert_cmphex(vdma_compare(d, src + 3, dst + 4091, 9001, &res), ==,
                    VIOMMU_DMA_ST_OK);
    qtest_writeb(e.qts, dst + 4091 + 5000, in[3 + 5000] ^ 0xff);
    g_assert_cmphex(vdma_compare(d, src + 3, dst + 4091, 9001, &res), ==,
                    VIOMMU_DMA_ST_MISMATCH);
    g_assert_cmpuint(res, ==, 5000);

    /* fill with an 8-byte pattern, phase relative to dst */
    g_assert_cmphex(vdma_fill(d, dst + 1, 4099, 0x0807060504030201ULL, &res),
                    ==, VIOMMU_DMA_ST_OK);
    qtest_memread(e.qts, dst + 1, out, 4099);
    for (int i = 0; i < 4099; i++) {
        g_assert_cmphex(out[i], ==, (i % 8) + 1);
    }

    g_assert_cmpuint(vdma_counter(d, VIOMMU_DMA_REG_DESCS), ==, 4);
    g_assert_cmpuint(vdma_counter(d, VIOMMU_DMA_REG_ERRORS), ==, 1);
    g_assert_cmpuint(vdma_counter(d, VIOMMU_DMA_REG_BYTES), ==,
                     9001 * 2 + 4099);
    /* moving 22 KB took some CPU time, and less than a minute of it */
    g_assert_cmpuint(vdma_counter(d, VIOMMU_DMA_REG_BH_NS), >, 0);
    g_assert_cmpuint(vdma_counter(d, VIOMMU_DMA_REG_BH_NS), <,
                     60000000000ULL);
    vt_stop(&e);
}

static void test_bad_descriptors(void)
{
    VtEnv e;
    VdmaDev *d;
    VdmaDesc desc = { 0 };
    uint64_t buf;
    uint32_t res;

    start(&e);
    d = &e.dma[0];
    buf = vtd_alloc(&e.g, 8192, 4096);

    desc.op = 9; desc.len = 8; desc.dst = buf;
    g_assert_cmphex(vdma_run(d, 0, &desc, &res), ==, VIOMMU_DMA_ST_BAD_OP);
    desc.op = VIOMMU_DMA_OP_FILL; desc.len = 0;
    g_assert_cmphex(vdma_run(d, 0, &desc, &res), ==, VIOMMU_DMA_ST_BAD_LEN);
    desc.len = vdma_reg_read(d, VIOMMU_DMA_REG_MAXLEN) + 1;
    g_assert_cmphex(vdma_run(d, 0, &desc, &res), ==, VIOMMU_DMA_ST_BAD_LEN);
    desc.len = 16; desc.dst = ~0ULL - 7;
    g_assert_cmphex(vdma_run(d, 0, &desc, &res), ==, VIOMMU_DMA_ST_BAD_ADDR);
    desc.op = VIOMMU_DMA_OP_COPY; desc.src = ~0ULL - 7; desc.dst = buf;
    g_assert_cmphex(vdma_run(d, 0, &desc, &res), ==, VIOMMU_DMA_ST_BAD_ADDR);
    desc.op = VIOMMU_DMA_OP_FILL; desc.src = 0;
    desc.dst = buf; desc.flags = 0x80;
    g_assert_cmphex(vdma_run(d, 0, &desc, &res), ==, VIOMMU_DMA_ST_BAD_FLAGS);
    /* beyond RAM: the access fails, reported with the failing offset */
    desc.flags = 0; desc.op = VIOMMU_DMA_OP_COPY; desc.len = 8192;
    desc.src = buf; desc.dst = 0x7ffff000ULL - 4096;    /* hole after RAM */
    desc.dst = (256ULL << 20) - 4096;
    g_assert_cmphex(vdma_run(d, 0, &desc, &res), ==,
                    VIOMMU_DMA_ST_WRITE_FAULT);
    g_assert_cmpuint(res, ==, 4096);
    desc.src = (256ULL << 20) - 100; desc.dst = buf; desc.len = 200;
    g_assert_cmphex(vdma_run(d, 0, &desc, &res), ==,
                    VIOMMU_DMA_ST_READ_FAULT);
    g_assert_cmpuint(res, ==, 100);
    /* the queue keeps going */
    g_assert_cmphex(vdma_fill(d, buf, 64, 1, &res), ==, VIOMMU_DMA_ST_OK);
    g_assert_cmpuint(vdma_reg_read(d, VIOMMU_DMA_Q_BASE(0) + VIOMMU_DMA_Q_ERRS),
                     ==, 8);
    g_assert_cmpuint(vdma_counter(d, VIOMMU_DMA_REG_FAULTS), ==, 2);
    vt_stop(&e);
}

/*
 * DMA aimed at the device's own registers fails (QEMU's re-entrancy
 * guard): a write of CTRL.RESET resets nothing, a read of ID reads nothing.
 */
static void test_dma_to_own_registers(void)
{
    VtEnv e;
    VdmaDev *d;
    uint64_t buf, regs;
    uint32_t res;

    start(&e);
    d = &e.dma[0];
    buf = vtd_alloc(&e.g, 4096, 4096);
    regs = d->bar.addr;
    qtest_writel(e.qts, buf, VIOMMU_DMA_CTRL_RESET);
    g_assert_cmphex(vdma_copy(d, buf, regs + VIOMMU_DMA_REG_CTRL, 4, &res), ==,
                    VIOMMU_DMA_ST_WRITE_FAULT);
    g_assert_cmpuint(res, ==, 0);
    g_assert_cmphex(vdma_reg_read(d, VIOMMU_DMA_Q_BASE(0) + VIOMMU_DMA_Q_CTRL),
                    ==, VIOMMU_DMA_QCTRL_ENABLE);
    g_assert_cmpuint(vdma_counter(d, VIOMMU_DMA_REG_DESCS), ==, 1);
    g_assert_cmphex(vdma_copy(d, regs + VIOMMU_DMA_REG_ID, buf + 8, 4, &res),
                    ==, VIOMMU_DMA_ST_READ_FAULT);
    g_assert_cmphex(qtest_readl(e.qts, buf + 8), ==, 0);
    g_assert_cmpuint(vdma_counter(d, VIOMMU_DMA_REG_DESCS), ==, 2);
    vt_stop(&e);
}

/*
 * A masked MSI-X vector (its own mask bit, or the function's) holds the
 * message as pending in the PBA and sends it when unmasked.
 */
static void test_msix_masking(void)
{
    VtEnv e;
    VdmaDev *d;
    QPCIDevice *pdev;
    uint64_t ctrl;
    uint16_t flags;
    uint8_t cap;

    start(&e);
    d = &e.dma[0];
    pdev = d->pdev;
    vdma_msix_setup(d, 0, 0x52);
    ctrl = pdev->msix_table_off + PCI_MSIX_ENTRY_VECTOR_CTRL;
    qpci_io_writel(pdev, pdev->msix_table_bar, ctrl, PCI_MSIX_ENTRY_CTRL_MASKBIT);
    g_assert_true(qpci_msix_masked(pdev, 0));
    g_assert_cmphex(vdma_raise_irq(d, 0), ==, VIOMMU_DMA_ST_OK);
    g_assert_false(vtd_lapic_irr(e.qts, 0x52));
    g_assert_true(qpci_msix_pending(pdev, 0));
    qpci_io_writel(pdev, pdev->msix_table_bar, ctrl, 0);
    g_assert_true(vtd_lapic_irr(e.qts, 0x52));
    g_assert_false(qpci_msix_pending(pdev, 0));

    /* the function mask, on another vector */
    vdma_msix_setup(d, 0, 0x54);
    cap = qpci_find_capability(pdev, PCI_CAP_ID_MSIX, 0);
    flags = qpci_config_readw(pdev, cap + PCI_MSIX_FLAGS);
    qpci_config_writew(pdev, cap + PCI_MSIX_FLAGS, flags | PCI_MSIX_FLAGS_MASKALL);
    g_assert_cmphex(vdma_raise_irq(d, 0), ==, VIOMMU_DMA_ST_OK);
    g_assert_false(vtd_lapic_irr(e.qts, 0x54));
    g_assert_true(qpci_msix_pending(pdev, 0));
    qpci_config_writew(pdev, cap + PCI_MSIX_FLAGS, flags);
    g_assert_true(vtd_lapic_irr(e.qts, 0x54));
    vt_stop(&e);
}

/* The INTx line (GSI 16-23) that is high, or -1 with none. */
static int intx_high(QTestState *qts)
{
    int high = -1;

    for (int gsi = 16; gsi < 24; gsi++) {
        if (qtest_get_irq(qts, gsi)) {
            g_assert_cmpint(high, ==, -1);
            high = gsi;
        }
    }
    return high;
}

/*
 * Without MSI-X, INTx is high while any queue's ISR bit is set: raised by a
 * completion, lowered by clearing ISR, silent while MSI-X is on and high
 * again when MSI-X goes off with ISR still set.
 */
static void test_intx(void)
{
    VtEnv e;
    VdmaDev *d;
    uint32_t isr = VIOMMU_DMA_Q_BASE(0) + VIOMMU_DMA_Q_ISR;
    int gsi;

    start(&e);
    d = &e.dma[0];
    qtest_irq_intercept_in(e.qts, "ioapic");
    g_assert_cmpint(intx_high(e.qts), ==, -1);
    g_assert_cmphex(vdma_raise_irq(d, 0), ==, VIOMMU_DMA_ST_OK);
    gsi = intx_high(e.qts);
    g_assert_cmpint(gsi, >=, 16);
    vdma_reg_write(d, isr, 1);
    g_assert_cmpint(intx_high(e.qts), ==, -1);

    g_assert_cmphex(vdma_raise_irq(d, 0), ==, VIOMMU_DMA_ST_OK);
    g_assert_cmpint(intx_high(e.qts), ==, gsi);
    qpci_msix_enable(d->pdev);
    g_assert_cmpint(intx_high(e.qts), ==, -1);
    qpci_msix_disable(d->pdev);
    g_assert_cmpint(intx_high(e.qts), ==, gsi);
    vdma_reg_write(d, isr, 1);
    g_assert_cmpint(intx_high(e.qts), ==, -1);
    vt_stop(&e);
}

static void test_bad_rings(void)
{
    VtEnv e;
    VdmaDev *d;
    uint64_t ring;
    uint32_t qb = VIOMMU_DMA_Q_BASE(1);

    start(&e);
    d = &e.dma[0];
    ring = vtd_alloc(&e.g, 4096 * 4, 4096);
    /* not a power of two, too big, zero, misaligned */
    g_assert_false(vdma_queue_setup(d, 1, ring, ring, 3));
    g_assert_cmphex(vdma_reg_read(d, qb + VIOMMU_DMA_Q_STATUS), ==,
                    VIOMMU_DMA_QSTS_BADRING);
    g_assert_false(vdma_queue_setup(d, 1, ring, ring, 8192));
    g_assert_false(vdma_queue_setup(d, 1, ring, ring, 0));
    g_assert_false(vdma_queue_setup(d, 1, ring + 8, ring + 8, 4));
    /* doorbell on a disabled queue is ignored */
    vdma_reg_write(d, qb + VIOMMU_DMA_Q_TAIL, 1);
    g_assert_cmpuint(vdma_reg_read(d, qb + VIOMMU_DMA_Q_TAIL), ==, 0);

    /* ring in unassigned space: the queue halts, nothing else happens */
    g_assert_true(vdma_queue_setup(d, 1, ring, 0x3f0000000ULL, 4));
    vdma_reg_write(d, qb + VIOMMU_DMA_Q_TAIL, 3);
    for (int i = 0; i < 100 && !(vdma_reg_read(d, qb + VIOMMU_DMA_Q_STATUS) &
                                 VIOMMU_DMA_QSTS_HALTED); i++) {
    }
    g_assert_cmphex(vdma_reg_read(d, qb + VIOMMU_DMA_Q_STATUS), ==,
                    VIOMMU_DMA_QSTS_HALTED);
    g_assert_cmpuint(vdma_reg_read(d, qb + VIOMMU_DMA_Q_HEAD), ==, 0);
    /* ring registers are locked while enabled */
    vdma_reg_write(d, qb + VIOMMU_DMA_Q_RING_LO, 0x1000);
    g_assert_cmphex(vdma_reg_read(d, qb + VIOMMU_DMA_Q_RING_LO), ==, 0xf0000000);

    /* a full ring of NOPs, doorbell far beyond size (taken modulo) */
    g_assert_true(vdma_queue_setup(d, 2, ring, ring, 16));
    for (int i = 0; i < 15; i++) {
        VdmaDesc nop = { .op = VIOMMU_DMA_OP_NOP };
        vdma_push(d, 2, &nop);
    }
    vdma_reg_write(d, VIOMMU_DMA_Q_BASE(2) + VIOMMU_DMA_Q_TAIL, 0xffffffff);
    g_assert_cmphex(vdma_wait(d, 2, 14, NULL), ==, VIOMMU_DMA_ST_OK);
    g_assert_cmpuint(vdma_reg_read(d, VIOMMU_DMA_Q_BASE(2) + VIOMMU_DMA_Q_HEAD),
                     ==, 15);
    /* queue 0 unaffected */
    g_assert_cmphex(vdma_fill(d, ring + 8192, 8, 1, NULL), ==, VIOMMU_DMA_ST_OK);
    vt_stop(&e);
}

static void test_irq_and_reset(void)
{
    VtEnv e;
    VdmaDev *d;
    VdmaDesc desc = { .op = VIOMMU_DMA_OP_NOP, .flags = VIOMMU_DMA_FLAG_IRQ };
    uint32_t q0 = VIOMMU_DMA_Q_BASE(0);

    start(&e);
    d = &e.dma[0];
    vdma_msix_setup(d, 0, 0x51);
    g_assert_false(vtd_lapic_irr(e.qts, 0x51));
    desc.flags = 0;
    g_assert_cmphex(vdma_run(d, 0, &desc, NULL), ==, VIOMMU_DMA_ST_OK);
    g_assert_false(vtd_lapic_irr(e.qts, 0x51));
    g_assert_cmphex(vdma_reg_read(d, q0 + VIOMMU_DMA_Q_ISR), ==, 0);
    desc.flags = VIOMMU_DMA_FLAG_IRQ;
    g_assert_cmphex(vdma_run(d, 0, &desc, NULL), ==, VIOMMU_DMA_ST_OK);
    g_assert_true(vtd_lapic_irr(e.qts, 0x51));
    g_assert_cmphex(vdma_reg_read(d, q0 + VIOMMU_DMA_Q_ISR), ==, 1);
    vdma_reg_write(d, q0 + VIOMMU_DMA_Q_ISR, 1);
    g_assert_cmphex(vdma_reg_read(d, q0 + VIOMMU_DMA_Q_ISR), ==, 0);

    /* device reset through CTRL */
    vdma_reg_write(d, VIOMMU_DMA_REG_CTRL, VIOMMU_DMA_CTRL_RESET);
    g_assert_cmphex(vdma_reg_read(d, q0 + VIOMMU_DMA_Q_CTRL), ==, 0);
    g_assert_cmpuint(vdma_counter(d, VIOMMU_DMA_REG_DESCS), ==, 0);
    g_assert_cmpuint(vdma_counter(d, VIOMMU_DMA_REG_BH_NS), ==, 0);
    vt_stop(&e);
}

/*
 * A busy queue holds no other back: with both doorbells rung while the VM
 * is stopped, the device's first run after 'cont' takes one descriptor
 * from each active queue in turn (from queue 0, where a new device
 * starts), so queue 1's one COPY reads queue 0's last destination before
 * queue 0's last FILL, several runs of 256 descriptors later, has written
 * it.  This holds whenever the bottom half runs.
 */
static void test_queues_take_turns(void)
{
    const uint32_t n = 600, ring_size = 1024;
    const uint64_t mark = 0xf111000000000000ULL;
    VtEnv e;
    VdmaDev *d;
    uint64_t ring0, ring1, dst, out;
    uint32_t last, copy;

    start(&e);
    d = &e.dma[0];
    ring0 = vtd_alloc(&e.g, ring_size * VIOMMU_DMA_DESC_SIZE, 4096);
    ring1 = vtd_alloc(&e.g, 16 * VIOMMU_DMA_DESC_SIZE, 4096);
    dst = vtd_alloc(&e.g, n * 8, 4096);
    out = vtd_alloc(&e.g, 8, 8);
    g_assert_true(vdma_queue_setup(d, 0, ring0, ring0, ring_size));
    g_assert_true(vdma_queue_setup(d, 1, ring1, ring1, 16));
    qtest_qmp_assert_success(e.qts, "{'execute': 'stop'}");
    for (uint32_t i = 0; i < n; i++) {
        VdmaDesc fill = { .op = VIOMMU_DMA_OP_FILL, .len = 8,
                          .dst = dst + i * 8, .pattern = mark + i };

        last = vdma_push(d, 0, &fill);
    }
    copy = vdma_push(d, 1, &(VdmaDesc){ .op = VIOMMU_DMA_OP_COPY, .len = 8,
                                        .src = dst + (n - 1) * 8, .dst = out });
    vdma_ring_doorbell(d, 0);
    vdma_ring_doorbell(d, 1);
    g_assert_cmpuint(vdma_counter(d, VIOMMU_DMA_REG_DESCS), ==, 0);
    qtest_qmp_assert_success(e.qts, "{'execute': 'cont'}");
    g_assert_cmphex(vdma_wait(d, 1, copy, NULL), ==, VIOMMU_DMA_ST_OK);
    g_assert_cmphex(vdma_wait(d, 0, last, NULL), ==, VIOMMU_DMA_ST_OK);
    g_assert_cmphex(qtest_readq(e.qts, dst + (n - 1) * 8), ==, mark + n - 1);
    g_assert_cmphex(qtest_readq(e.qts, out), ==, 0);
    vt_stop(&e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/viommu-dma/ops", test_ops);
    qtest_add_func("/viommu-dma/bad-descriptors", test_bad_descriptors);
    qtest_add_func("/viommu-dma/bad-rings", test_bad_rings);
    qtest_add_func("/viommu-dma/irq-and-reset", test_irq_and_reset);
    qtest_add_func("/viommu-dma/dma-to-own-registers",
                   test_dma_to_own_registers);
    qtest_add_func("/viommu-dma/intx", test_intx);
    qtest_add_func("/viommu-dma/msix-masking", test_msix_masking);
    qtest_add_func("/viommu-dma/queues-take-turns", test_queues_take_turns);
    return g_test_run();
}
