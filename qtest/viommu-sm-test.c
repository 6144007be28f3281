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

static void sm_start_extra(Sm *t, const char *opts, int ndma,
                           const char *extra)
{
    g_autofree char *o = g_strdup_printf(",id=iommu0,x-scalable-mode=on%s",
                                         opts ? opts : "");

    vt_start(&t->e, vt_iommu_name(), o, ndma, 256, extra);
    t->g = &t->e.g;
    vtd_sm_set_root_table(t->g);
    vtd_qi_enable_dw(t->g, 0);
    t->src = vtd_alloc(t->g, 4 * 4096, 4096);
    t->dst = vtd_alloc(t->g, 4 * 4096, 4096);
}

static void sm_start(Sm *t, const char *opts)
{
    sm_start_extra(t, opts, 1, NULL);
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

/* device dev copies one page src -> dst through IOVAs, check the data */
static void sm_dev_copy_check(Sm *t, int dev, uint64_t siova, uint64_t diova,
                              uint8_t v)
{
    uint32_t res;
    uint8_t buf[64];

    qtest_memset(t->e.qts, t->src, v, 4096);
    qtest_memset(t->e.qts, t->dst, 0, 4096);
    g_assert_cmphex(vdma_copy(&t->e.dma[dev], siova, diova, 4096, &res), ==,
                    VIOMMU_DMA_ST_OK);
    qtest_memread(t->e.qts, t->dst + 4032, buf, sizeof(buf));
    for (size_t i = 0; i < sizeof(buf); i++) {
        g_assert_cmphex(buf[i], ==, v);
    }
    g_assert_cmphex(qtest_readb(t->e.qts, t->dst), ==, v);
}

static void sm_copy_check(Sm *t, uint64_t siova, uint64_t diova, uint8_t v)
{
    sm_dev_copy_check(t, 0, siova, diova, v);
}

/* device dev's ring, src and dst in first-stage tables (rings at their GPA) */
static uint64_t sm_fs_tables_dev(Sm *t, int dev, uint64_t flags)
{
    uint64_t top = vtd_fs_new(t->g);

    vtd_fs_map(t->g, top, t->e.ring[dev], t->e.ring[dev],
               ROUND_UP(VT_RING_SIZE * VIOMMU_DMA_DESC_SIZE, 4096),
               VTD_FS_RW | flags);
    vtd_fs_map(t->g, top, BUF_IOVA, t->src, 4096, VTD_FS_RW | flags);
    vtd_fs_map(t->g, top, BUF_IOVA + 0x10000, t->dst, 4096,
               VTD_FS_RW | flags);
    return top;
}

static uint64_t sm_fs_tables(Sm *t, uint64_t flags)
{
    return sm_fs_tables_dev(t, 0, flags);
}

/*
 * The builder of RID_PASID entries: device dev's PASID-table entry with
 * PGTT pgtt (VTD_PGTT_FS, _SS or _PT) in domain did, over tables of its
 * own that map the device's ring at its GPA, BUF_IOVA to src and BUF_IOVA
 * + 0x10000 to dst (their first- or second-stage leaves with leaf_flags as
 * well).  Written,
 * not flushed.  Returns the first-stage top table (0 otherwise); the
 * second-stage domain goes to *ss (the caller frees it), or is freed here
 * when ss is NULL.
 */
static uint64_t sm_write_rid_pasid(Sm *t, int dev, int pgtt, uint16_t did,
                                   uint64_t leaf_flags, VtdDomain **ss)
{
    uint64_t qw[8], top = 0;
    VtdDomain *d = NULL;

    switch (pgtt) {
    case VTD_PGTT_FS:
        top = sm_fs_tables_dev(t, dev, leaf_flags);
        vtd_sm_pe_first_stage(qw, did, top);
        break;
    case VTD_PGTT_SS:
        d = vtd_domain_new(t->g, did, 4);
        vt_map_rings(&t->e, d, dev);
        vtd_map(d, BUF_IOVA, t->src, 4096, VTD_PTE_RW | leaf_flags,
                VTD_PAGE_4K);
        vtd_map(d, BUF_IOVA + 0x10000, t->dst, 4096, VTD_PTE_RW | leaf_flags,
                VTD_PAGE_4K);
        vtd_sm_pe_second_stage(qw, did, d);
        break;
    case VTD_PGTT_PT:
        vtd_sm_pe_pass_through(qw, did);
        break;
    default:
        g_assert_not_reached();
    }
    vtd_sm_set_pasid_entry(t->g, vt_sid(dev), 0, qw);
    if (ss) {
        *ss = d;
    } else {
        g_free(d);
    }
    return top;
}

/* device 0's RID_PASID entry in DID, written and flushed as Linux does */
static uint64_t sm_rid_pasid(Sm *t, int pgtt, uint64_t leaf_flags,
                             VtdDomain **ss)
{
    uint64_t top = sm_write_rid_pasid(t, 0, pgtt, DID, leaf_flags, ss);

    sm_flush_entry(t, 0, pgtt == VTD_PGTT_FS);
    return top;
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

    sm_start(&t, NULL);
    sm_rid_pasid(&t, VTD_PGTT_SS, 0, NULL);
    vtd_enable_translation(t.g);
    sm_copy_check(&t, BUF_IOVA, BUF_IOVA + 0x10000, 0x5a);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 0);
    sm_stop(&t);
}

/*
 * Linux 5.13 to 5.18 set SNP (bit 11) in every second-stage leaf they map
 * for a coherent device once scalable mode is on, whatever ECAP.SC says
 * (commit 6c00612d0cba): the DMA must go through on a unit without SC.
 */
