/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Invalidation cost through QEMU of viommu-vtd and intel-iommu, by kind
 * (/viommu/bench/invalidation-cost).  Not a test: it prints figures (see
 * docs/qtest-bench.rst and docs/performance.rst).
 *
 * Each working set of P pages has its own viommu-vtd and intel-iommu
 * machines, all four run in turn.  Before every timed invalidation, the
 * machine translates the P pages, so that it faces a full IOTLB: COPY
 * descriptors of 64 bytes straddling page pairs (source pages 4i, 4i+1,
 * destination 4i+2, 4i+3) on queues 1 and 2.  viommu-vtd keeps all P.
 * intel-iommu empties its IOTLB when an insertion finds 1024 entries, so
 * what it holds after the working set depends on where that happened:
 * queue 3 then runs a top-up over TOPUP_PAGES pages three times, from a
 * ring of 8 pages.  A run that empties the table is followed by one that
 * cannot (at most 1000 + 8 keys), so the table ends with the top-up pages
 * and at least one ring page: 1001-1024 entries.
 *
 * Each translation mode (legacy; scalable mode with second-stage or
 * first-stage tables, both IOMMUs with the same options) has its own
 * machines and kinds: in scalable mode the IOTLB page descriptor, P_IOTLB
 * page- and PASID-selective, PASID-cache PASID-selective, all for
 * RID_PASID (0) of domain 1.  $VIOMMU_BENCH_MODE picks modes.
 *
 * The timed part is one IQT write (qtest) that makes the IOMMU process an
 * invalidation descriptor and a status-write wait descriptor, both written
 * to the queue beforehand.  Both IOMMUs process the queue synchronously in
 * the MMIO write, on QEMU's main thread, which also serves qtest; a qtest
 * round trip costs more than most invalidations, so the figure is that
 * thread's CPU time (schedstat) across the write, minus the same for a
 * submission of the wait descriptor alone in the same repetition.  This
 * process and all the main threads share one CPU (inv_pin).
 *
 * After each mode's table, the marginal cost of a page-selective
 * descriptor on the same machines: submissions of n = 0 ... 64 of them,
 * the least-squares slope of the per-n medians (bench_marginal).
 */
#include "qemu/osdep.h"
#include <math.h>
#include <sched.h>

#include "qemu/bswap.h"
#include "viommu-bench-common.h"

#define INV_SETS        2               /* working sets, 1024 and 16384 */
#define INV_PAGES_MAX   16384           /* P / 8 descriptors per queue */
#define INV_REPS        101
#define TOPUP_PAGES     1000            /* 250 descriptors */
#define TOPUP_DESCS     256             /* 250 + 6 repeated */
#define TOPUP_RING      512             /* queue 3: 8 ring pages */

enum {
    IK_WAIT, IK_IOTLB_GLOBAL, IK_IOTLB_DOMAIN, IK_IOTLB_PAGE, IK_IOTLB_AM9,
    IK_CC_GLOBAL, IK_PIOTLB_PAGE, IK_PIOTLB_PASID, IK_PC_PASID, IK_ALL
};
static const char *const ik_names[] = {
    "wait", "iotlb-glob", "iotlb-dom", "iotlb-page", "iotlb-am9", "cc-glob",
    "piotlb-page", "piotlb-pasid", "pc-pasid",
};
/*
 * The kinds timed in each mode, the wait first.  Scalable mode: a page in
 * the legacy-form descriptor (Linux's for second-stage tables), and the
 * PASID-based forms of RID_PASID (0): P_IOTLB page- and PASID-selective,
 * PASID-cache PASID-selective.
 */
static const int legacy_kinds[] = {
    IK_WAIT, IK_IOTLB_GLOBAL, IK_IOTLB_DOMAIN, IK_IOTLB_PAGE, IK_IOTLB_AM9,
    IK_CC_GLOBAL,
};
static const int sm_kinds[] = {
    IK_WAIT, IK_IOTLB_PAGE, IK_PIOTLB_PAGE, IK_PIOTLB_PASID, IK_PC_PASID,
};
/* the present mode's kinds: kinds[0 .. nkinds - 1] */
static const int *kinds = legacy_kinds;
static int nkinds = ARRAY_SIZE(legacy_kinds);

