/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the qtest benchmarks share: see viommu-bench-common.h. */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "qapi/error.h"
#include "viommu-bench-common.h"

const char *const iommus[2] = { "viommu-vtd", "intel-iommu" };

const char *const mode_names[MODES] = { "legacy", "sm-ss", "sm-fs" };
const char *const mode_opts[MODES] = {
    "", ",x-scalable-mode=on", ",x-scalable-mode=on,x-flts=on",
};

/* first-stage entries as Linux writes them: accessed (and dirty) set */
#define FS_TABLE    (VTD_FS_P | VTD_FS_RW | VTD_FS_US | VTD_FS_A)
#define FS_LEAF     (VTD_FS_RW | VTD_FS_A | VTD_FS_D)

bool mode_selected(BenchMode mode)
{
    const char *env = getenv("VIOMMU_BENCH_MODE");
    g_auto(GStrv) names = NULL;

    if (!env || !*env) {
        return true;
    }
    names = g_strsplit(env, ",", -1);
    for (int i = 0; names[i]; i++) {
        if (!strcmp(names[i], mode_names[mode])) {
            return true;
        }
    }
    return false;
}

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

/* GPA of the first-stage level-2 (page-directory) entry of iova */
static uint64_t fs_pde_gpa(Mach *m, uint64_t iova)
{
    uint64_t table = m->fs_top;

    for (int level = 4; level > 2; level--) {
        unsigned index = (iova >> (12 + 9 * (level - 1))) & 511;
        uint64_t e = qtest_readq(m->e.qts, table + index * 8);

        g_assert(e & VTD_FS_P);
        table = e & 0x000ffffffffff000ULL;
    }
    return table + ((iova >> 21) & 511) * 8;
}

/* map [gpa, gpa + size) at the same IOVA (rings) or at iova */
static void mach_map_range(Mach *m, uint64_t iova, uint64_t gpa, uint64_t size)
{
    if (m->mode == MODE_SM_FS) {
        vtd_fs_map(&m->e.g, m->fs_top, iova, gpa, size, FS_LEAF);
    } else {
        vtd_map(m->d, iova, gpa, size, VTD_PTE_RW, VTD_PAGE_4K);
    }
}

void mach_start(Mach *m, const char *iommu, const char *opts, BenchMode mode)
{
    g_autofree char *o = g_strdup_printf("%s%s", mode_opts[mode],
                                         opts ? opts : "");
    VtdGuest *g;
    VdmaDev *dev;

    memset(m, 0, sizeof(*m));
    m->mode = mode;
    vt_start(&m->e, iommu, o, 1, 512, NULL);
    g = &m->e.g;
    dev = &m->e.dma[0];
    if (mode == MODE_LEGACY) {
        vtd_set_root_table(g);
        vtd_qi_enable(g, 0);
    } else {
        vtd_sm_set_root_table(g);
        vtd_qi_enable_dw(g, 0);
    }
    if (mode == MODE_SM_FS) {
        m->fs_top = vtd_fs_new(g);
    } else {
        m->d = vtd_domain_new(g, 1, 4);
    }
    mach_map_range(m, m->e.ring[0], m->e.ring[0],
                   ROUND_UP(VT_RING_SIZE * VIOMMU_DMA_DESC_SIZE, 4096));
    for (int q = 0; q < NQ; q++) {
        m->ring[q] = vtd_alloc(g, RING * VIOMMU_DMA_DESC_SIZE, 4096);
        mach_map_range(m, m->ring[q], m->ring[q], RING * VIOMMU_DMA_DESC_SIZE);
    }
    m->frames = vtd_alloc(g, NFRAMES * 4096ULL, 4096);
    mach_map_range(m, WIN, m->frames, 4096);
    if (mode == MODE_SM_FS) {
        m->l2 = fs_pde_gpa(m, WIN);
    } else {
        m->l2 = vtd_pte_gpa(m->d, WIN, 2);
    }
    g_assert(m->l2);
    switch (mode) {
    case MODE_LEGACY:
        vtd_attach(m->d, vt_sid(0));
        break;
    case MODE_SM_SS: {
        uint64_t qw[8];

        vtd_sm_pe_second_stage(qw, 1, m->d);
        vtd_sm_set_pasid_entry(g, vt_sid(0), 0, qw);
        break;
    }
    case MODE_SM_FS: {
        uint64_t qw[8];

        vtd_sm_pe_first_stage(qw, 1, m->fs_top);
        vtd_sm_set_pasid_entry(g, vt_sid(0), 0, qw);
        break;
    }
    default:
        g_assert_not_reached();
    }
    mach_flush_all(m);
    vtd_enable_translation(g);
    for (int q = 0; q < NQ; q++) {
        g_assert_true(vdma_queue_setup(dev, q + 1, m->ring[q], m->ring[q],
                                       RING));
    }
}

