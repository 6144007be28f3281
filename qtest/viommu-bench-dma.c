/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Translated-DMA throughput of viommu-vtd and intel-iommu, driven by
 * viommu-dma through qtest (/viommu/bench/dma-throughput).  Not a test: it
 * prints figures (see docs/qtest-bench.rst and docs/performance.rst).
 *
 * Each translation mode (legacy; scalable mode with second-stage or
 * first-stage tables, the same options on both IOMMUs; see
 * viommu-bench-common.h) gets its own pair of machines and its own table
 * of rows and summary, one mode after the other.
 *
 * Both machines run in the same process, batches interleaved, so both see
 * the same host load.  For every row a working set of W 4K IOVA pages is
 * mapped in one domain (sequential or random page order; before each
 * batch nothing, a domain-selective or 64 page-selective IOTLB
 * invalidations).  A batch is NQ rings of 4095 COPY descriptors each
 * (default 1 KiB, reading one working-set page and writing another), all
 * started by back-to-back doorbells, so the device runs NQ * 4095
 * descriptors without a qtest round trip in between.  Only the device's
 * processing is timed: from the first doorbell to every HEAD reaching its
 * TAIL (descriptors are written and invalidations done before).
 *
 * Per row: the median batch of each device, as descriptors/s, translated
 * DMA MB/s and IOMMU translations/s (ring fetch + status write + one per
 * page-bounded data chunk each way), and the ratio viommu-vtd/intel-iommu.
 *
 * $VIOMMU_BENCH_MODE     only these modes (comma-separated: legacy, sm-ss,
 *                        sm-fs)
 * $VIOMMU_BENCH_BATCHES  timed batches per row (default 7)
 * $VIOMMU_BENCH_PAGES    only rows with this working set (pages)
 * $VIOMMU_BENCH_INV      only rows with this invalidation (none, dom, page)
 * $VIOMMU_BENCH_LEN      bytes per descriptor (default 1024, max 65536)
 * $VIOMMU_BENCH_VTD_OPTS options for viommu-vtd, e.g. ",iotlb-entries=4096"
 * $VIOMMU_BENCH_BASELINE_VTD_OPTS  compare against viommu-vtd with these
 *                        options instead of intel-iommu, e.g.
 *                        ",iotlb-entries=256" (the "int" columns are then
 *                        that machine's)
 *
 * Besides wall-clock time, each row reports the device's own CPU time per
 * descriptor (viommu-dma's BH_NS: the thread CPU time of its bottom half,
 * i.e. descriptor fetch, translations, memory core and copies, without the
 * main loop, the qtest polling or other host work) and its ratio
 * intel-iommu/viommu-vtd (cpu-r, above 1: viommu-vtd cheaper).
 *
 * The last column is viommu-vtd's page walks per 1000 translations during
 * the timed batches (from its statistics): 0 means every translation hit.
 */
#include "qemu/osdep.h"
#include <math.h>

#include "qemu/bswap.h"
#include "viommu-bench-common.h"

#define BATCH       (RING - 1)
#define NPAGEINV    64                  /* page-selective invalidations */
#define MAXLEN      65536

static uint32_t xlen = 1024;            /* bytes per descriptor */

/* descriptor i of queue q copies src[q][i] to dst[q][i] (page numbers) */
static void write_rings(Mach *m, uint32_t src[NQ][RING], uint32_t dst[NQ][RING])
{
    g_autofree uint8_t *buf = g_malloc0(RING * VIOMMU_DMA_DESC_SIZE);

    for (int q = 0; q < NQ; q++) {
        for (int i = 0; i < RING; i++) {
            uint8_t *d = buf + i * VIOMMU_DMA_DESC_SIZE;
            d[VIOMMU_DMA_DESC_OP] = VIOMMU_DMA_OP_COPY;
            stl_le_p(d + VIOMMU_DMA_DESC_LEN, xlen);
            stq_le_p(d + VIOMMU_DMA_DESC_SRC, WIN + src[q][i] * 4096ULL);
            stq_le_p(d + VIOMMU_DMA_DESC_DST,
                     WIN + dst[q][i] * 4096ULL + 2048);
        }
        big_write(m->e.qts, m->ring[q], buf, RING * VIOMMU_DMA_DESC_SIZE);
    }
}

/*
 * IOMMU translations per descriptor: the descriptor fetch, the status
 * write, and per data chunk one for the read and one for the write
 * (viommu-dma splits at every 4 KiB boundary of either address, and the
 * memory core translates every access once per IOMMU page).
 */
static unsigned translations_per_desc(void)
{
    uint64_t src = 0, dst = 2048;
    unsigned chunks = 0;

    for (uint32_t off = 0; off < xlen; chunks++) {
        uint32_t n = MIN(xlen - off, 4096 - ((dst + off) & 4095));
        n = MIN(n, 4096 - ((src + off) & 4095));
        off += n;
    }
    return 2 + 2 * chunks;
}

/*
 * Run one batch (NQ rings of BATCH descriptors); returns the wall-clock ns
 * and stores in *cpu_ns the device's own CPU time for it (BH_NS).
 */
static int64_t run_batch(Mach *m, int64_t *cpu_ns)
{
    VdmaDev *dev = &m->e.dma[0];
    uint64_t cpu0 = vdma_counter(dev, VIOMMU_DMA_REG_BH_NS);
    uint32_t n[NQ], size[NQ];
    int64_t ns;

    for (int q = 0; q < NQ; q++) {
        n[q] = BATCH;
        size[q] = RING;
    }
    ns = rings_run(m, n, size);
    g_assert_cmpint(ns, >=, 0);
    *cpu_ns = vdma_counter(dev, VIOMMU_DMA_REG_BH_NS) - cpu0;
    return ns;
}

/* viommu-vtd's translate.page_walks */
static uint64_t vtd_walks(Mach *m)
{
    return vtd_stat(m->e.qts, "translate", "page_walks");
}

enum { INV_NONE, INV_DOMAIN, INV_PAGES, INV_KINDS };
static const char *const inv_names[] = { "none", "dom", "page" };

/*
 * One row: batches alternate between the machines (same descriptors on
 * both) so host noise hits both alike; the figure is the median batch,
 * in descriptors per second.
 */
static void run_row(Mach *m, int pages, bool random, int inv, int batches,
                    double tp[2], double cpu[2], uint64_t *walks)
{
    static uint32_t src[NQ][RING], dst[NQ][RING];
    uint32_t seq = 0;
    g_autofree int64_t *ns0 = g_new(int64_t, batches);
    g_autofree int64_t *ns1 = g_new(int64_t, batches);
    g_autofree int64_t *cpu0 = g_new(int64_t, batches);
    g_autofree int64_t *cpu1 = g_new(int64_t, batches);
    int64_t *ns[2] = { ns0, ns1 };
    int64_t *cns[2] = { cpu0, cpu1 };
    /* long descriptors run past their first page: stay inside the set */
    uint32_t span = (xlen + 2048 + 4095) / 4096;
    uint32_t range = pages > span ? pages - span + 1 : 1;
    int warm = 1 + range / (2 * NQ * BATCH);

    for (int i = 0; i < 2; i++) {
        mach_map(&m[i], MAX(pages, span));
    }
    /*
     * Warm-up batches (b < 0) walk the whole working set in order, so the
     * timed batches measure the steady state, not first touches.
     */
    for (int b = -warm; b < batches; b++) {
        uint64_t inv_pages[NPAGEINV];

        for (int q = 0; q < NQ; q++) {
            for (int i = 0; i < RING; i++) {
                if (random && b >= 0) {
                    src[q][i] = rnd() % range;
                    dst[q][i] = rnd() % range;
                } else {
                    src[q][i] = seq % range;
                    dst[q][i] = (seq + range / 2) % range;
                    seq++;
                }
            }
        }
        for (int k = 0; k < NPAGEINV; k++) {
            inv_pages[k] = rnd() % range;
        }
        if (b == 0) {
            *walks = vtd_walks(&m[0]);
        }
        for (int i = 0; i < 2; i++) {
            int64_t t, c;

            write_rings(&m[i], src, dst);
            if (inv == INV_DOMAIN) {
                mach_flush_domain(&m[i]);
            } else if (inv == INV_PAGES) {
                for (int k = 0; k < NPAGEINV; k++) {
                    mach_flush_page(&m[i], WIN + inv_pages[k] * 4096, 0);
                }
            }
            t = run_batch(&m[i], &c);
            if (b >= 0) {
                ns[i][b] = t;
                cns[i][b] = c;
            }
        }
    }
    *walks = vtd_walks(&m[0]) - *walks;
    for (int i = 0; i < 2; i++) {
        qsort(ns[i], batches, sizeof(int64_t), cmp_i64);
        qsort(cns[i], batches, sizeof(int64_t), cmp_i64);
        tp[i] = (double)NQ * BATCH / (ns[i][batches / 2] / 1e9);
        cpu[i] = (double)cns[i][batches / 2] / (NQ * BATCH);
    }
}

static void bench_mode(BenchMode mode)
{
    static const int sets[] = { 64, 256, 1024, 2048, 4096, 16384, 65536 };
    const char *b = getenv("VIOMMU_BENCH_BATCHES");
    const char *only = getenv("VIOMMU_BENCH_PAGES");
    const char *only_inv = getenv("VIOMMU_BENCH_INV");
    const char *len = getenv("VIOMMU_BENCH_LEN");
    const char *vopts = getenv("VIOMMU_BENCH_VTD_OPTS");
    const char *bopts = getenv("VIOMMU_BENCH_BASELINE_VTD_OPTS");
    g_autofree char *opts = g_strdup_printf(",id=vtd0%s", vopts ? vopts : "");
    const char *base[2] = { iommus[0], bopts ? "viommu-vtd" : iommus[1] };
    int batches = MAX(b ? atoi(b) : 7, 1);
    unsigned tpd;
    Mach m[2];
    /* [0]: wall clock, [1]: device CPU time */
    double geo[2] = { 0 }, geo_big[2] = { 0 }, worst_big[2] = { INFINITY,
                                                             INFINITY };
    int rows = 0, rows_big = 0;

    if (len) {
        xlen = CLAMP(atoi(len), 1, MAXLEN);
    }
    tpd = translations_per_desc();
    rng_state = 1;
    for (int i = 0; i < 2; i++) {
        mach_start(&m[i], base[i], i ? bopts : opts, mode);
    }
    printf("# mode %s: both IOMMUs with \"%s\"\n", mode_names[mode],
           mode_opts[mode]);
    printf("# viommu-dma COPY %u B/descriptor, %d x %d descriptors per "
           "batch, median of %d batches per row\n", xlen, NQ, BATCH, batches);
    printf("# %u IOMMU translations per descriptor; vtd = viommu-vtd%s, "
           "int = %s%s\n", tpd, vopts ? vopts : "", base[1],
           bopts ? bopts : "");
    printf("# wall clock: desc/s, MB/s, Mt/s (translations), ratio; device "
           "CPU time: ns/desc, cpu-r\n");
    printf("%-6s %-4s %-4s %10s %10s %8s %8s %7s %7s %6s %6s %6s %6s %6s\n",
           "pages", "ord", "inv", "vtd-desc/s", "int-desc/s", "vtd-MB/s",
           "int-MB/s", "vtd-Mt/s", "int-Mt/s", "ratio", "vtd-ns", "int-ns",
           "cpu-r", "walk/k");
    for (int s = 0; s < ARRAY_SIZE(sets); s++) {
        if (only && atoi(only) != sets[s]) {
            continue;
        }
        for (int r = 0; r < 2; r++) {
            for (int inv = 0; inv < INV_KINDS; inv++) {
                double tp[2], cpu[2], ratio[2];
                uint64_t walks = 0;

                if (only_inv && strcmp(only_inv, inv_names[inv])) {
                    continue;
                }

                run_row(m, sets[s], r, inv, batches, tp, cpu, &walks);
                ratio[0] = tp[0] / tp[1];
                ratio[1] = cpu[1] / cpu[0];
                printf("%-6d %-4s %-4s %10.0f %10.0f %8.1f %8.1f %7.2f %7.2f "
                       "%6.2f %6.0f %6.0f %6.2f %6.1f\n", sets[s],
                       r ? "rand" : "seq", inv_names[inv], tp[0], tp[1],
                       tp[0] * xlen / 1e6, tp[1] * xlen / 1e6,
                       tp[0] * tpd / 1e6, tp[1] * tpd / 1e6, ratio[0],
                       cpu[0], cpu[1], ratio[1],
                       walks * 1000.0 / ((double)batches * NQ * BATCH * tpd));
                fflush(stdout);
                rows++;
                if (sets[s] > 1024) {
                    rows_big++;
                }
                for (int k = 0; k < 2; k++) {
                    geo[k] += log(ratio[k]);
                    if (sets[s] > 1024) {
                        geo_big[k] += log(ratio[k]);
                        worst_big[k] = MIN(worst_big[k], ratio[k]);
                    }
                }
            }
        }
    }
    if (!rows) {
        printf("# no row matches VIOMMU_BENCH_PAGES (64, 256, 1024, 2048, "
               "4096, 16384, 65536) and VIOMMU_BENCH_INV (none, dom, page)\n");
        g_test_fail();
    }
    for (int k = 0; k < 2; k++) {
        const char *what = k ? "device CPU time" : "wall clock";

        if (rows) {
            printf("# %s %s: geometric mean ratio %s/%s: %.2f "
                   "(%d rows)\n", mode_names[mode], what, base[0],
                   bopts ? "baseline" : base[1], exp(geo[k] / rows), rows);
        }
        if (rows_big) {
            printf("# %s %s: geometric mean ratio, working sets above 1024 "
                   "pages: %.2f (%d rows), worst row %.2f\n", mode_names[mode],
                   what, exp(geo_big[k] / rows_big), rows_big, worst_big[k]);
        }
    }
    for (int i = 0; i < 2; i++) {
        mach_stop(&m[i]);
    }
    fflush(stdout);
}

static void bench(void)
{
    for (BenchMode mode = 0; mode < MODES; mode++) {
        if (mode_selected(mode)) {
            bench_mode(mode);
        }
    }
}


int main(int argc, char **argv)
{
    return bench_main(argc, argv, "/viommu/bench/dma-throughput", bench);
}
