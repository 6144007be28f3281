/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Scalable-mode qtests: the test program plays Linux's intel-iommu driver
 * in scalable mode (a scalable-mode root table latched with RTADDR.TTM =
 * 01b, 256-bit context entries pointing at a PASID directory, the
 * RID_PASID entry of the PASID table with the PGTT under test, 256-bit
 * invalidation descriptors: PASID-cache, P_IOTLB, context-cache and
 * wait), viommu-dma moves data through the translation without PASID
 * (which uses RID_PASID), and each case checks the data, the fault records
 * and, for first-stage tables, the accessed and dirty flags the unit sets.
 *
 * The IOMMU under test is $VIOMMU_TEST_IOMMU (viommu-vtd or intel-iommu),
 * started with x-scalable-mode=on (second-stage) or x-scalable-mode=on,
 * x-flts=on (first-stage); nested translation needs both stages, which
 * only viommu-vtd offers (second-stage=on).  Where intel-iommu deviates
 * from the specification the case must fail on it (a known deviation, see
 * docs/intel-iommu-deviations.rst).
 */
#include "qemu/osdep.h"
#include "viommu-test-env.h"

#define BUF_IOVA    0x100000000ULL      /* data IOVAs start at 4 GiB */
#define DID         5
#define SID0        vt_sid(0)

typedef struct Sm {
    VtEnv e;
    VtdGuest *g;
    uint64_t src, dst;                  /* 4-page GPA buffers */
} Sm;

static void sm_start(Sm *t, const char *opts)
{
    g_autofree char *o = g_strdup_printf(",id=iommu0,x-scalable-mode=on%s",
                                         opts ? opts : "");

    vt_start(&t->e, vt_iommu_name(), o, 1, 256, NULL);
    t->g = &t->e.g;
    vtd_sm_set_root_table(t->g);
    vtd_qi_enable_dw(t->g, 0);
    t->src = vtd_alloc(t->g, 4 * 4096, 4096);
    t->dst = vtd_alloc(t->g, 4 * 4096, 4096);
}

static void sm_stop(Sm *t)
{
    vt_stop(&t->e);
}

/*
 * What Linux sends after writing a PASID-table entry (pasid_flush_caches,
 * and the context-cache flush of a new context): context cache, PASID
 * cache (PASID-selective), the IOTLB of the domain in the form of its
 * PGTT, a wait.
 */
static void sm_flush_entry(Sm *t, uint32_t pasid, bool first_stage)
{
    vtd_qi_push(t->g, vtd_desc_cc(VTD_GRAN_GLOBAL, 0, 0, 0));
    vtd_qi_push(t->g, vtd_desc_pasid_cache(VTD_PC_PASID, DID, pasid));
    if (first_stage) {
        vtd_qi_push(t->g, vtd_desc_piotlb(VTD_PIOTLB_PASID, DID, pasid, 0, 0,
                                          false));
    } else {
        vtd_qi_push(t->g, vtd_desc_iotlb(VTD_GRAN_DOMAIN, DID, 0, 0, false));
    }
    g_assert_true(vtd_qi_sync(t->g));
}

static void sm_set_rid_pasid(Sm *t, const uint64_t qw[8], bool first_stage)
{
    vtd_sm_set_pasid_entry(t->g, SID0, 0, qw);
    sm_flush_entry(t, 0, first_stage);
}

/* copy one page src -> dst through IOVAs, check the data */
static void sm_copy_check(Sm *t, uint64_t siova, uint64_t diova, uint8_t v)
{
    uint32_t res;
    uint8_t buf[64];

    qtest_memset(t->e.qts, t->src, v, 4096);
    qtest_memset(t->e.qts, t->dst, 0, 4096);
    g_assert_cmphex(vdma_copy(&t->e.dma[0], siova, diova, 4096, &res), ==,
                    VIOMMU_DMA_ST_OK);
    qtest_memread(t->e.qts, t->dst + 4032, buf, sizeof(buf));
    for (size_t i = 0; i < sizeof(buf); i++) {
        g_assert_cmphex(buf[i], ==, v);
    }
    g_assert_cmphex(qtest_readb(t->e.qts, t->dst), ==, v);
}