static void test_second_stage_snp(void)
{
    Sm t;

    sm_start(&t, NULL);
    g_assert_false(vtd_readq(t.g, VTD_ECAP) & (1ULL << 7));   /* no ECAP.SC */
    sm_rid_pasid(&t, VTD_PGTT_SS, 1ULL << 11, NULL);           /* SNP */
    vtd_enable_translation(t.g);
    sm_copy_check(&t, BUF_IOVA, BUF_IOVA + 0x10000, 0x3c);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 0);
    sm_stop(&t);
}

static void test_first_stage(void)
{
    Sm t;
    uint64_t top, e;

    sm_start(&t, ",x-flts=on");
    top = sm_rid_pasid(&t, VTD_PGTT_FS, 0, NULL);
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

    sm_start(&t, NULL);
    sm_rid_pasid(&t, VTD_PGTT_PT, 0, NULL);
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
    /* the ring fetch itself faults: the descriptor stays pending */
    g_assert_cmphex(vdma_copy(&t.e.dma[0], BUF_IOVA, BUF_IOVA + 0x10000, 8,
                              &res), ==, VIOMMU_DMA_ST_PENDING);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 1);
    g_assert_true(vtd_fault_pop(t.g, &f));
    vt_assert_deviation("D6", f.reason == VTD_FR_SM_PASID_ENTRY_P);
    g_assert_cmphex(f.sid, ==, SID0);
    g_assert_cmphex(f.addr, ==, t.e.ring[0] & ~0xfffULL);
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
    uint64_t top, other;
    uint32_t res;
    VtdFault f;

    sm_start(&t, ",x-flts=on");
    other = vtd_alloc(t.g, 4096, 4096);
    top = sm_rid_pasid(&t, VTD_PGTT_FS, VTD_FS_A | VTD_FS_D, NULL);
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

    sm_start(&t, NULL);
    sm_rid_pasid(&t, VTD_PGTT_SS, 0, NULL);
    vtd_enable_translation(t.g);
    sm_copy_check(&t, BUF_IOVA, BUF_IOVA + 0x10000, 0x31);
    sm_rid_pasid(&t, VTD_PGTT_PT, 0, NULL);
    sm_copy_check(&t, t.src, t.dst, 0x32);
    sm_stop(&t);
}

/* ---------------------------------------------------------------------- */
/*
 * Requests with PASID: viommu-dma with pasid=on tags a descriptor's src
 * and dst accesses with the descriptor's PASID (VIOMMU_DMA_FLAG_PASID);
 * its ring and completions stay requests without PASID (RID_PASID).  Each
 * PASID below maps the same source IOVA to a page of its own, so the data
 * that arrives names the PASID entry that translated it.
 */
#define PASID_FS        1
#define PASID_SS        2
#define PASID_NESTED    3
#define PASID_PT        4

static void sm_start_pasid(Sm *t, const char *opts)
{
    g_autofree char *o = g_strdup_printf(",id=iommu0,x-scalable-mode=on,"
                                         "x-pasid-mode=on%s", opts);

    vt_start(&t->e, vt_iommu_name(), o, 1, 256, "-global viommu-dma.pasid=on");
    t->g = &t->e.g;
    vtd_sm_set_root_table(t->g);
    vtd_qi_enable_dw(t->g, 0);
    t->src = vtd_alloc(t->g, 4 * 4096, 4096);
    t->dst = vtd_alloc(t->g, 4 * 4096, 4096);
}

/*
 * The context entry's PASIDE (bit 3): requests with PASID allowed, as
 * Linux sets it for a device with the PASID capability.  The context
 * entry exists once the device has a PASID-table entry.
 */
static void sm_set_paside(Sm *t, bool on)
{
    unsigned devfn = SID0 & 0xff;
    uint64_t ce = t->g->sm_ctx[SID0 >> 8][devfn >> 7] + (devfn & 0x7f) * 32;
    uint64_t lo = qtest_readq(t->e.qts, ce);

    g_assert_true(lo & 1);
    qtest_writeq(t->e.qts, ce, on ? lo | 8 : lo & ~8ULL);
}

/* everything cached is stale: context, PASID cache, IOTLB (all domains) */
static void sm_flush_all(Sm *t)
{
    vtd_qi_push(t->g, vtd_desc_cc(VTD_GRAN_GLOBAL, 0, 0, 0));
    vtd_qi_push(t->g, vtd_desc_pasid_cache(VTD_PC_GLOBAL, 0, 0));
    vtd_qi_push(t->g, vtd_desc_iotlb(VTD_GRAN_GLOBAL, 0, 0, 0, false));
    g_assert_true(vtd_qi_sync(t->g));
}

static uint32_t sm_pasid_copy(Sm *t, uint32_t pasid, uint8_t flags,
                              uint64_t siova, uint64_t diova, uint32_t len)
{
    VdmaDesc desc = { .op = VIOMMU_DMA_OP_COPY,
                      .flags = VIOMMU_DMA_FLAG_PASID | flags, .len = len,
                      .src = siova, .dst = diova, .pasid = pasid };
    uint32_t res;

    qtest_memset(t->e.qts, t->dst, 0, 4096);
    return vdma_run(&t->e.dma[0], 0, &desc, &res);
}

/* dst (t->dst) holds one page of v */
static void sm_check_dst(Sm *t, uint8_t v)
{
    g_assert_cmphex(qtest_readb(t->e.qts, t->dst), ==, v);
    g_assert_cmphex(qtest_readb(t->e.qts, t->dst + 4095), ==, v);
}

static uint64_t sm_page(Sm *t, uint8_t v)
{
    uint64_t p = vtd_alloc(t->g, 4096, 4096);

    qtest_memset(t->e.qts, p, v, 4096);
    return p;
}