void mach_stop(Mach *m)
{
    g_free(m->d);
    m->d = NULL;
    vt_stop(&m->e);
}

void mach_map(Mach *m, int pages)
{
    QTestState *qts = m->e.qts;
    bool fs = m->mode == MODE_SM_FS;
    uint64_t leaf = fs ? VTD_FS_P | VTD_FS_US | FS_LEAF : VTD_PTE_RW;
    uint64_t table = fs ? FS_TABLE : VTD_PTE_RW;
    uint64_t tbl[512];

    int need = MAX(pages, 512) / 512;

    for (int t = m->mapped / 512; t < need; t++) {
        m->l1[t] = vtd_alloc(&m->e.g, 4096, 4096);
        for (int i = 0; i < 512; i++) {
            uint64_t page = t * 512 + i;
            tbl[i] = cpu_to_le64((m->frames + (page % NFRAMES) * 4096) | leaf);
        }
        big_write(qts, m->l1[t], (uint8_t *)tbl, sizeof(tbl));
        qtest_writeq(qts, m->l2 + t * 8, m->l1[t] | table);
    }
    m->mapped = MAX(m->mapped, need * 512);
    mach_flush_all(m);
}

void mach_flush_all(Mach *m)
{
    VtdGuest *g = &m->e.g;

    if (m->mode == MODE_LEGACY) {
        vtd_flush_all(g);
        return;
    }
    vtd_qi_push(g, vtd_desc_cc(VTD_GRAN_GLOBAL, 0, 0, 0));
    vtd_qi_push(g, vtd_desc_pasid_cache(VTD_PC_GLOBAL, 0, 0));
    vtd_qi_push(g, vtd_desc_iotlb(VTD_GRAN_GLOBAL, 0, 0, 0, false));
    vtd_qi_push(g, vtd_desc_piotlb(VTD_PIOTLB_PASID, 1, 0, 0, 0, false));
    g_assert_true(vtd_qi_sync(g));
}

void mach_flush_domain(Mach *m)
{
    VtdGuest *g = &m->e.g;

    if (m->mode != MODE_SM_FS) {
        vtd_flush_domain(g, 1);
        return;
    }
    vtd_qi_push(g, vtd_desc_piotlb(VTD_PIOTLB_PASID, 1, 0, 0, 0, false));
    g_assert_true(vtd_qi_sync(g));
}

void mach_flush_page(Mach *m, uint64_t addr, unsigned am)
{
    VtdGuest *g = &m->e.g;

    if (m->mode != MODE_SM_FS) {
        vtd_flush_page(g, 1, addr, am);
        return;
    }
    vtd_qi_push(g, vtd_desc_piotlb(VTD_PIOTLB_PAGE, 1, 0, addr, am, false));
    g_assert_true(vtd_qi_sync(g));
}

bool queue_wait(VdmaDev *dev, int q, uint32_t tail, int64_t deadline,
                const char *who)
{
    uint32_t qb = VIOMMU_DMA_Q_BASE(q);

    while (vdma_reg_read(dev, qb + VIOMMU_DMA_Q_HEAD) != tail) {
        if (vdma_reg_read(dev, qb + VIOMMU_DMA_Q_STATUS) &
            VIOMMU_DMA_QSTS_HALTED) {
            g_test_message("%s: viommu-dma queue %d halted", who, q);
            return false;
        }
        if (g_get_monotonic_time() > deadline) {
            g_test_message("%s: viommu-dma queue %d did not finish", who, q);
            return false;
        }
        g_usleep(20);   /* leave the main loop to the device */
    }
    return true;
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
        if (!queue_wait(dev, q + 1, tail[q], deadline, m->e.iommu)) {
            return -1;
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

int64_t vtd_stat(QTestState *qts, const char *path, const char *name)
{
    QDict *resp, *stats, *sec;
    g_auto(GStrv) parts = g_strsplit(path, "/", -1);
    int64_t n;

    resp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': "
                     "{'path': '/machine/peripheral/vtd0', "
                     "'property': 'stats'}}");
    g_assert(qdict_haskey(resp, "return"));
    stats = qobject_to(QDict, qobject_from_json(qdict_get_str(resp, "return"),
                                                &error_abort));
    sec = stats;
    for (int i = 0; parts[i]; i++) {
        sec = qdict_get_qdict(sec, parts[i]);
        g_assert(sec);
    }
    n = qdict_get_int(sec, name);
    qobject_unref(stats);
    qobject_unref(resp);
    return n;
}

int bench_main(int argc, char **argv, const char *path, void (*fn)(void))
{
    g_test_init(&argc, &argv, NULL);
    if (!vt_have_device("viommu-vtd") || !vt_have_device("intel-iommu")) {
        printf("# needs both viommu-vtd and intel-iommu\n");
        return 0;
    }
    qtest_add_func(path, fn);
    return g_test_run();
}