/* the ring, src and dst in first-stage tables (rings at their GPA) */
static uint64_t sm_fs_tables(Sm *t, uint64_t flags)
{
    uint64_t top = vtd_fs_new(t->g);

    vtd_fs_map(t->g, top, t->e.ring[0], t->e.ring[0],
               ROUND_UP(VT_RING_SIZE * VIOMMU_DMA_DESC_SIZE, 4096),
               VTD_FS_RW | flags);
    vtd_fs_map(t->g, top, BUF_IOVA, t->src, 4096, VTD_FS_RW | flags);
    vtd_fs_map(t->g, top, BUF_IOVA + 0x10000, t->dst, 4096,
               VTD_FS_RW | flags);
    return top;
}

static VtdDomain *sm_ss_domain(Sm *t)
{
    VtdDomain *d = vtd_domain_new(t->g, DID, 4);

    vt_map_rings(&t->e, d, 0);
    vtd_map(d, BUF_IOVA, t->src, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_map(d, BUF_IOVA + 0x10000, t->dst, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    return d;
}

/* ---------------------------------------------------------------------- */

static void test_caps(void)
{
    Sm t;
    uint64_t ecap;

    sm_start(&t, NULL);
    ecap = vtd_readq(t.g, VTD_ECAP);
    g_assert_true(ecap & VTD_ECAP_SMTS);
    g_assert_true(ecap & VTD_ECAP_SLTS);
    g_assert_false(ecap & VTD_ECAP_FLTS);
    g_assert_cmphex(vtd_readq(t.g, VTD_RTADDR), ==,
                    t.g->root | VTD_RTADDR_TTM_SM);
    g_assert_true(vtd_readq(t.g, VTD_IQA) & VTD_IQA_DW);
    sm_stop(&t);

    sm_start(&t, ",x-flts=on");
    ecap = vtd_readq(t.g, VTD_ECAP);
    g_assert_true(ecap & VTD_ECAP_SMTS);
    g_assert_true(ecap & VTD_ECAP_FLTS);
    g_assert_false(ecap & VTD_ECAP_SLTS);
    sm_stop(&t);
}

static void test_second_stage(void)
{
    Sm t;
    uint64_t qw[8];
    g_autofree VtdDomain *d = NULL;

    sm_start(&t, NULL);
    d = sm_ss_domain(&t);
    vtd_sm_pe_second_stage(qw, DID, d);
    sm_set_rid_pasid(&t, qw, false);
    vtd_enable_translation(t.g);
    sm_copy_check(&t, BUF_IOVA, BUF_IOVA + 0x10000, 0x5a);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 0);
    sm_stop(&t);
}

static void test_first_stage(void)
{
    Sm t;
    uint64_t qw[8], top, e;

    sm_start(&t, ",x-flts=on");
    top = sm_fs_tables(&t, 0);
    vtd_sm_pe_first_stage(qw, DID, top);
    sm_set_rid_pasid(&t, qw, true);
    vtd_enable_translation(t.g);
    sm_copy_check(&t, BUF_IOVA, BUF_IOVA + 0x10000, 0xa5);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 0);
    /* the unit set A on what it read, A and D on what it wrote */
    e = qtest_readq(t.e.qts, vtd_fs_leaf_gpa(t.g, top, BUF_IOVA));
    g_assert_true(e & VTD_FS_A);
    g_assert_false(e & VTD_FS_D);
    e = qtest_readq(t.e.qts, vtd_fs_leaf_gpa(t.g, top, BUF_IOVA + 0x10000));
    g_assert_true(e & VTD_FS_A);
    g_assert_true(e & VTD_FS_D);
    sm_stop(&t);
}

/*
 * Nested: the first-stage tables and their output are guest-physical
 * addresses of the second stage, which maps them to themselves here
 * except for the source page, which it moves: the data must come from
 * where the second stage says.
 */