typedef struct ThreadClock {
    int sched_fd, stat_fd;
} ThreadClock;

static bool proc_read(int fd, char *buf, size_t size)
{
    ssize_t n = pread(fd, buf, size - 1, 0);

    if (n <= 0) {
        return false;
    }
    buf[n] = 0;
    return true;
}

static bool tclock_open(ThreadClock *c, pid_t pid)
{
    g_autofree char *sched = g_strdup_printf("/proc/%d/task/%d/schedstat",
                                             pid, pid);
    g_autofree char *stat = g_strdup_printf("/proc/%d/task/%d/stat", pid, pid);

    c->sched_fd = open(sched, O_RDONLY);
    c->stat_fd = open(stat, O_RDONLY);
    if (c->sched_fd < 0 || c->stat_fd < 0) {
        g_test_message("cannot open %s or %s: %s", sched, stat,
                       strerror(errno));
        return false;
    }
    return true;
}

static void tclock_close(ThreadClock *c)
{
    if (c->sched_fd >= 0) {
        close(c->sched_fd);
    }
    if (c->stat_fd >= 0) {
        close(c->stat_fd);
    }
}

/*
 * The thread's CPU time (schedstat's first field, ns).  The kernel brings
 * it up to date when the thread is switched out, not while it runs, and
 * QEMU may still be finishing its main-loop iteration after the qtest
 * reply: take the value only when the thread was asleep between two
 * identical reads (pcount, the third field, counts its runs).
 */
static bool tclock_read(ThreadClock *c, uint64_t *ns)
{
    char a[128], b[128], st[1024];

    for (int i = 0; i < 100000; i++) {
        const char *p;

        if (!proc_read(c->sched_fd, a, sizeof(a)) ||
            !proc_read(c->stat_fd, st, sizeof(st)) ||
            !proc_read(c->sched_fd, b, sizeof(b))) {
            g_test_message("reading QEMU's schedstat failed: %s",
                           strerror(errno));
            return false;
        }
        p = strrchr(st, ')');
        if (p && p[1] == ' ' && p[2] == 'S' && !strcmp(a, b)) {
            *ns = g_ascii_strtoull(a, NULL, 10);
            return true;
        }
        if (i > 16) {
            g_usleep(10);
        }
    }
    g_test_message("QEMU's main thread never went to sleep");
    return false;
}

static uint32_t inv_ring_size(int q)
{
    return q == NQ - 1 ? TOPUP_RING : RING;
}

/* fill every slot of queue q's ring; slot s does descriptor s % period */
static void inv_write_ring(Mach *m, int q, int period, uint32_t first,
                           uint32_t npages)
{
    uint32_t size = inv_ring_size(q);
    g_autofree uint8_t *buf = g_malloc0(size * VIOMMU_DMA_DESC_SIZE);

    for (int s = 0; s < size; s++) {
        uint8_t *d = buf + s * VIOMMU_DMA_DESC_SIZE;
        uint64_t page = first + (4ULL * (s % period)) % npages;

        /* 64 bytes across pages page, page+1 to page+2, page+3 */
        d[VIOMMU_DMA_DESC_OP] = VIOMMU_DMA_OP_COPY;
        stl_le_p(d + VIOMMU_DMA_DESC_LEN, 64);
        stq_le_p(d + VIOMMU_DMA_DESC_SRC, WIN + page * 4096 + 4064);
        stq_le_p(d + VIOMMU_DMA_DESC_DST, WIN + (page + 2) * 4096 + 4064);
    }
    big_write(m->e.qts, m->ring[q], buf, size * VIOMMU_DMA_DESC_SIZE);
}

/* run n[q] descriptors on each queue q + 1; false (and a message) on error */
static bool inv_run(Mach *m, const uint32_t n[NQ])
{
    uint32_t size[NQ];

    for (int q = 0; q < NQ; q++) {
        size[q] = inv_ring_size(q);
    }
    return rings_run(m, n, size) >= 0;
}