/*
 * Every PGTT behind a PASID at once: first-stage, second-stage, nested
 * and pass-through, and RID_PASID (second-stage) for the requests without
 * PASID; the first-stage tables get their A and D flags.
 */
static void test_pasid_dma(void)
{
    Sm t;
    uint64_t qw[8], fs, nfs, pa[5], moved;
    uint32_t res;
    g_autofree VtdDomain *rid = NULL, *ss = NULL, *nest = NULL;

    sm_start_pasid(&t, ",x-flts=on,second-stage=on");
    for (int i = 0; i < 5; i++) {
        pa[i] = sm_page(&t, 0x10 + i);
    }
    /* RID_PASID: the ring, BUF_IOVA -> pa[0] */
    rid = vtd_domain_new(t.g, DID, 4);
    vt_map_rings(&t.e, rid, 0);
    vtd_map(rid, BUF_IOVA, pa[0], 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_map(rid, BUF_IOVA + 0x10000, t.dst, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_sm_pe_second_stage(qw, DID, rid);
    vtd_sm_set_pasid_entry(t.g, SID0, 0, qw);
    /* first-stage: BUF_IOVA -> pa[1] */
    fs = vtd_fs_new(t.g);
    vtd_fs_map(t.g, fs, BUF_IOVA, pa[1], 4096, VTD_FS_RW);
    vtd_fs_map(t.g, fs, BUF_IOVA + 0x10000, t.dst, 4096, VTD_FS_RW);
    vtd_sm_pe_first_stage(qw, DID + 1, fs);
    vtd_sm_set_pasid_entry(t.g, SID0, PASID_FS, qw);
    /* second-stage: BUF_IOVA -> pa[2] */
    ss = vtd_domain_new(t.g, DID + 2, 4);
    vtd_map(ss, BUF_IOVA, pa[2], 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_map(ss, BUF_IOVA + 0x10000, t.dst, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_sm_pe_second_stage(qw, DID + 2, ss);
    vtd_sm_set_pasid_entry(t.g, SID0, PASID_SS, qw);
    /* nested: first stage BUF_IOVA -> `moved`, second stage moved -> pa[3] */
    moved = vtd_alloc(t.g, 4096, 4096);
    nfs = vtd_fs_new(t.g);
    vtd_fs_map(t.g, nfs, BUF_IOVA, moved, 4096, VTD_FS_RW);
    vtd_fs_map(t.g, nfs, BUF_IOVA + 0x10000, t.dst, 4096, VTD_FS_RW);
    nest = vtd_domain_new(t.g, DID + 3, 4);
    vtd_map(nest, VT_MEM_START, VT_MEM_START, moved - VT_MEM_START,
            VTD_PTE_RW, VTD_PAGE_4K);
    vtd_map(nest, moved, pa[3], 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_sm_pe_nested(qw, DID + 3, nfs, nest);
    vtd_sm_set_pasid_entry(t.g, SID0, PASID_NESTED, qw);
    /* the nested second stage maps the tables allocated after `moved` */
    vtd_map(nest, moved + 4096, moved + 4096, t.g->mem_next - moved - 4096,
            VTD_PTE_RW, VTD_PAGE_4K);
    /* pass-through */
    vtd_sm_pe_pass_through(qw, DID + 4);
    vtd_sm_set_pasid_entry(t.g, SID0, PASID_PT, qw);
    sm_set_paside(&t, true);
    sm_flush_all(&t);
    vtd_enable_translation(t.g);

    /* without PASID: RID_PASID */
    qtest_memset(t.e.qts, t.dst, 0, 4096);
    g_assert_cmphex(vdma_copy(&t.e.dma[0], BUF_IOVA, BUF_IOVA + 0x10000, 4096,
                              &res), ==, VIOMMU_DMA_ST_OK);
    sm_check_dst(&t, 0x10);
    g_assert_cmphex(sm_pasid_copy(&t, PASID_FS, 0, BUF_IOVA,
                                  BUF_IOVA + 0x10000, 4096),
                    ==, VIOMMU_DMA_ST_OK);
    sm_check_dst(&t, 0x11);
    g_assert_true(qtest_readq(t.e.qts, vtd_fs_leaf_gpa(t.g, fs, BUF_IOVA)) &
                  VTD_FS_A);
    g_assert_true(qtest_readq(t.e.qts, vtd_fs_leaf_gpa(t.g, fs,
                                                       BUF_IOVA + 0x10000)) &
                  VTD_FS_D);
    g_assert_cmphex(sm_pasid_copy(&t, PASID_SS, 0, BUF_IOVA,
                                  BUF_IOVA + 0x10000, 4096),
                    ==, VIOMMU_DMA_ST_OK);
    sm_check_dst(&t, 0x12);
    g_assert_cmphex(sm_pasid_copy(&t, PASID_NESTED, 0, BUF_IOVA,
                                  BUF_IOVA + 0x10000, 4096),
                    ==, VIOMMU_DMA_ST_OK);
    sm_check_dst(&t, 0x13);
    g_assert_cmphex(sm_pasid_copy(&t, PASID_PT, 0, pa[4], t.dst, 4096),
                    ==, VIOMMU_DMA_ST_OK);
    sm_check_dst(&t, 0x14);
    /* again without PASID: nothing above disturbed RID_PASID's IOTLB */
    qtest_memset(t.e.qts, t.dst, 0, 4096);
    g_assert_cmphex(vdma_copy(&t.e.dma[0], BUF_IOVA, BUF_IOVA + 0x10000, 4096,
                              &res), ==, VIOMMU_DMA_ST_OK);
    sm_check_dst(&t, 0x10);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 0);
    sm_stop(&t);
}

/*
 * RID_PASID pass-through does not let requests with PASID bypass the
 * unit: BUF_IOVA is no guest-physical address (256 MiB of RAM), and only
 * the PASID's first-stage tables make the copy work.
 */
static void test_pasid_behind_pass_through(void)
{
    Sm t;
    uint64_t qw[8], fs, pa;
    VtdFault f;

    sm_start_pasid(&t, ",x-flts=on,second-stage=on");
    pa = sm_page(&t, 0x6b);
    vtd_sm_pe_pass_through(qw, DID);
    vtd_sm_set_pasid_entry(t.g, SID0, 0, qw);
    fs = vtd_fs_new(t.g);
    vtd_fs_map(t.g, fs, BUF_IOVA, pa, 4096, VTD_FS_RW);
    vtd_fs_map(t.g, fs, BUF_IOVA + 0x10000, t.dst, 4096, VTD_FS_RW);
    vtd_sm_pe_first_stage(qw, DID + 1, fs);
    vtd_sm_set_pasid_entry(t.g, SID0, PASID_FS, qw);
    sm_set_paside(&t, true);
    sm_flush_all(&t);
    vtd_enable_translation(t.g);
    g_assert_cmphex(sm_pasid_copy(&t, PASID_FS, 0, BUF_IOVA,
                                  BUF_IOVA + 0x10000, 4096),
                    ==, VIOMMU_DMA_ST_OK);
    sm_check_dst(&t, 0x6b);
    /* and a PASID without an entry faults rather than passing through */
    g_assert_cmphex(sm_pasid_copy(&t, PASID_FS + 1, 0, t.src, t.dst, 8),
                    ==, VIOMMU_DMA_ST_READ_FAULT);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 1);
    g_assert_true(vtd_fault_pop(t.g, &f));
    g_assert_cmphex(f.reason, ==, VTD_FR_SM_PASID_ENTRY_P);
    g_assert_cmphex(f.sid, ==, SID0);
    g_assert_true(f.has_pasid);
    g_assert_cmphex(f.pasid, ==, PASID_FS + 1);
    g_assert_cmphex(f.addr, ==, t.src & ~0xfffULL);
    sm_stop(&t);
}

static void sm_expect_pasid_fault(Sm *t, uint8_t reason, uint32_t pasid,
                                  uint64_t addr)
{
    VtdFault f;

    g_assert_true(vtd_fault_pop(t->g, &f));
    g_assert_cmphex(f.reason, ==, reason);
    g_assert_cmphex(f.sid, ==, SID0);
    g_assert_true(f.has_pasid);
    g_assert_cmphex(f.pasid, ==, pasid);
    g_assert_cmphex(f.addr, ==, addr);
    g_assert_true(f.is_read);
    g_assert_cmpint(vtd_fault_count(t->g), ==, 0);
}

/*
 * Privileged requests with PASID through first-stage tables (SRE set):
 * they reach a supervisor-only page, which user-level requests may not,
 * and each kind keeps its own IOTLB entries; a leaf moved to another page
 * is seen by both once a P_IOTLB of the PASID has completed.
 */
static void test_pasid_supervisor(void)
{
    Sm t;
    uint64_t qw[8], fs, pa[2], leaf;
    g_autofree VtdDomain *rid = NULL;

    sm_start_pasid(&t, ",x-flts=on,second-stage=on");
    pa[0] = sm_page(&t, 0x61);
    pa[1] = sm_page(&t, 0x62);
    rid = vtd_domain_new(t.g, DID, 4);
    vt_map_rings(&t.e, rid, 0);
    vtd_sm_pe_second_stage(qw, DID, rid);
    vtd_sm_set_pasid_entry(t.g, SID0, 0, qw);
    fs = vtd_fs_new(t.g);
    vtd_fs_map(t.g, fs, BUF_IOVA, pa[0], 4096, VTD_FS_RW);
    vtd_fs_map(t.g, fs, BUF_IOVA + 0x10000, t.dst, 4096, VTD_FS_RW);
    leaf = vtd_fs_leaf_gpa(t.g, fs, BUF_IOVA);
    /* the source page supervisor-only: U/S clear in its leaf */
    qtest_writeq(t.e.qts, leaf, pa[0] | VTD_FS_P | VTD_FS_RW);
    vtd_sm_pe_first_stage(qw, DID + 1, fs);
    qw[2] |= 1;                                     /* SRE */
    vtd_sm_set_pasid_entry(t.g, SID0, PASID_FS, qw);
    sm_set_paside(&t, true);
    sm_flush_all(&t);
    vtd_enable_translation(t.g);

    for (int i = 0; i < 2; i++) {
        g_assert_cmphex(sm_pasid_copy(&t, PASID_FS, VIOMMU_DMA_FLAG_PRIV,
                                      BUF_IOVA, BUF_IOVA + 0x10000, 4096),
                        ==, VIOMMU_DMA_ST_OK);
        sm_check_dst(&t, 0x61);
        g_assert_cmphex(sm_pasid_copy(&t, PASID_FS, 0, BUF_IOVA,
                                      BUF_IOVA + 0x10000, 8),
                        ==, VIOMMU_DMA_ST_READ_FAULT);
        sm_expect_pasid_fault(&t, VTD_FR_SM_FS_USER, PASID_FS, BUF_IOVA);
    }
    /* moved, then the PASID's P_IOTLB: the privileged request follows */
    qtest_writeq(t.e.qts, leaf, pa[1] | VTD_FS_P | VTD_FS_RW);
    vtd_qi_push(t.g, vtd_desc_piotlb(VTD_PIOTLB_PASID, DID + 1, PASID_FS, 0,
                                     0, false));
    g_assert_true(vtd_qi_sync(t.g));
    g_assert_cmphex(sm_pasid_copy(&t, PASID_FS, VIOMMU_DMA_FLAG_PRIV,
                                  BUF_IOVA, BUF_IOVA + 0x10000, 4096),
                    ==, VIOMMU_DMA_ST_OK);
    sm_check_dst(&t, 0x62);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 0);
    sm_stop(&t);
}

/*
 * Requests with PASID that fault: each with its scalable-mode reason,
 * recorded with the PASID (PP, PV).  PASID 5 shares PASID 1's PASID table
 * but its entry is clear (59h); PASID 200's directory entry (3) is not
 * present (51h); a privileged request to a first-stage entry with SRE
 * clear (5Dh); a second-stage entry without the page (79h).  A PASID
 * beyond PDTS (46h) needs a PASID of 8192 or more, which viommu-dma cannot
 * tag (VIOMMU_DMA_PASID_MAX): the engine's unit tests cover it.
 */
static void test_pasid_faults(void)
{
    Sm t;
    uint64_t qw[8], fs;
    g_autofree VtdDomain *rid = NULL, *ss = NULL;

    sm_start_pasid(&t, ",x-flts=on,second-stage=on");
    rid = vtd_domain_new(t.g, DID, 4);
    vt_map_rings(&t.e, rid, 0);
    vtd_sm_pe_second_stage(qw, DID, rid);
    vtd_sm_set_pasid_entry(t.g, SID0, 0, qw);
    fs = vtd_fs_new(t.g);
    vtd_fs_map(t.g, fs, BUF_IOVA, t.src, 4096, VTD_FS_RW);
    vtd_fs_map(t.g, fs, BUF_IOVA + 0x10000, t.dst, 4096, VTD_FS_RW);
    vtd_sm_pe_first_stage(qw, DID + 1, fs);
    vtd_sm_set_pasid_entry(t.g, SID0, PASID_FS, qw);
    ss = vtd_domain_new(t.g, DID + 2, 4);
    vtd_sm_pe_second_stage(qw, DID + 2, ss);
    vtd_sm_set_pasid_entry(t.g, SID0, PASID_SS, qw);
    sm_set_paside(&t, true);
    sm_flush_all(&t);
    vtd_enable_translation(t.g);

    /* PASIDE clear: no requests with PASID at all (45h) */
    sm_set_paside(&t, false);
    sm_flush_all(&t);
    g_assert_cmphex(sm_pasid_copy(&t, PASID_FS, 0, BUF_IOVA,
                                  BUF_IOVA + 0x10000, 8),
                    ==, VIOMMU_DMA_ST_READ_FAULT);
    sm_expect_pasid_fault(&t, VTD_FR_SM_CONTEXT_PASIDE, PASID_FS, BUF_IOVA);
    sm_set_paside(&t, true);
    sm_flush_all(&t);

    g_assert_cmphex(sm_pasid_copy(&t, 5, 0, BUF_IOVA, BUF_IOVA + 0x10000, 8),
                    ==, VIOMMU_DMA_ST_READ_FAULT);
    sm_expect_pasid_fault(&t, VTD_FR_SM_PASID_ENTRY_P, 5, BUF_IOVA);
    g_assert_cmphex(sm_pasid_copy(&t, 200, 0, BUF_IOVA, BUF_IOVA + 0x10000, 8),
                    ==, VIOMMU_DMA_ST_READ_FAULT);
    sm_expect_pasid_fault(&t, VTD_FR_SM_PASID_DIR_P, 200, BUF_IOVA);
    g_assert_cmphex(sm_pasid_copy(&t, PASID_FS, VIOMMU_DMA_FLAG_PRIV,
                                  BUF_IOVA, BUF_IOVA + 0x10000, 8),
                    ==, VIOMMU_DMA_ST_READ_FAULT);
    sm_expect_pasid_fault(&t, VTD_FR_SM_PASID_ENTRY_SRE, PASID_FS, BUF_IOVA);
    g_assert_cmphex(sm_pasid_copy(&t, PASID_SS, 0, BUF_IOVA + 0x3000,
                                  BUF_IOVA + 0x10000, 8),
                    ==, VIOMMU_DMA_ST_READ_FAULT);
    sm_expect_pasid_fault(&t, VTD_FR_SM_SS_ENTRY_P, PASID_SS,
                          BUF_IOVA + 0x3000);
    /* the user request still works */
    g_assert_cmphex(sm_pasid_copy(&t, PASID_FS, 0, BUF_IOVA,
                                  BUF_IOVA + 0x10000, 8),
                    ==, VIOMMU_DMA_ST_OK);
    sm_stop(&t);
}

/*
 * viommu-dma's own checks of the PASID flags: without pasid=on they are
 * reserved; PASID 0 and PASIDs above VIOMMU_DMA_PASID_MAX cannot be
 * tagged; PRIV needs PASID.
 */
static void test_pasid_flags(void)
{
    Sm t;

    sm_start(&t, NULL);
    sm_rid_pasid(&t, VTD_PGTT_PT, 0, NULL);
    vtd_enable_translation(t.g);
    g_assert_cmphex(sm_pasid_copy(&t, 1, 0, t.src, t.dst, 8), ==,
                    VIOMMU_DMA_ST_BAD_FLAGS);
    sm_stop(&t);

    sm_start_pasid(&t, "");
    sm_rid_pasid(&t, VTD_PGTT_PT, 0, NULL);
    vtd_enable_translation(t.g);
    g_assert_cmphex(sm_pasid_copy(&t, 0, 0, t.src, t.dst, 8), ==,
                    VIOMMU_DMA_ST_BAD_PASID);
    g_assert_cmphex(sm_pasid_copy(&t, VIOMMU_DMA_PASID_MAX + 1, 0, t.src,
                                  t.dst, 8), ==, VIOMMU_DMA_ST_BAD_PASID);
    {
        VdmaDesc desc = { .op = VIOMMU_DMA_OP_COPY,
                          .flags = VIOMMU_DMA_FLAG_PRIV, .len = 8,
                          .src = t.src, .dst = t.dst };
        g_assert_cmphex(vdma_run(&t.e.dma[0], 0, &desc, NULL), ==,
                        VIOMMU_DMA_ST_BAD_FLAGS);
    }
    g_assert_cmpint(vtd_fault_count(t.g), ==, 0);
    sm_stop(&t);
}

/* ---------------------------------------------------------------------- */
#define SM_IQER             0xb0
#define SM_IQEI_RESERVED    4

/*
 * RTADDR.TTM must not change while translation is enabled (VT-d 11.4.5;
 * what happens is undefined): viommu-vtd keeps the mode it translates in,
 * so a scalable-mode table latched again "as legacy" still translates as
 * scalable-mode tables, and the mode changes once TE is clear.
 */
static void test_ttm_switch_while_enabled(void)
{
    Sm t;
    uint32_t res;
    VtdFault f;

    sm_start(&t, ",x-flts=on");
    sm_rid_pasid(&t, VTD_PGTT_FS, 0, NULL);
    vtd_enable_translation(t.g);
    sm_copy_check(&t, BUF_IOVA, BUF_IOVA + 0x10000, 0x19);

    vtd_writeq(t.g, VTD_RTADDR, t.g->root);
    g_assert_true(vtd_gcmd(t.g, VTD_GCMD_SRTP, true));
    g_assert_cmphex(vtd_readq(t.g, VTD_RTADDR), ==, t.g->root);
    vtd_qi_push(t.g, vtd_desc_cc(VTD_GRAN_GLOBAL, 0, 0, 0));
    vtd_qi_push(t.g, vtd_desc_iotlb(VTD_GRAN_GLOBAL, 0, 0, 0, false));
    g_assert_true(vtd_qi_sync(t.g));
    sm_copy_check(&t, BUF_IOVA, BUF_IOVA + 0x10000, 0x1a);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 0);

    /* with TE clear the switch takes effect: the scalable-mode context
     * entry read as a legacy one has translation type 0 and no
     * second-level table: the ring read faults */
    vtd_disable_translation(t.g);
    g_assert_true(vtd_gcmd(t.g, VTD_GCMD_SRTP, true));
    vtd_enable_translation(t.g);
    g_assert_cmphex(vdma_copy(&t.e.dma[0], BUF_IOVA, BUF_IOVA + 0x10000, 8,
                              &res), ==, VIOMMU_DMA_ST_PENDING);
    g_assert_true(vtd_fault_pop(t.g, &f));
    g_assert_cmphex(f.reason, <, 0x30);     /* a legacy-mode reason */
    g_assert_false(f.has_pasid);
    sm_stop(&t);
}

/*
 * Migration in the middle of scalable mode: first-stage RID_PASID, a
 * second-stage PASID entry, and a P_IOTLB descriptor with a reserved bit
 * pending as IQE (IQEI 4).  The destination reads the same TTM, DW and
 * IQER, goes on once the guest fixed the descriptor, and translates with
 * and without PASID.
 */
static void test_migration(void)
{
    Sm t;
    g_autofree VtdDomain *ss = NULL;
    uint64_t qw[8], top, pa, slot, regs[3];

    sm_start_pasid(&t, ",x-flts=on,second-stage=on");
    top = sm_fs_tables(&t, 0);
    vtd_sm_pe_first_stage(qw, DID, top);
    vtd_sm_set_pasid_entry(t.g, SID0, 0, qw);
    pa = sm_page(&t, 0x5e);
    ss = vtd_domain_new(t.g, DID + 2, 4);
    vtd_map(ss, BUF_IOVA, pa, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_map(ss, BUF_IOVA + 0x10000, t.dst, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_sm_pe_second_stage(qw, DID + 2, ss);
    vtd_sm_set_pasid_entry(t.g, SID0, PASID_SS, qw);
    sm_set_paside(&t, true);
    sm_flush_all(&t);
    vtd_enable_translation(t.g);
    sm_copy_check(&t, BUF_IOVA, BUF_IOVA + 0x10000, 0x4d);

    /* P_IOTLB with a reserved bit (qw0 bit 6): IQE, IQEI 4 */
    slot = t.g->iq + (uint64_t)t.g->iq_tail * 32;
    vtd_qi_push(t.g, (VtdDesc) {
        .lo = vtd_desc_piotlb(VTD_PIOTLB_PASID, DID, 0, 0, 0, false).lo |
              (1ULL << 6) });
    vtd_qi_kick(t.g);
    g_assert_true(vtd_readl(t.g, VTD_FSTS) & VTD_FSTS_IQE);
    g_assert_cmphex(vtd_readq(t.g, SM_IQER), ==, SM_IQEI_RESERVED);
    regs[0] = vtd_readq(t.g, VTD_RTADDR);
    regs[1] = vtd_readq(t.g, VTD_IQA);
    regs[2] = vtd_readq(t.g, VTD_IQH);

    vt_migrate(&t.e);

    g_assert_cmphex(vtd_readq(t.g, VTD_RTADDR), ==, regs[0]);
    g_assert_cmphex(vtd_readq(t.g, VTD_IQA), ==, regs[1]);
    g_assert_cmphex(vtd_readq(t.g, VTD_IQH), ==, regs[2]);
    g_assert_true(vtd_readl(t.g, VTD_FSTS) & VTD_FSTS_IQE);
    g_assert_cmphex(vtd_readq(t.g, SM_IQER), ==, SM_IQEI_RESERVED);
    /* the guest fixes the descriptor and clears IQE: the queue goes on */
    qtest_writeq(t.e.qts, slot,
                 vtd_desc_piotlb(VTD_PIOTLB_PASID, DID, 0, 0, 0, false).lo);
    vtd_writel(t.g, VTD_FSTS, VTD_FSTS_IQE);
    g_assert_cmphex(vtd_readq(t.g, SM_IQER), ==, 0);
    g_assert_true(vtd_qi_sync(t.g));
    sm_copy_check(&t, BUF_IOVA, BUF_IOVA + 0x10000, 0x4e);
    g_assert_cmphex(sm_pasid_copy(&t, PASID_SS, 0, BUF_IOVA,
                                  BUF_IOVA + 0x10000, 4096),
                    ==, VIOMMU_DMA_ST_OK);
    sm_check_dst(&t, 0x5e);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 0);
    sm_stop(&t);
}

/*
 * A request with PASID while RTADDR.TTM is legacy mode faults 31h; the
 * same copy without PASID goes through the legacy context.  A unit
 * without ECAP.PASID records no PASID.
 */
static void test_pasid_in_legacy_mode(void)
{
    VtEnv e;
    VtdGuest *g;
    uint64_t src, dst;
    uint32_t res;
    VtdFault f;
    VdmaDesc desc = { .op = VIOMMU_DMA_OP_COPY, .flags = VIOMMU_DMA_FLAG_PASID,
                      .len = 8, .src = BUF_IOVA, .dst = BUF_IOVA + 0x10000,
                      .pasid = PASID_FS };
    g_autofree VtdDomain *d = NULL;

    vt_start(&e, vt_iommu_name(), ",id=iommu0", 1, 256,
             "-global viommu-dma.pasid=on");
    g = &e.g;
    vtd_set_root_table(g);
    src = vtd_alloc(g, 4096, 4096);
    dst = vtd_alloc(g, 4096, 4096);
    d = vtd_domain_new(g, DID, 4);
    vt_map_rings(&e, d, 0);
    vtd_map(d, BUF_IOVA, src, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_map(d, BUF_IOVA + 0x10000, dst, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_attach(d, SID0);
    vtd_enable_translation(g);
    g_assert_cmphex(vdma_run(&e.dma[0], 0, &desc, &res), ==,
                    VIOMMU_DMA_ST_READ_FAULT);
    g_assert_true(vtd_fault_pop(g, &f));
    g_assert_cmphex(f.reason, ==, VTD_FR_SM_TTM0_PASID);
    g_assert_cmphex(f.sid, ==, SID0);
    g_assert_false(f.has_pasid);
    qtest_memset(e.qts, src, 0x3b, 4096);
    g_assert_cmphex(vdma_copy(&e.dma[0], BUF_IOVA, BUF_IOVA + 0x10000, 4096,
                              &res), ==, VIOMMU_DMA_ST_OK);
    g_assert_cmphex(qtest_readb(e.qts, dst + 4095), ==, 0x3b);
    g_assert_cmpint(vtd_fault_count(g), ==, 0);
    vt_stop(&e);
}

/*
 * PASID structures pointed into MMIO (the unit's own registers): the
 * PASID table of RID_PASID's directory entry (58h) and the context
 * entry's PASID directory (50h).  The unit reads guest RAM only; the DMA
 * (here the ring read) faults.
 */
static void test_pasid_tables_in_mmio(void)
{
    for (int c = 0; c < 2; c++) {
        Sm t;
        uint64_t dir, ce;
        unsigned devfn = SID0 & 0xff;
        uint32_t res;
        VtdFault f;

        sm_start(&t, NULL);
        sm_rid_pasid(&t, VTD_PGTT_SS, 0, NULL);
        vtd_enable_translation(t.g);
        sm_copy_check(&t, BUF_IOVA, BUF_IOVA + 0x10000, 0x2c);
        dir = (uint64_t)(uintptr_t)g_hash_table_lookup(t.g->sm_pasid_dir,
                                                       GUINT_TO_POINTER(SID0));
        ce = t.g->sm_ctx[SID0 >> 8][devfn >> 7] + (devfn & 0x7f) * 32;
        if (c == 0) {
            qtest_writeq(t.e.qts, dir, t.g->base | 1);
        } else {
            qtest_writeq(t.e.qts, ce, t.g->base | (2ULL << 9) | 1);
        }
        sm_flush_entry(&t, 0, false);
        g_assert_cmphex(vdma_copy(&t.e.dma[0], BUF_IOVA, BUF_IOVA + 0x10000,
                                  8, &res), ==, VIOMMU_DMA_ST_PENDING);
        g_assert_true(vtd_fault_pop(t.g, &f));
        g_assert_cmphex(f.reason, ==, c == 0 ? VTD_FR_SM_PASID_ENTRY_INV_ACCESS
                                             : VTD_FR_SM_PASID_DIR_INV);
        g_assert_cmphex(f.sid, ==, SID0);
        g_assert_false(f.has_pasid);
        sm_stop(&t);
    }
}

/* the trace of an address space's re-evaluation (viommu_vtd_as_refresh) */
static char *sm_refresh_line(uint16_t sid)
{
    return g_strdup_printf("viommu_vtd_as_refresh sid 0x%04x ", sid);
}

/*
 * A PASID-cache invalidation of one domain (DID A) re-evaluates the
 * address spaces of the devices whose RID_PASID entry is in that domain
 * and no other: device 0's entry in DID A changes from second-stage to
 * pass-through and device 1's, in DID B, stays second-stage; the
 * invalidations are the PASID-cache (PASID-selective within A) and IOTLB
 * (domain A) descriptors alone, no context-cache one.  Device 0 then
 * reaches guest-physical addresses and device 1 still translates.  On
 * viommu-vtd the trace shows the glue's side: after the invalidation
 * device 0's address space was re-evaluated and switched to bypass,
 * device 1's was not touched.
 */
static void test_pasid_cache_one_domain(void)
{
    Sm t;
    const uint16_t did_a = DID, did_b = DID + 1;
    g_autofree char *log = g_strdup_printf("%s/viommu-sm-pc-%d.log",
                                           g_get_tmp_dir(), getpid());
    g_autofree char *events = g_strdup_printf("%s/viommu-sm-pc-%d.events",
                                              g_get_tmp_dir(), getpid());
    g_autofree char *extra = g_strdup_printf("-trace events=%s,file=%s",
                                             events, log);
    g_autofree char *text = NULL;
    g_autofree char *marker = NULL;
    g_autofree char *refresh0 = sm_refresh_line(vt_sid(0));
    g_autofree char *refresh1 = sm_refresh_line(vt_sid(1));
    g_autofree char *switch0 = g_strdup_printf(
        "viommu_vtd_switch_as sid 0x%04x bypass 1", vt_sid(0));
    const char *after;

    g_assert_true(g_file_set_contents(events,
                                      "viommu_vtd_as_refresh\n"
                                      "viommu_vtd_pasid_cache_invalidated\n"
                                      "viommu_vtd_switch_as\n", -1, NULL));
    sm_start_extra(&t, NULL, 2, extra);
    sm_write_rid_pasid(&t, 0, VTD_PGTT_SS, did_a, 0, NULL);
    sm_write_rid_pasid(&t, 1, VTD_PGTT_SS, did_b, 0, NULL);
    sm_flush_all(&t);
    vtd_enable_translation(t.g);
    sm_dev_copy_check(&t, 0, BUF_IOVA, BUF_IOVA + 0x10000, 0x41);
    sm_dev_copy_check(&t, 1, BUF_IOVA, BUF_IOVA + 0x10000, 0x42);

    sm_write_rid_pasid(&t, 0, VTD_PGTT_PT, did_a, 0, NULL);
    vtd_qi_push(t.g, vtd_desc_pasid_cache(VTD_PC_PASID, did_a, 0));
    vtd_qi_push(t.g, vtd_desc_iotlb(VTD_GRAN_DOMAIN, did_a, 0, 0, false));
    g_assert_true(vtd_qi_sync(t.g));
    sm_dev_copy_check(&t, 0, t.src, t.dst, 0x43);
    sm_dev_copy_check(&t, 1, BUF_IOVA, BUF_IOVA + 0x10000, 0x44);
    g_assert_cmpint(vtd_fault_count(t.g), ==, 0);
    sm_stop(&t);

    g_assert_true(g_file_get_contents(log, &text, NULL, NULL));
    unlink(log);
    unlink(events);
    if (!vt_iommu_is("viommu-vtd")) {
        return;
    }
    /* the granularity is VTD_GRAN_SELECTIVE (3): PASID-selective */
    marker = g_strdup_printf("viommu_vtd_pasid_cache_invalidated "
                             "granularity 3 did %u pasid 0x0", did_a);
    after = g_strrstr(text, marker);
    g_assert_nonnull(after);
    g_assert_nonnull(strstr(after, refresh0));
    g_assert_nonnull(strstr(after, switch0));
    g_assert_null(strstr(after, refresh1));
    /* before it, the global invalidations re-evaluated both */
    g_assert_nonnull(strstr(text, refresh1));
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
    { "second-stage-snp", test_second_stage_snp },
    { "first-stage", test_first_stage },
    { "nested", test_nested, .vtd_only = true },
    { "pass-through", test_pass_through },
    { "pasid-not-present", test_pasid_not_present,
      .intel_deviation = "D6: a not-present PASID entry faults 5Bh, not 59h" },
    { "piotlb", test_piotlb },
    { "pasid-cache", test_pasid_cache },
    { "pasid-cache-one-domain", test_pasid_cache_one_domain },
    /* intel-iommu (QEMU 10.0) has no requests with PASID from PCI DMA */
    { "pasid-dma", test_pasid_dma, .vtd_only = true },
    { "pasid-behind-pass-through", test_pasid_behind_pass_through,
      .vtd_only = true },
    { "pasid-faults", test_pasid_faults, .vtd_only = true },
    { "pasid-supervisor", test_pasid_supervisor, .vtd_only = true },
    { "pasid-flags", test_pasid_flags },
    { "pasid-in-legacy-mode", test_pasid_in_legacy_mode, .vtd_only = true },
    { "pasid-tables-in-mmio", test_pasid_tables_in_mmio, .vtd_only = true },
    /* the specification leaves a TTM change while TES is set undefined */
    { "ttm-while-enabled", test_ttm_switch_while_enabled, .vtd_only = true },
    { "migration", test_migration, .vtd_only = true },
};

int main(int argc, char **argv)
{
    if (vt_test_init(&argc, &argv)) {
        for (int i = 0; i < ARRAY_SIZE(cases); i++) {
            vt_add_case("/viommu-sm", cases[i].path, cases[i].fn, NULL,
                        cases[i].intel_deviation, cases[i].vtd_only);
        }
    }
    return g_test_run();
}
