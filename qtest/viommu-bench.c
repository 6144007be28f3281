/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Translated-DMA throughput of viommu-vtd and intel-iommu, driven by
 * viommu-dma through qtest.  Not a test: it prints figures (see
 * docs/qtest-bench.rst).
 *
 * Both machines run in the same process, rows interleaved, so both see the
 * same host load.  For every row a working set of W 4K IOVA pages is
 * mapped in one domain (sequential or random page order, with or without a
 * domain-selective IOTLB invalidation between batches); a batch is a ring
 * of 4095 COPY descriptors of 1 KiB, each reading one working-set page and
 * writing another, so every descriptor needs two data translations plus
 * the ring's own.  Only the device's processing is timed: from the
 * doorbell to HEAD reaching TAIL (descriptors are written before).
 *
 * $VIOMMU_BENCH_BATCHES sets the timed batches per row (default 7).
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "viommu-test-env.h"

#define RING        4096
#define BATCH       (RING - 1)
#define WIN         0x100000000ULL      /* IOVA window at 4 GiB, 1 GiB */
#define NFRAMES     512
#define XLEN        1024
#define XFER_CHUNK  (64 * 1024)

static const char *const iommus[] = { "viommu-vtd", "intel-iommu" };

typedef struct Mach {
    VtEnv e;
    VtdDomain *d;
    uint64_t ring;
    uint64_t frames;
    uint64_t l2;                        /* level-2 table of the window */
    uint64_t l1[128];                   /* up to 64K pages */
    int mapped;                         /* pages mapped so far */
} Mach;

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void big_write(QTestState *qts, uint64_t gpa, const uint8_t *p,
                      size_t len)
{
    for (size_t o = 0; o < len; o += XFER_CHUNK) {
        qtest_bufwrite(qts, gpa + o, p + o, MIN(XFER_CHUNK, len - o));
    }
}