/* the working set, then the top-up three times (see above) */
static bool inv_populate(Mach *m, int pages)
{
    const uint32_t set[NQ] = { pages / 8, pages / 8, 0 };
    const uint32_t topup[NQ] = { 0, 0, TOPUP_DESCS };

    return inv_run(m, set) && inv_run(m, topup) && inv_run(m, topup) &&
           inv_run(m, topup);
}

/*
 * One timed submission: the n descriptors desc[] (what names them) and a
 * status-write wait are queued, then IQT is written.  Returns the main
 * thread's CPU time for the write in *ns; the wait must be complete when
 * the write returns.
 */
static bool inv_timed_n(Mach *m, ThreadClock *c, const char *what,
                        const VtdDesc *desc, int n, uint64_t *ns)
{
    VtdGuest *g = &m->e.g;
    uint32_t seq;
    uint64_t t0, t1;
    int64_t deadline;

    /*
     * An untimed wait-only submission first: whatever ran before (another
     * machine, a larger working set) leaves the qtest and queue paths
     * equally warm for every kind.
     */
    if (!vtd_qi_sync(g)) {
        g_test_message("%s: wait descriptor failed (%s)", m->e.iommu, what);
        return false;
    }
    seq = ++g->wait_seq;
    qtest_writel(g->qts, g->wait_status, 0);
    for (int i = 0; i < n; i++) {
        vtd_qi_push(g, desc[i]);
    }
    vtd_qi_push(g, vtd_desc_wait(true, false, false, seq, g->wait_status));
    if (!tclock_read(c, &t0)) {
        return false;
    }
    vtd_qi_kick(g);
    if (!tclock_read(c, &t1)) {
        return false;
    }
    *ns = t1 - t0;
    if (qtest_readl(g->qts, g->wait_status) == seq) {
        return true;
    }
    /* the timed write did not cover the processing: find out why */
    deadline = g_get_monotonic_time() + POLL_NS / 1000;
    while (qtest_readl(g->qts, g->wait_status) != seq) {
        if (vtd_readl(g, VTD_FSTS) & VTD_FSTS_IQE) {
            g_test_message("%s: invalidation queue error (%s)", m->e.iommu,
                           what);
            return false;
        }
        if (g_get_monotonic_time() > deadline) {
            g_test_message("%s: wait descriptor never completed (%s)",
                           m->e.iommu, what);
            return false;
        }
        g_usleep(20);
    }
    g_test_message("%s: the queue completed after the IQT write returned: "
                   "the figures would miss that work", m->e.iommu);
    return false;
}

/* one descriptor of a kind, none for IK_WAIT */
static bool inv_timed(Mach *m, ThreadClock *c, int kind, VtdDesc desc,
                      uint64_t *ns)
{
    return inv_timed_n(m, c, ik_names[kind], &desc, kind != IK_WAIT, ns);
}

/*
 * Median of v (sorted in place) and in *half the half-width of its
 * distribution-free 95% confidence interval: order statistics
 * n/2 -+ 0.98 sqrt(n).
 */