static void test_nested(void)
{
    Sm t;
    uint64_t qw[8], top, moved;
    VtdDomain *d;

    sm_start(&t, ",x-flts=on,second-stage=on");
    g_assert_true(vtd_readq(t.g, VTD_ECAP) & VTD_ECAP_NEST);
    moved = vtd_alloc(t.g, 4096, 4096);
    top = sm_fs_tables(&t, 0);
    d = vtd_domain_new(t.g, DID, 4);
    /* identity for everything the tests allocated, tables included */
    vtd_map(d, VT_MEM_START, VT_MEM_START, t.g->mem_next - VT_MEM_START,
            VTD_PTE_RW, VTD_PAGE_4K);
    vtd_map(d, t.src, moved, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_sm_pe_nested(qw, DID, top, d);
    sm_set_rid_pasid(&t, qw, true);
    vtd_enable_translation(t.g);
    qtest_memset(t.e.qts, moved, 0x3c, 4096);
    qtest_memset(t.e.qts, t.src, 0x11, 4096);
    qtest_memset(t.e.qts, t.dst, 0, 4096);
    {
        uint32_t res;

        g_assert_cmphex(vdma_copy(&t.e.dma[0], BUF_IOVA, BUF_IOVA + 0x10000,
                                  4096, &res), ==, VIOMMU_DMA_ST_OK);
    }
    g_assert_cmphex(qtest_readb(t.e.qts, t.dst + 100), ==, 0x3c);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 0);
    g_free(d);
    sm_stop(&t);
}

static void test_pass_through(void)
{
    Sm t;
    uint64_t qw[8];

    sm_start(&t, NULL);
    vtd_sm_pe_pass_through(qw, DID);
    sm_set_rid_pasid(&t, qw, false);
    vtd_enable_translation(t.g);
    sm_copy_check(&t, t.src, t.dst, 0x77);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 0);
    sm_stop(&t);
}

/* RID_PASID's entry not present: the DMA faults, the record says why */
static void test_pasid_not_present(void)
{
    Sm t;
    uint64_t qw[8] = { 0 };
    uint32_t res;
    VtdFault f;

    sm_start(&t, NULL);
    sm_set_rid_pasid(&t, qw, false);
    vtd_enable_translation(t.g);
    g_assert_cmphex(vdma_copy(&t.e.dma[0], BUF_IOVA, BUF_IOVA + 0x10000, 8,
                              &res), !=, VIOMMU_DMA_ST_OK);
    g_assert_cmpint(vtd_fault_count(t.g), >=, 1);
    g_assert_true(vtd_fault_pop(t.g, &f));
    g_assert_cmphex(f.reason, ==, VTD_FR_SM_PASID_ENTRY_P);
    g_assert_cmphex(f.sid, ==, SID0);
    sm_stop(&t);
}

/*
 * A first-stage leaf moved to another page takes effect once a
 * page-selective P_IOTLB invalidation (as Linux's qi_flush_piotlb sends
 * it) has completed; a PASID-selective one after unmapping makes the page
 * fault.
 */
static void test_piotlb(void)
{
    Sm t;
    uint64_t qw[8], top, other;
    uint32_t res;
    VtdFault f;

    sm_start(&t, ",x-flts=on");
    other = vtd_alloc(t.g, 4096, 4096);
    top = sm_fs_tables(&t, VTD_FS_A | VTD_FS_D);
    vtd_sm_pe_first_stage(qw, DID, top);
    sm_set_rid_pasid(&t, qw, true);
    vtd_enable_translation(t.g);
    sm_copy_check(&t, BUF_IOVA, BUF_IOVA + 0x10000, 0x21);

    /* the source IOVA now reads `other` */
    qtest_memset(t.e.qts, other, 0x42, 4096);
    vtd_fs_map(t.g, top, BUF_IOVA, other, 4096,
               VTD_FS_RW | VTD_FS_A | VTD_FS_D);
    vtd_qi_push(t.g, vtd_desc_piotlb(VTD_PIOTLB_PAGE, DID, 0, BUF_IOVA, 0,
                                     false));
    g_assert_true(vtd_qi_sync(t.g));
    qtest_memset(t.e.qts, t.dst, 0, 4096);
    g_assert_cmphex(vdma_copy(&t.e.dma[0], BUF_IOVA, BUF_IOVA + 0x10000,
                              4096, &res), ==, VIOMMU_DMA_ST_OK);
    g_assert_cmphex(qtest_readb(t.e.qts, t.dst + 4095), ==, 0x42);

    /* unmapped, then PASID-selective: the read faults */
    qtest_writeq(t.e.qts, vtd_fs_leaf_gpa(t.g, top, BUF_IOVA), 0);
    vtd_qi_push(t.g, vtd_desc_piotlb(VTD_PIOTLB_PASID, DID, 0, 0, 0, false));
    g_assert_true(vtd_qi_sync(t.g));
    g_assert_cmphex(vdma_copy(&t.e.dma[0], BUF_IOVA, BUF_IOVA + 0x10000, 8,
                              &res), ==, VIOMMU_DMA_ST_READ_FAULT);
    g_assert_true(vtd_fault_pop(t.g, &f));
    g_assert_cmphex(f.reason, ==, VTD_FR_SM_FS_ENTRY_P);
    g_assert_cmphex(f.addr, ==, BUF_IOVA);
    g_assert_true(f.is_read);
    sm_stop(&t);
}