static void mach_start(Mach *m, const char *iommu)
{
    VtdGuest *g;
    VdmaDev *dev;

    memset(m, 0, sizeof(*m));
    vt_start(&m->e, iommu, NULL, 1, 512, NULL);
    g = &m->e.g;
    dev = &m->e.dma[0];
    vtd_set_root_table(g);
    vtd_qi_enable(g, 0);
    m->d = vtd_domain_new(g, 1, 4);
    vt_map_rings(&m->e, m->d, 0);
    m->ring = vtd_alloc(g, RING * VIOMMU_DMA_DESC_SIZE, 4096);
    vtd_map(m->d, m->ring, m->ring, RING * VIOMMU_DMA_DESC_SIZE, VTD_PTE_RW,
            VTD_PAGE_4K);
    m->frames = vtd_alloc(g, NFRAMES * 4096ULL, 4096);
    vtd_map(m->d, WIN, m->frames, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    m->l2 = vtd_pte_gpa(m->d, WIN, 2);
    g_assert(m->l2);
    vtd_attach(m->d, vt_sid(0));
    vtd_flush_all(g);
    vtd_enable_translation(g);
    g_assert_true(vdma_queue_setup(dev, 1, m->ring, m->ring, RING));
}

/* map IOVA pages [0, pages) of the window, page i -> frame i % NFRAMES */
static void mach_map(Mach *m, int pages)
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

static void write_ring(Mach *m, const uint32_t *src, const uint32_t *dst)
{
    g_autofree uint8_t *buf = g_malloc0(RING * VIOMMU_DMA_DESC_SIZE);

    for (int i = 0; i < RING; i++) {
        uint8_t *d = buf + i * VIOMMU_DMA_DESC_SIZE;
        d[VIOMMU_DMA_DESC_OP] = VIOMMU_DMA_OP_COPY;
        stl_le_p(d + VIOMMU_DMA_DESC_LEN, XLEN);
        stq_le_p(d + VIOMMU_DMA_DESC_SRC, WIN + src[i] * 4096ULL);
        stq_le_p(d + VIOMMU_DMA_DESC_DST, WIN + dst[i] * 4096ULL + 2048);
    }
    big_write(m->e.qts, m->ring, buf, RING * VIOMMU_DMA_DESC_SIZE);
}

/* run one batch; returns the device time in ns */
static int64_t run_batch(Mach *m)
{
    VdmaDev *dev = &m->e.dma[0];
    uint32_t qb = VIOMMU_DMA_Q_BASE(1);
    uint32_t head = vdma_reg_read(dev, qb + VIOMMU_DMA_Q_HEAD);
    uint32_t tail = (head + BATCH) % RING;
    uint32_t errs = vdma_reg_read(dev, qb + VIOMMU_DMA_Q_ERRS);
    int64_t t0 = g_get_monotonic_time();

    vdma_reg_write(dev, qb + VIOMMU_DMA_Q_TAIL, tail);
    while (vdma_reg_read(dev, qb + VIOMMU_DMA_Q_HEAD) != tail) {
        g_assert_false(vdma_reg_read(dev, qb + VIOMMU_DMA_Q_STATUS) &
                       VIOMMU_DMA_QSTS_HALTED);
    }
    t0 = g_get_monotonic_time() - t0;
    /* every descriptor must have succeeded: no faults in the figures */
    g_assert_cmpuint(vdma_reg_read(dev, qb + VIOMMU_DMA_Q_ERRS), ==, errs);
    return t0 * 1000;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * One row: batches alternate between the machines (same descriptors on
 * both) so host noise hits both alike; the figure is the median batch.
 */
static void run_row(Mach *m, int pages, bool random, bool inv, int batches,
                    double tp[2])
{
    static uint32_t src[RING], dst[RING];
    uint32_t seq = 0;
    g_autofree int64_t *ns0 = g_new(int64_t, batches);
    g_autofree int64_t *ns1 = g_new(int64_t, batches);
    int64_t *ns[2] = { ns0, ns1 };

    for (int i = 0; i < 2; i++) {
        mach_map(&m[i], pages);
    }
    for (int b = -1; b < batches; b++) {
        for (int i = 0; i < RING; i++) {
            if (random) {
                src[i] = rnd() % pages;
                dst[i] = rnd() % pages;
            } else {
                src[i] = seq % pages;
                dst[i] = (seq + pages / 2) % pages;
                seq++;
            }
        }
        for (int i = 0; i < 2; i++) {
            int64_t t;

            write_ring(&m[i], src, dst);
            if (inv) {
                vtd_flush_domain(&m[i].e.g, 1);
            }
            t = run_batch(&m[i]);
            if (b >= 0) {       /* batch -1 warms up */
                ns[i][b] = t;
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        qsort(ns[i], batches, sizeof(int64_t), cmp_i64);
        tp[i] = BATCH / (ns[i][batches / 2] / 1e9);
    }
}

static void bench(void)
{
    static const int sets[] = { 64, 256, 1024, 2048, 4096, 16384, 65536 };
    const char *b = getenv("VIOMMU_BENCH_BATCHES");
    int batches = MAX(b ? atoi(b) : 7, 1);
    Mach m[2];
    double geo = 0;
    int rows = 0;

    rng_state = 1;
    for (int i = 0; i < 2; i++) {
        mach_start(&m[i], iommus[i]);
    }
    printf("# viommu-dma COPY %d B/descriptor, %d descriptors per batch, "
           "median of %d batches per row\n", XLEN, BATCH, batches);
    printf("# throughput in descriptors/s (each: 2 data translations, "
           "%.1f MB/s per 1000 desc/s)\n", XLEN * 1000 / 1e6);
    printf("%-6s %-4s %-4s %14s %14s %8s\n", "pages", "ord", "inv",
           "viommu-vtd", "intel-iommu", "ratio");
    for (int s = 0; s < ARRAY_SIZE(sets); s++) {
        for (int r = 0; r < 2; r++) {
            for (int inv = 0; inv < 2; inv++) {
                double tp[2];

                run_row(m, sets[s], r, inv, batches, tp);
                printf("%-6d %-4s %-4s %14.0f %14.0f %8.2f\n", sets[s],
                       r ? "rand" : "seq", inv ? "dom" : "none", tp[0],
                       tp[1], tp[0] / tp[1]);
                fflush(stdout);
                geo += log(tp[0] / tp[1]);
                rows++;
            }
        }
    }
    printf("# geometric mean ratio viommu-vtd/intel-iommu: %.2f\n",
           exp(geo / rows));
    for (int i = 0; i < 2; i++) {
        g_free(m[i].d);
        vt_stop(&m[i].e);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!vt_have_device("viommu-vtd") || !vt_have_device("intel-iommu")) {
        printf("# needs both viommu-vtd and intel-iommu\n");
        return 0;
    }
    qtest_add_func("/viommu/bench/dma-throughput", bench);
    return g_test_run();
}