static double median_ci(int64_t *v, int n, double *half)
{
    int d = ceil(0.98 * sqrt(n));
    int lo = MAX(n / 2 - d, 0), hi = MIN(n / 2 + d, n - 1);

    qsort(v, n, sizeof(*v), cmp_i64);
    *half = (v[hi] - v[lo]) / 2.0;
    return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* map and write the rings of one machine, and translate its working set */
static bool inv_setup(Mach *m, int pages)
{
    mach_map(m, pages);
    if (!vdma_queue_setup(&m->e.dma[0], NQ, m->ring[NQ - 1], m->ring[NQ - 1],
                          TOPUP_RING)) {
        g_test_message("%s: viommu-dma queue %d setup failed", m->e.iommu,
                       NQ);
        return false;
    }
    inv_write_ring(m, 0, pages / 8, 0, pages);
    inv_write_ring(m, 1, pages / 8, pages / 2, pages);
    inv_write_ring(m, 2, TOPUP_DESCS, 0, TOPUP_PAGES);
    /* first touches happen here, not in the timed repetitions */
    return inv_populate(m, pages);
}

static VtdDesc inv_desc(int kind, int pages)
{
    uint64_t page = rnd() % pages, block = rnd() % (pages / 512);

    switch (kind) {
    case IK_IOTLB_GLOBAL:
        return vtd_desc_iotlb(VTD_GRAN_GLOBAL, 0, 0, 0, false);
    case IK_IOTLB_DOMAIN:
        return vtd_desc_iotlb(VTD_GRAN_DOMAIN, 1, 0, 0, false);
    case IK_IOTLB_PAGE:
        return vtd_desc_iotlb(VTD_GRAN_PAGE, 1, WIN + page * 4096, 0, false);
    case IK_IOTLB_AM9:
        return vtd_desc_iotlb(VTD_GRAN_PAGE, 1, WIN + block * VTD_PAGE_2M, 9,
                              false);
    case IK_CC_GLOBAL:
        return vtd_desc_cc(VTD_GRAN_GLOBAL, 0, 0, 0);
    case IK_PIOTLB_PAGE:
        return vtd_desc_piotlb(VTD_PIOTLB_PAGE, 1, 0, WIN + page * 4096, 0,
                               false);
    case IK_PIOTLB_PASID:
        return vtd_desc_piotlb(VTD_PIOTLB_PASID, 1, 0, 0, 0, false);
    case IK_PC_PASID:
        return vtd_desc_pasid_cache(VTD_PC_PASID, 1, 0);
    }
    return (VtdDesc) { 0, 0 };
}

/*
 * Pin this process and the QEMU main threads of n machines to one CPU
 * (want: that CPU, -1: none, -2: the last one this process may use).
 * Other work on the host then disturbs all machines alike, not the one
 * that happens to share its CPU; and the CPU does not go idle between a
 * qtest command and QEMU's processing of it.  (On the VM this was written
 * on, QEMU woken on an idle CPU took twice the CPU time for the same work;
 * unpinned, the two wait-only rows differed by up to 2.5x.)  *saved
 * receives this process's affinity.  Returns the CPU, or -1.
 */
static int inv_pin(Mach *m, int n, int want, cpu_set_t *saved)
{
    cpu_set_t set;
    int cpu = want;

    if (want == -1 || sched_getaffinity(0, sizeof(*saved), saved)) {
        return -1;
    }
    if (want == -2) {
        for (int i = 0; i < CPU_SETSIZE; i++) {
            if (CPU_ISSET(i, saved)) {
                cpu = i;
            }
        }
    }
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    for (int i = 0; i < n; i++) {
        if (sched_setaffinity(qtest_pid(m[i].e.qts), sizeof(set), &set)) {
            g_test_message("cannot pin QEMU to CPU %d: %s", cpu,
                           strerror(errno));
            return -1;
        }
    }
    if (sched_setaffinity(0, sizeof(set), &set)) {
        g_test_message("cannot pin the benchmark to CPU %d: %s", cpu,
                       strerror(errno));
    }
    return cpu;
}

/* order[0 .. n - 1]: a random permutation of 0 .. n - 1 */
static void shuffle(int *order, int n)
{
    for (int k = 0; k < n; k++) {
        int j = rnd() % (k + 1);

        order[k] = order[j];
        order[j] = k;
    }
}

/*
 * Every working set has its own pair of machines (m[2 * set + device]);
 * repetitions go through all sets, kinds and devices in turn, so all see
 * the same host load.  The CPU times land in
 * ns[((2 * set + device) * nkinds + kind) * reps + repetition].
 */
static bool inv_measure(Mach *m, ThreadClock *c, const int *set, int nsets,
                        int reps, int64_t *ns)
{
    for (int i = 0; i < 2 * nsets; i++) {
        if (!inv_setup(&m[i], set[i / 2])) {
            return false;
        }
    }
    for (int r = 0; r < reps; r++) {
        int order[IK_ALL];

        /* a new order every time: no kind always follows the same one */
        shuffle(order, nkinds);
        for (int s = 0; s < nsets; s++) {
            for (int o = 0; o < nkinds; o++) {
                int k = order[o];
                VtdDesc desc = inv_desc(kinds[k], set[s]);

                for (int j = 0; j < 2; j++) {
                    int i = 2 * s + (r & 1 ? 1 - j : j);
                    uint64_t t;

                    if (!inv_populate(&m[i], set[s]) ||
                        !inv_timed(&m[i], &c[i], kinds[k], desc, &t)) {
                        return false;
                    }
                    ns[(i * nkinds + k) * reps + r] = t;
                }
            }
        }
    }
    return true;
}

/*
 * The marginal cost of one page-selective descriptor (docs/performance.rst
 * sets it flat, within 1.2x, as the IOTLB grows): submissions of n of them,
 * on distinct random working-set pages, and a wait, for each n in
 * marginal_n[], timed like the kinds above on the machines inv_measure()
 * set up; per machine the least-squares slope of the per-n medians.
 * Repetitions go through every n (in a new random order), set and machine
 * in turn, so all see the same host load.
 */
static const int marginal_n[] = { 0, 1, 2, 4, 8, 16, 32, 64 };
#define MARGINAL_NS     ARRAY_SIZE(marginal_n)

static bool inv_marginal(Mach *m, ThreadClock *c, int kind, const int *set,
                         int nsets, int reps, int64_t *ns)
{
    for (int r = 0; r < reps; r++) {
        int order[MARGINAL_NS];

        shuffle(order, MARGINAL_NS);
        for (int s = 0; s < nsets; s++) {
            for (int o = 0; o < MARGINAL_NS; o++) {
                int k = order[o], n = marginal_n[k];
                VtdDesc desc[64];   /* marginal_n[]'s largest */

                /* n distinct pages: each descriptor drops a cached entry */
                for (int d = 0; d < n; d++) {
                    bool dup;

                    do {
                        desc[d] = inv_desc(kind, set[s]);
                        dup = false;
                        for (int e = 0; e < d; e++) {
                            dup |= desc[e].hi == desc[d].hi;
                        }
                    } while (dup);
                }
                for (int j = 0; j < 2; j++) {
                    int i = 2 * s + (r & 1 ? 1 - j : j);
                    uint64_t t;

                    if (!inv_populate(&m[i], set[s]) ||
                        !inv_timed_n(&m[i], &c[i], ik_names[kind], desc, n,
                                     &t)) {
                        return false;
                    }
                    ns[(i * MARGINAL_NS + k) * reps + r] = t;
                }
            }
        }
    }
    return true;
}

/* least-squares slope of y over marginal_n */
static double marginal_slope(const double *y)
{
    double mx = 0, my = 0, sxy = 0, sxx = 0;

    for (int k = 0; k < MARGINAL_NS; k++) {
        mx += marginal_n[k] / (double)MARGINAL_NS;
        my += y[k] / MARGINAL_NS;
    }
    for (int k = 0; k < MARGINAL_NS; k++) {
        sxy += (marginal_n[k] - mx) * (y[k] - my);
        sxx += (marginal_n[k] - mx) * (marginal_n[k] - mx);
    }
    return sxy / sxx;
}

static bool bench_marginal(Mach *m, ThreadClock *c, BenchMode mode,
                           const int *set, int nsets, int reps)
{
    int kind = mode == MODE_LEGACY ? IK_IOTLB_PAGE : IK_PIOTLB_PAGE;
    g_autofree int64_t *ns = g_new(int64_t, 2 * nsets * MARGINAL_NS * reps);
    double med[2 * INV_SETS][MARGINAL_NS], slope[2 * INV_SETS];

    if (!inv_marginal(m, c, kind, set, nsets, reps, ns)) {
        return false;
    }
    printf("# marginal cost of %s: IQT writes that run n descriptors on "
           "distinct random working-set pages + a wait, median of %d per n "
           "(ns of main-thread CPU time)\n", ik_names[kind], reps);
    printf("%-6s", "n");
    for (int i = 0; i < 2 * nsets; i++) {
        printf(" %5s-%-5d", i % 2 ? "int" : "vtd", set[i / 2]);
    }
    printf("\n");
    for (int i = 0; i < 2 * nsets; i++) {
        for (int k = 0; k < MARGINAL_NS; k++) {
            double half;

            med[i][k] = median_ci(&ns[(i * MARGINAL_NS + k) * reps], reps,
                                  &half);
        }
        slope[i] = marginal_slope(med[i]);
    }
    for (int k = 0; k < MARGINAL_NS; k++) {
        printf("%-6d", marginal_n[k]);
        for (int i = 0; i < 2 * nsets; i++) {
            printf(" %11.0f", med[i][k]);
        }
        printf("\n");
    }
    printf("%-6s", "slope");
    for (int i = 0; i < 2 * nsets; i++) {
        printf(" %11.0f", slope[i]);
    }
    printf("\n");
    for (int s = 0; s < nsets; s++) {
        printf("# %s, %d pages: %s costs viommu-vtd %.0f ns, intel-iommu "
               "%.0f ns a descriptor (ratio %.2f)\n", mode_names[mode],
               set[s], ik_names[kind], slope[2 * s], slope[2 * s + 1],
               slope[2 * s + 1] / slope[2 * s]);
    }
    if (nsets > 1) {
        printf("# %s: %s's marginal cost, %d against %d pages: viommu-vtd "
               "%.2fx, intel-iommu %.2fx\n", mode_names[mode],
               ik_names[kind], set[nsets - 1], set[0],
               slope[2 * (nsets - 1)] / slope[0],
               slope[2 * (nsets - 1) + 1] / slope[1]);
    }
    return true;
}

static void bench_invalidation_mode(BenchMode mode)
{
    static const int sets[INV_SETS] = { 1024, 16384 };
    const char *only = getenv("VIOMMU_BENCH_INV_PAGES");
    const char *r = getenv("VIOMMU_BENCH_INV_REPS");
    const char *cpu_env = getenv("VIOMMU_BENCH_INV_CPU");
    const char *vopts = getenv("VIOMMU_BENCH_VTD_OPTS");
    g_autofree char *opts = g_strdup_printf(",id=vtd0%s", vopts ? vopts : "");
    int reps = MAX(r ? atoi(r) : INV_REPS, 1);
    int nsets = INV_SETS, cpu;
    int set[INV_SETS];
    ThreadClock c[2 * INV_SETS];
    Mach m[2 * INV_SETS];
    g_autofree int64_t *ns = NULL;
    cpu_set_t affinity;
    bool ok = true;

    if (only) {
        int p = atoi(only);

        if (p < 1024 || p > INV_PAGES_MAX || (p & (p - 1))) {
            g_test_message("VIOMMU_BENCH_INV_PAGES must be a power of 2 "
                           "from 1024 to %d", INV_PAGES_MAX);
            g_test_fail();
            return;
        }
        set[0] = p;
        nsets = 1;
    } else {
        memcpy(set, sets, sizeof(sets));
    }
    kinds = mode == MODE_LEGACY ? legacy_kinds : sm_kinds;
    nkinds = mode == MODE_LEGACY ? ARRAY_SIZE(legacy_kinds)
                                   : ARRAY_SIZE(sm_kinds);
    ns = g_new(int64_t, 2 * nsets * nkinds * reps);
    rng_state = 2;
    for (int i = 0; i < 2 * nsets; i++) {
        c[i] = (ThreadClock) { -1, -1 };
        mach_start(&m[i], iommus[i % 2], i % 2 ? NULL : opts, mode);
        ok = ok && tclock_open(&c[i], qtest_pid(m[i].e.qts));
    }
    cpu = inv_pin(m, 2 * nsets, cpu_env ? atoi(cpu_env) : -2, &affinity);
    printf("# mode %s: both IOMMUs with \"%s\"\n", mode_names[mode],
           mode_opts[mode]);
    printf("# invalidation cost through QEMU: QEMU main-thread CPU time "
           "(schedstat) of one IQT write that runs one descriptor + a wait\n");
    printf("# before each: the P-page working set translated (intel-iommu "
           "keeps 1001-1024 entries); median of %d\n", reps);
    if (cpu >= 0) {
        printf("# this process and all QEMU main threads pinned to CPU "
               "%d\n", cpu);
    }
    printf("# vtd-ns, int-ns: ns per invalidation above the wait-only "
           "submission (row wait: that submission); +-: 95%% CI of the "
           "median\n");
    printf("# ratio = int-ns / vtd-ns (above 1: viommu-vtd cheaper; "
           "\">\": vtd-ns within its CI, bound from its upper end)\n");
    printf("%-6s %-12s %8s %6s %8s %6s %7s\n", "pages", "kind", "vtd-ns",
           "+-", "int-ns", "+-", "ratio");
    ok = ok && inv_measure(m, c, set, nsets, reps, ns);
    for (int s = 0; ok && s < nsets; s++) {
        double med[2][IK_ALL], ci[2][IK_ALL], sum[2] = { 0, 0 };
        int cheaper = 0;

        /*
         * Each repetition's wait-only submission is subtracted from the
         * same repetition's invalidations: slow changes of host load
         * cancel out.  The wait row is sorted last.
         */
        for (int i = 0; i < 2; i++) {
            int64_t *wait = &ns[(2 * s + i) * nkinds * reps];

            for (int k = nkinds - 1; k >= 0; k--) {
                int64_t *v = &wait[k * reps];

                for (int n = 0; k != IK_WAIT && n < reps; n++) {
                    v[n] -= wait[n];
                }
                med[i][k] = median_ci(v, reps, &ci[i][k]);
            }
        }
        for (int k = 0; k < nkinds; k++) {
            char ratio[16];

            if (k == IK_WAIT || med[0][k] > ci[0][k]) {
                snprintf(ratio, sizeof(ratio), "%.2f", med[1][k] / med[0][k]);
            } else {
                double bound = med[1][k] / (MAX(med[0][k], 0) + ci[0][k]);

                snprintf(ratio, sizeof(ratio), bound < 10 ? ">%.1f" : ">%.0f",
                         bound);
            }
            printf("%-6d %-12s %8.0f %6.0f %8.0f %6.0f %7s\n", set[s],
                   ik_names[kinds[k]], med[0][k], ci[0][k], med[1][k], ci[1][k],
                   ratio);
            if (k != IK_WAIT) {
                sum[0] += med[0][k];
                sum[1] += med[1][k];
                cheaper += med[0][k] < med[1][k];
            }
        }
        printf("# %s, %d pages: one invalidation of each kind: viommu-vtd "
               "%.1f us, intel-iommu %.1f us (ratio %.2f); viommu-vtd cheaper "
               "in %d of %d kinds\n", mode_names[mode], set[s],
               sum[0] / 1000, sum[1] / 1000,
               sum[1] / sum[0], cheaper, nkinds - 1);
    }
    ok = ok && bench_marginal(m, c, mode, set, nsets, reps);
    fflush(stdout);
    if (!ok) {
        g_test_fail();
    }
    if (cpu >= 0) {
        sched_setaffinity(0, sizeof(affinity), &affinity);
    }
    for (int i = 0; i < 2 * nsets; i++) {
        tclock_close(&c[i]);
        mach_stop(&m[i]);
    }
}

static void bench_invalidation(void)
{
    for (BenchMode mode = 0; mode < MODES; mode++) {
        if (mode_selected(mode)) {
            bench_invalidation_mode(mode);
        }
    }
}

int main(int argc, char **argv)
{
    return bench_main(argc, argv, "/viommu/bench/invalidation-cost",
                      bench_invalidation);
}