/* A PGTT change (second-stage to pass-through) after a PASID-cache
 * invalidation: the device now reaches guest-physical addresses. */
static void test_pasid_cache(void)
{
    Sm t;
    uint64_t qw[8];
    g_autofree VtdDomain *d = NULL;

    sm_start(&t, NULL);
    d = sm_ss_domain(&t);
    vtd_sm_pe_second_stage(qw, DID, d);
    sm_set_rid_pasid(&t, qw, false);
    vtd_enable_translation(t.g);
    sm_copy_check(&t, BUF_IOVA, BUF_IOVA + 0x10000, 0x31);
    vtd_sm_pe_pass_through(qw, DID);
    sm_set_rid_pasid(&t, qw, false);
    sm_copy_check(&t, t.src, t.dst, 0x32);
    sm_stop(&t);
}

typedef struct SmCase {
    const char *path;
    void (*fn)(void);
    bool vtd_only;                      /* intel-iommu lacks the feature */
    const char *intel_deviation;        /* must fail on intel-iommu */
} SmCase;

static const SmCase cases[] = {
    { "caps", test_caps },
    { "second-stage", test_second_stage },
    { "first-stage", test_first_stage },
    { "nested", test_nested, .vtd_only = true },
    { "pass-through", test_pass_through },
    { "pasid-not-present", test_pasid_not_present,
      .intel_deviation = "D6: a not-present PASID entry faults 5Bh, not 59h" },
    { "piotlb", test_piotlb },
    { "pasid-cache", test_pasid_cache },
};

static void run_case(const void *data)
{
    ((const SmCase *)data)->fn();
}

/* as in viommu-vtd-test.c: a known deviation must still fail */
static void run_deviation_case(const void *data)
{
    const SmCase *c = data;

    if (g_test_subprocess()) {
        c->fn();
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    if (g_test_trap_has_passed()) {
        g_test_fail_printf("known intel-iommu deviation no longer "
                           "reproduces: %s", c->intel_deviation);
        return;
    }
    g_test_message("known intel-iommu deviation reproduced: %s",
                   c->intel_deviation);
}

int main(int argc, char **argv)
{
    const char *iommu = vt_iommu_name();
    bool intel = !strcmp(iommu, "intel-iommu");

    g_test_init(&argc, &argv, NULL);
    if (!vt_have_device(iommu)) {
        g_test_message("%s is not built into this QEMU", iommu);
        return g_test_run();
    }
    for (int i = 0; i < ARRAY_SIZE(cases); i++) {
        g_autofree char *path = g_strdup_printf("/viommu-sm/%s/%s", iommu,
                                                cases[i].path);
        if (cases[i].vtd_only && !vt_iommu_is("viommu-vtd")) {
            continue;
        }
        if (intel && cases[i].intel_deviation) {
            qtest_add_data_func(path, &cases[i], run_deviation_case);
        } else {
            qtest_add_data_func(path, &cases[i], run_case);
        }
    }
    return g_test_run();
}
