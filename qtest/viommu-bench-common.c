/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the qtest benchmarks share: see viommu-bench-common.h. */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "viommu-bench-common.h"

const char *const iommus[2] = { "viommu-vtd", "intel-iommu" };

uint64_t rng_state;

uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void big_write(QTestState *qts, uint64_t gpa, const uint8_t *p,
                      size_t len)
{
    for (size_t o = 0; o < len; o += XFER_CHUNK) {
        qtest_bufwrite(qts, gpa + o, p + o, MIN(XFER_CHUNK, len - o));
    }
}

void mach_start(Mach *m, const char *iommu, const char *opts)
{
    VtdGuest *g;
    VdmaDev *dev;

    memset(m, 0, sizeof(*m));
    vt_start(&m->e, iommu, opts, 1, 512, NULL);
    g = &m->e.g;
    dev = &m->e.dma[0];
    vtd_set_root_table(g);
    vtd_qi_enable(g, 0);
    m->d = vtd_domain_new(g, 1, 4);
    vt_map_rings(&m->e, m->d, 0);
    for (int q = 0; q < NQ; q++) {
        m->ring[q] = vtd_alloc(g, RING * VIOMMU_DMA_DESC_SIZE, 4096);
        vtd_map(m->d, m->ring[q], m->ring[q], RING * VIOMMU_DMA_DESC_SIZE,
                VTD_PTE_RW, VTD_PAGE_4K);
    }
    m->frames = vtd_alloc(g, NFRAMES * 4096ULL, 4096);
    vtd_map(m->d, WIN, m->frames, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    m->l2 = vtd_pte_gpa(m->d, WIN, 2);
    g_assert(m->l2);
    vtd_attach(m->d, vt_sid(0));
    vtd_flush_all(g);
    vtd_enable_translation(g);
    for (int q = 0; q < NQ; q++) {
        g_assert_true(vdma_queue_setup(dev, q + 1, m->ring[q], m->ring[q],
                                       RING));
    }
}

void mach_map(Mach *m, int pages)
{
    QTestState *qts = m->e.qts;
    uint64_t tbl[512];

    int need = MAX(pages, 512) / 512;

    for (int t = m->mapped / 512; t < need; t++) {
        m->l1[t] = vtd_alloc(&m->e.g, 4096, 4096);
        for (int i = 0; i < 512; i++) {
            uint64_t page = t * 512 + i;
            tbl[i] = cpu_to_le64((m->frames + (page % NFRAMES) * 4096) |
                                 VTD_PTE_RW);
        }
        big_write(qts, m->l1[t], (uint8_t *)tbl, sizeof(tbl));
        qtest_writeq(qts, m->l2 + t * 8, m->l1[t] | VTD_PTE_RW);
    }
    m->mapped = MAX(m->mapped, need * 512);
    vtd_flush_all(&m->e.g);
}

int64_t rings_run(Mach *m, const uint32_t n[NQ], const uint32_t size[NQ])
{
    VdmaDev *dev = &m->e.dma[0];
    uint32_t tail[NQ], errs[NQ];
    int64_t t0, deadline;

    for (int q = 0; q < NQ; q++) {
        uint32_t qb = VIOMMU_DMA_Q_BASE(q + 1);

        tail[q] = (vdma_reg_read(dev, qb + VIOMMU_DMA_Q_HEAD) + n[q]) % size[q];
        errs[q] = vdma_reg_read(dev, qb + VIOMMU_DMA_Q_ERRS);
    }
    t0 = g_get_monotonic_time();
    deadline = t0 + POLL_NS / 1000;
    for (int q = 0; q < NQ; q++) {
        if (n[q]) {
            vdma_reg_write(dev, VIOMMU_DMA_Q_BASE(q + 1) + VIOMMU_DMA_Q_TAIL,
                           tail[q]);
        }
    }
    /* the queues are served round-robin: the last one finishes last */
    for (int q = NQ - 1; q >= 0; q--) {
        uint32_t qb = VIOMMU_DMA_Q_BASE(q + 1);

        while (vdma_reg_read(dev, qb + VIOMMU_DMA_Q_HEAD) != tail[q]) {
            if (vdma_reg_read(dev, qb + VIOMMU_DMA_Q_STATUS) &
                VIOMMU_DMA_QSTS_HALTED) {
                g_test_message("%s: viommu-dma queue %d halted", m->e.iommu,
                               q + 1);
                return -1;
            }
            if (g_get_monotonic_time() > deadline) {
                g_test_message("%s: viommu-dma queue %d did not finish",
                               m->e.iommu, q + 1);
                return -1;
            }
            g_usleep(20);   /* leave the main loop to the device */
        }
    }
    t0 = g_get_monotonic_time() - t0;
    /* every descriptor must have succeeded: no faults in the figures */
    for (int q = 0; q < NQ; q++) {
        if (vdma_reg_read(dev, VIOMMU_DMA_Q_BASE(q + 1) +
                          VIOMMU_DMA_Q_ERRS) != errs[q]) {
            g_test_message("%s: viommu-dma descriptors failed on queue %d",
                           m->e.iommu, q + 1);
            return -1;
        }
    }
    return t0 * 1000;
}

int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}
