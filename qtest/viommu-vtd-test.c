/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Functional qtests for a VT-d compatible IOMMU, driven through viommu-dma.
 *
 * The IOMMU under test is $VIOMMU_TEST_IOMMU (default viommu-vtd); the
 * same checks run against QEMU's intel-iommu.  Where intel-iommu deviates
 * from the VT-d specification the check is run anyway and must FAIL on it
 * (a known deviation, see docs/intel-iommu-deviations.rst); checks that
 * would abort intel-iommu are not run against it.
 */
#include "qemu/osdep.h"
#include "qobject/qdict.h"
#include "viommu-test-env.h"

#define BUF_IOVA    0x100000000ULL      /* data IOVAs start at 4 GiB */

typedef struct Fx {
    VtEnv e;
    VtdDomain *dom;
    uint64_t src, dst;                  /* 4-page GPA buffers */
} Fx;

static uint8_t next_vector = 0x40;

/* machine with translation on: dev 0 in domain 1, rings mapped, QI on */
static void fx_start_opts(Fx *f, int ndma, int levels, bool qi,
                          uint64_t ram_mb, const char *iommu_opts)
{
    VtEnv *e = &f->e;

    vt_start(e, vt_iommu_name(), iommu_opts, ndma, ram_mb, NULL);
    vtd_set_root_table(&e->g);
    if (qi) {
        vtd_qi_enable(&e->g, 0);
    }
    f->dom = vtd_domain_new(&e->g, 1, levels);
    vt_map_rings(e, f->dom, 0);
    vtd_attach(f->dom, vt_sid(0));
    f->src = vtd_alloc(&e->g, 4 * 4096, 4096);
    f->dst = vtd_alloc(&e->g, 4 * 4096, 4096);
    vtd_flush_all(&e->g);
    vtd_enable_translation(&e->g);
}

static void fx_start(Fx *f, int ndma, int levels, bool qi, uint64_t ram_mb)
{
    fx_start_opts(f, ndma, levels, qi, ram_mb, NULL);
}

static void fx_stop(Fx *f)
{
    g_free(f->dom);
    vt_stop(&f->e);
}

static void fill_page(QTestState *qts, uint64_t gpa, uint8_t v)
{
    qtest_memset(qts, gpa, v, 4096);
}

/*
 * copy 8 bytes from iova to the identity-mapped dst; returns first byte
 * (the target is poisoned first: a copy that wrote nothing shows 0xee)
 */
static int probe(Fx *f, uint64_t iova)
{
    uint32_t res;
    uint32_t st;

    qtest_writeb(f->e.qts, f->dst + 3 * 4096, 0xee);
    st = vdma_copy(&f->e.dma[0], iova, BUF_IOVA + 0x100000, 8, &res);

    if (st != VIOMMU_DMA_ST_OK) {
        return -(int)st;
    }
    return qtest_readb(f->e.qts, f->dst + 3 * 4096);
}

static void map_probe_target(Fx *f)
{
    vtd_map(f->dom, BUF_IOVA + 0x100000, f->dst + 3 * 4096, 4096, VTD_PTE_RW,
            VTD_PAGE_4K);
}

/*
 * Move device 0 to a new domain with its rings, the probe target and one
 * page, iova -> gpa (the caller invalidates).
 */
static VtdDomain *move_to_new_domain(Fx *f, uint16_t did, int levels,
                                     uint64_t iova, uint64_t gpa)
{
    VtdDomain *d = vtd_domain_new(&f->e.g, did, levels);

    vt_map_rings(&f->e, d, 0);
    vtd_map(d, BUF_IOVA + 0x100000, f->dst + 3 * 4096, 4096, VTD_PTE_RW,
            VTD_PAGE_4K);
    vtd_map(d, iova, gpa, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_attach(d, vt_sid(0));
    return d;
}

/* ---------------------------------------------------------------------- */

static void test_reset_values(void)
{
    VtEnv e;
    VtdGuest *g;
    uint64_t cap, ecap;

    vt_start(&e, vt_iommu_name(), NULL, 0, 256, NULL);
    g = &e.g;
    cap = g->cap;
    ecap = g->ecap;
    g_assert_cmphex(vtd_readl(g, VTD_VER), !=, 0);
    g_assert_cmphex(vtd_readl(g, VTD_GSTS), ==, 0);
    g_assert_cmphex(vtd_readq(g, VTD_RTADDR), ==, 0);
    g_assert_cmphex(vtd_readl(g, VTD_FSTS), ==, 0);
    g_assert_cmphex(vtd_readl(g, VTD_FECTL), ==, VTD_CTL_IM);
    g_assert_cmphex(vtd_readl(g, VTD_IECTL), ==, VTD_CTL_IM);
    g_assert_cmphex(vtd_readq(g, VTD_IQH), ==, 0);
    g_assert_cmphex(vtd_readq(g, VTD_IQT), ==, 0);
    g_assert_cmphex(vtd_readq(g, VTD_IQA), ==, 0);
    g_assert_cmphex(vtd_readl(g, VTD_ICS), ==, 0);
    g_assert_cmphex(VTD_CAP_SAGAW(cap) & 6, !=, 0);
    g_assert_cmpuint(VTD_CAP_MGAW(cap), >=, 39);
    g_assert_true(ecap & VTD_ECAP_QI);
    g_assert_cmpuint(VTD_CAP_FRO(cap), >=, 0x100);
    for (int i = 0; i < VTD_CAP_NFR(cap); i++) {
        VtdFault fr;
        g_assert_false(vtd_fault_read(g, i, &fr));
    }

    /* read-only registers ignore writes */
    vtd_writeq(g, VTD_CAP, ~cap);
    vtd_writeq(g, VTD_ECAP, ~ecap);
    vtd_writel(g, VTD_GSTS, 0xffffffff);
    g_assert_cmphex(vtd_readq(g, VTD_CAP), ==, cap);
    g_assert_cmphex(vtd_readq(g, VTD_ECAP), ==, ecap);
    g_assert_cmphex(vtd_readl(g, VTD_GSTS), ==, 0);
    /* RW1C status bits cannot be set by software */
    vtd_writel(g, VTD_FSTS, 0xffffffff);
    g_assert_cmphex(vtd_readl(g, VTD_FSTS), ==, 0);
    vtd_writel(g, VTD_ICS, 0xffffffff);
    g_assert_cmphex(vtd_readl(g, VTD_ICS), ==, 0);
    /* RW registers hold their value */
    vtd_writel(g, VTD_FEDATA, 0x4321);
    g_assert_cmphex(vtd_readl(g, VTD_FEDATA) & 0xffff, ==, 0x4321);
    vtd_writeq(g, VTD_RTADDR, 0x123000);
    g_assert_cmphex(vtd_readq(g, VTD_RTADDR), ==, 0x123000);
    vt_stop(&e);
}

static void test_enable_sequence(void)
{
    VtEnv e;
    VtdGuest *g;
    VtdFault f;

    vt_start(&e, vt_iommu_name(), NULL, 1, 256, NULL);
    g = &e.g;
    vtd_set_root_table(g);
    g_assert_cmphex(vtd_readl(g, VTD_GSTS), ==, VTD_GCMD_SRTP);
    vtd_qi_enable(g, 0);
    g_assert_cmphex(vtd_readl(g, VTD_GSTS), ==, VTD_GCMD_SRTP | VTD_GCMD_QIE);
    g_assert_cmphex(vtd_readq(g, VTD_IQH), ==, 0);
    vtd_enable_translation(g);
    g_assert_cmphex(vtd_readl(g, VTD_GSTS), ==,
                    VTD_GCMD_SRTP | VTD_GCMD_QIE | VTD_GCMD_TE);
    /* no root entry: the ring fetch faults, the queue halts, nothing moved */
    g_assert_cmphex(vdma_fill(&e.dma[0], e.ring[0] + 8192, 8, 1, NULL), ==,
                    VIOMMU_DMA_ST_PENDING);
    g_assert_cmphex(vdma_reg_read(&e.dma[0], VIOMMU_DMA_Q_BASE(0) +
                                  VIOMMU_DMA_Q_STATUS), ==,
                    VIOMMU_DMA_QSTS_HALTED);
    g_assert_cmpuint(vdma_reg_read(&e.dma[0], VIOMMU_DMA_Q_BASE(0) +
                                   VIOMMU_DMA_Q_HEAD), ==, 0);
    g_assert_cmphex(qtest_readq(e.qts, e.ring[0] + 8192), ==, 0);
    g_assert_true(vtd_fault_pop(g, &f));
    g_assert_cmphex(f.reason, ==, VTD_FR_ROOT_NP);
    g_assert_cmphex(f.sid, ==, e.dma[0].sid);
    g_assert_false(vtd_fault_pop(g, &f));
    vtd_disable_translation(g);
    g_assert_cmphex(vtd_readl(g, VTD_GSTS) & VTD_GCMD_TE, ==, 0);
    g_assert_true(vtd_qi_sync(g));
    vtd_qi_disable(g);
    g_assert_cmphex(vtd_readl(g, VTD_GSTS), ==, VTD_GCMD_SRTP);
    vt_stop(&e);
}

static void do_map_dma(int levels)
{
    Fx f;
    uint8_t in[4 * 4096], out[4 * 4096];
    uint32_t res;
    /* iova pages map to the 4 source pages in reverse order */
    uint64_t siova = BUF_IOVA + 0x7000, diova = BUF_IOVA + 0x40000;

    fx_start(&f, 1, levels, true, 256);
    for (int i = 0; i < 4; i++) {
        vtd_map(f.dom, siova + i * 4096, f.src + (3 - i) * 4096, 4096,
                VTD_PTE_RW, VTD_PAGE_4K);
    }
    vtd_map(f.dom, diova, f.dst, 4 * 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_flush_all(&f.e.g);
    for (int i = 0; i < sizeof(in); i++) {
        in[i] = g_test_rand_int();
    }
    qtest_memwrite(f.e.qts, f.src, in, sizeof(in));
    g_assert_cmphex(vdma_copy(&f.e.dma[0], siova + 4000, diova + 77, 9000,
                              &res), ==, VIOMMU_DMA_ST_OK);
    qtest_memread(f.e.qts, f.dst, out, sizeof(out));
    for (int i = 0; i < 9000; i++) {
        uint64_t sv = 4000 + i;                 /* offset in iova space */
        uint64_t sg = (3 - sv / 4096) * 4096 + sv % 4096;
        g_assert_cmphex(out[77 + i], ==, in[sg]);
    }
    g_assert_cmphex(vdma_compare(&f.e.dma[0], siova + 4000, diova + 77, 9000,
                                 &res), ==, VIOMMU_DMA_ST_OK);
    g_assert_cmpuint(vtd_fault_count(&f.e.g), ==, 0);
    fx_stop(&f);
}

static void test_map_dma_4level(void)
{
    do_map_dma(4);
}

static void test_map_dma_3level(void)
{
    do_map_dma(3);
}

static void check_fault(VtdGuest *g, uint64_t addr, uint16_t sid,
                        uint8_t reason, bool is_read)
{
    VtdFault fr;

    g_test_message("expect fault reason %d at 0x%" PRIx64, reason, addr);
    g_assert_true(vtd_readl(g, VTD_FSTS) & VTD_FSTS_PPF);
    /* Software (Linux's dmar_fault) starts reading at FSTS.FRI. */
    g_assert_true(vtd_fault_read(g, VTD_FSTS_FRI(vtd_readl(g, VTD_FSTS)) %
                                 VTD_CAP_NFR(g->cap), &fr));
    g_assert_true(vtd_fault_pop(g, &fr));
    g_assert_cmphex(fr.reason, ==, reason);
    g_assert_cmphex(fr.addr, ==, addr & ~0xfffULL);
    g_assert_cmphex(fr.sid, ==, sid);
    g_assert_cmpint(fr.is_read, ==, is_read);
    g_assert_false(vtd_fault_pop(g, &fr));
    g_assert_false(vtd_readl(g, VTD_FSTS) & VTD_FSTS_PPF);
}

/*
 * aw-bits=57 (viommu-vtd only): CAP offers 3-, 4- and 5-level tables with a
 * 57-bit MGAW; a 5-level domain translates above 2^48 up to its last page,
 * faults at 2^57, and a 4-level context on the same unit stops at 2^48.
 */
static void test_map_dma_5level(void)
{
    Fx f;
    VtdGuest *g;
    VtdDomain *d4;
    uint64_t top = (1ULL << 57) - 4096, mid = 0x123456789a000ULL;

    fx_start_opts(&f, 1, 5, true, 256, ",aw-bits=57");
    g = &f.e.g;
    g_assert_cmphex(VTD_CAP_SAGAW(g->cap), ==, 0xe);
    g_assert_cmpint(VTD_CAP_MGAW(g->cap), ==, 57);
    map_probe_target(&f);
    vtd_map(f.dom, top, f.src, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_map(f.dom, mid, f.src + 4096, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    fill_page(f.e.qts, f.src, 0x57);
    fill_page(f.e.qts, f.src + 4096, 0x48);
    vtd_flush_all(g);
    g_assert_cmpint(probe(&f, top + 0xff8), ==, 0x57);
    g_assert_cmpint(probe(&f, mid), ==, 0x48);
    g_assert_cmpint(probe(&f, 1ULL << 57), ==, -VIOMMU_DMA_ST_READ_FAULT);
    check_fault(g, 1ULL << 57, vt_sid(0), VTD_FR_BEYOND_MGAW, true);

    /* the same device in a 4-level domain: nothing above 2^48 */
    d4 = move_to_new_domain(&f, 2, 4, BUF_IOVA, f.src + 4096);
    vtd_flush_all(g);
    g_assert_cmpint(probe(&f, BUF_IOVA), ==, 0x48);
    g_assert_cmpint(probe(&f, mid), ==, -VIOMMU_DMA_ST_READ_FAULT);
    check_fault(g, mid, vt_sid(0), VTD_FR_BEYOND_MGAW, true);
    g_assert_cmpuint(vtd_fault_count(g), ==, 0);
    g_free(d4);
    fx_stop(&f);
}

static void test_fault_reasons(void)
{
    Fx f;
    VtdGuest *g;
    uint32_t res;
    uint8_t vec = next_vector++;
    uint64_t ro = BUF_IOVA + 0x200000;

    fx_start(&f, 2, 4, true, 256);
    g = &f.e.g;
    vtd_fault_irq_setup(g, vec);
    map_probe_target(&f);
    vtd_map(f.dom, ro, f.src, 4096, VTD_PTE_R, VTD_PAGE_4K);
    vtd_map(f.dom, ro + 4096, f.src + 4096, 4096, 0, VTD_PAGE_4K);
    vtd_flush_all(g);

    /* unmapped read: reason 6, read, interrupt */
    g_assert_false(vtd_lapic_irr(f.e.qts, vec));
    g_assert_cmpint(probe(&f, BUF_IOVA + 0x5123), ==,
                    -VIOMMU_DMA_ST_READ_FAULT);
    g_assert_true(vtd_lapic_irr(f.e.qts, vec));
    check_fault(g, BUF_IOVA + 0x5000, vt_sid(0), VTD_FR_READ, true);

    /* write to a read-only page: reason 5, write */
    g_assert_cmphex(vdma_fill(&f.e.dma[0], ro + 16, 8, 0, &res), ==,
                    VIOMMU_DMA_ST_WRITE_FAULT);
    check_fault(g, ro, vt_sid(0), VTD_FR_WRITE, false);

    /* present in the tables but R=W=0: not present */
    g_assert_cmpint(probe(&f, ro + 4096), ==, -VIOMMU_DMA_ST_READ_FAULT);
    check_fault(g, ro + 4096, vt_sid(0), VTD_FR_READ, true);

    /* beyond the 4-level width */
    g_assert_cmpint(probe(&f, 1ULL << 50), ==, -VIOMMU_DMA_ST_READ_FAULT);
    check_fault(g, 1ULL << 50, vt_sid(0), VTD_FR_BEYOND_MGAW, true);

    /* device 1 has no context entry: its ring fetch faults */
    vdma_reg_write(&f.e.dma[1], VIOMMU_DMA_Q_BASE(0) + VIOMMU_DMA_Q_TAIL, 1);
    g_assert_cmphex(vdma_wait(&f.e.dma[1], 0, 0, NULL), ==,
                    VIOMMU_DMA_ST_PENDING);
    check_fault(g, f.e.ring[1], vt_sid(1), VTD_FR_CTX_NP, true);
    g_assert_cmpuint(vtd_fault_count(g), ==, 0);
    fx_stop(&f);
}

/*
 * A write to a read-only page must be recorded with reason 5 even when a
 * read has just put the page's translation in the IOTLB.
 */
static void test_fault_write_cached_ro(void)
{
    Fx f;
    uint64_t ro = BUF_IOVA + 0x200000;
    uint32_t res;

    fx_start(&f, 1, 4, true, 256);
    map_probe_target(&f);
    vtd_map(f.dom, ro, f.src, 4096, VTD_PTE_R, VTD_PAGE_4K);
    vtd_flush_all(&f.e.g);
    g_assert_cmpint(probe(&f, ro), ==, 0);
    g_assert_cmphex(vdma_copy(&f.e.dma[0], ro, ro + 16, 8, &res), ==,
                    VIOMMU_DMA_ST_WRITE_FAULT);
    vt_assert_deviation("D1", vtd_fault_count(&f.e.g) == 1);
    check_fault(&f.e.g, ro, vt_sid(0), VTD_FR_WRITE, false);
    fx_stop(&f);
}

static void test_fault_width_3level(void)
{
    Fx f;

    fx_start(&f, 1, 3, true, 256);
    map_probe_target(&f);
    vtd_flush_all(&f.e.g);
    g_assert_cmpint(probe(&f, 1ULL << 40), ==, -VIOMMU_DMA_ST_READ_FAULT);
    check_fault(&f.e.g, 1ULL << 40, vt_sid(0), VTD_FR_BEYOND_MGAW, true);
    fx_stop(&f);
}

static void test_fault_overflow(void)
{
    VtEnv e;
    VtdGuest *g;
    uint64_t cap;
    int nfr, n, first = -1;
    VtdFault fr;

    vt_start(&e, vt_iommu_name(), NULL, 0, 256, NULL);
    cap = e.g.cap;
    vt_stop(&e);
    nfr = VTD_CAP_NFR(cap);
    if (nfr + 1 > VT_MAX_DMA) {
        g_test_skip("more fault records than test devices");
        return;
    }
    n = nfr + 1;
    /* one fault per source id: no context entries at all */
    vt_start(&e, vt_iommu_name(), NULL, n, 256, NULL);
    g = &e.g;
    vtd_set_root_table(g);
    vtd_enable_translation(g);
    for (int i = 0; i < n; i++) {
        vdma_reg_write(&e.dma[i], VIOMMU_DMA_Q_BASE(0) + VIOMMU_DMA_Q_TAIL, 1);
        g_assert_cmphex(vdma_wait(&e.dma[i], 0, 0, NULL), ==,
                        VIOMMU_DMA_ST_PENDING);
    }
    g_assert_cmpint(vtd_fault_count(g), ==, nfr);
    g_assert_true(vtd_readl(g, VTD_FSTS) & VTD_FSTS_PFO);
    g_assert_true(vtd_readl(g, VTD_FSTS) & VTD_FSTS_PPF);
    /* the records kept are the first nfr faults: the last one was dropped */
    for (int i = 0; i < nfr; i++) {
        g_assert_true(vtd_fault_read(g, i, &fr));
        g_assert_cmphex(fr.sid, !=, vt_sid(nfr));
        g_assert_cmphex(fr.reason, ==, VTD_FR_ROOT_NP);
        if (fr.sid == vt_sid(0)) {
            first = i;
        }
    }
    /*
     * A free record is not enough: while PFO is set, faults are dropped
     * (device 0's own record freed, so its new fault could not collapse
     * into it).
     */
    g_assert_cmpint(first, >=, 0);
    vtd_fault_clear(g, first);
    vdma_reg_write(&e.dma[0], VIOMMU_DMA_Q_BASE(0) + VIOMMU_DMA_Q_STATUS,
                   VIOMMU_DMA_QSTS_HALTED);
    g_assert_cmphex(vdma_wait(&e.dma[0], 0, 0, NULL), ==,
                    VIOMMU_DMA_ST_PENDING);
    g_assert_cmpint(vtd_fault_count(g), ==, nfr - 1);
    /* clear records and PFO: logging resumes */
    vtd_fault_clear_all(g);
    g_assert_cmphex(vtd_readl(g, VTD_FSTS) & (VTD_FSTS_PFO | VTD_FSTS_PPF),
                    ==, 0);
    vdma_reg_write(&e.dma[0], VIOMMU_DMA_Q_BASE(0) + VIOMMU_DMA_Q_STATUS,
                   VIOMMU_DMA_QSTS_HALTED);
    g_assert_cmphex(vdma_wait(&e.dma[0], 0, 0, NULL), ==,
                    VIOMMU_DMA_ST_PENDING);
    g_assert_true(vtd_fault_pop(g, &fr));
    g_assert_cmphex(fr.sid, ==, vt_sid(0));
    g_assert_cmphex(fr.reason, ==, VTD_FR_ROOT_NP);
    vt_stop(&e);
}

/*
 * One failing DMA access is one request: the VT-d specification logs a
 * primary fault per faulting request (hardware may also collapse further
 * faults from a source-id whose record is pending, FRCD.F).  So a single
 * failing access must leave exactly one record and no overflow, whatever
 * its length, whichever IOMMU.  viommu-dma's FAULTS counter shows the
 * device issued exactly one failing access per descriptor.
 */
static void expect_one_record(Fx *f, uint64_t addr, uint8_t reason,
                              bool is_read, uint64_t dev_faults)
{
    VtdGuest *g = &f->e.g;
    VtdFault fr;
    int n = vtd_fault_count(g);

    g_assert_cmpuint(vdma_counter(&f->e.dma[0], VIOMMU_DMA_REG_FAULTS), ==,
                     dev_faults);
    g_test_message("access at 0x%" PRIx64 ": %d fault record(s), FSTS 0x%x",
                   addr, n, vtd_readl(g, VTD_FSTS));
    g_assert_cmpint(n, ==, 1);
    g_assert_false(vtd_readl(g, VTD_FSTS) & VTD_FSTS_PFO);
    g_assert_true(vtd_fault_pop(g, &fr));
    g_assert_cmphex(fr.reason, ==, reason);
    g_assert_cmphex(fr.addr, ==, addr & ~0xfffULL);
    g_assert_cmphex(fr.sid, ==, vt_sid(0));
    g_assert_cmpint(fr.is_read, ==, is_read);
    g_assert_cmphex(vtd_readl(g, VTD_FSTS) & (VTD_FSTS_PPF | VTD_FSTS_PFO),
                    ==, 0);
}

static void test_fault_one_record(void)
{
    Fx f;
    uint32_t res;
    uint64_t ro = BUF_IOVA + 0x200000, hole = BUF_IOVA + 0x300000;

    fx_start(&f, 1, 4, true, 256);
    map_probe_target(&f);
    vtd_map(f.dom, ro, f.src, 4096, VTD_PTE_R, VTD_PAGE_4K);
    vtd_flush_all(&f.e.g);

    /* 8-byte read of an unmapped page */
    g_assert_cmpint(probe(&f, hole + 0x10), ==, -VIOMMU_DMA_ST_READ_FAULT);
    expect_one_record(&f, hole, VTD_FR_READ, true, 1);
    /* 4 KiB read: one chunk, one access */
    g_assert_cmphex(vdma_copy(&f.e.dma[0], hole + 0x1000, ro, 4096, &res),
                    ==, VIOMMU_DMA_ST_READ_FAULT);
    g_assert_cmpuint(res, ==, 0);
    expect_one_record(&f, hole + 0x1000, VTD_FR_READ, true, 2);
    /* unaligned read that would cross into a second unmapped page */
    g_assert_cmphex(vdma_copy(&f.e.dma[0], hole + 0x2ffd, ro, 64, &res),
                    ==, VIOMMU_DMA_ST_READ_FAULT);
    expect_one_record(&f, hole + 0x2000, VTD_FR_READ, true, 3);
    /* 4 KiB write to an unmapped page */
    g_assert_cmphex(vdma_fill(&f.e.dma[0], hole + 0x4000, 4096, 1, &res),
                    ==, VIOMMU_DMA_ST_WRITE_FAULT);
    expect_one_record(&f, hole + 0x4000, VTD_FR_WRITE, false, 4);
    /* 4 KiB write to a read-only page (not cached) */
    g_assert_cmphex(vdma_fill(&f.e.dma[0], ro, 4096, 1, &res),
                    ==, VIOMMU_DMA_ST_WRITE_FAULT);
    expect_one_record(&f, ro, VTD_FR_WRITE, false, 5);
    /* the same access again after the record was cleared: logged again */
    g_assert_cmpint(probe(&f, hole + 0x10), ==, -VIOMMU_DMA_ST_READ_FAULT);
    expect_one_record(&f, hole, VTD_FR_READ, true, 6);
    fx_stop(&f);
}

/* IOTLB semantics ------------------------------------------------------- */

enum { INV_GLOBAL, INV_DOMAIN, INV_PAGE, INV_PAGE_AM, INV_CONTEXT };

static void do_iotlb(int kind, bool qi)
{
    Fx f;
    VtdGuest *g;
    uint64_t iova = BUF_IOVA + 0x80000 + 2 * 4096;  /* 3rd page of 16K */
    VtdDomain *d2 = NULL;

    fx_start(&f, 1, 4, qi, 256);
    g = &f.e.g;
    map_probe_target(&f);
    fill_page(f.e.qts, f.src, 0xaa);
    fill_page(f.e.qts, f.src + 4096, 0xbb);
    vtd_map(f.dom, iova, f.src, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_flush_all(g);
    g_assert_cmpint(probe(&f, iova), ==, 0xaa);     /* cached now */

    if (kind == INV_CONTEXT) {
        /* move the device to domain 2 where iova maps to the other page */
        d2 = move_to_new_domain(&f, 2, 4, iova, f.src + 4096);
    } else {
        vtd_set_leaf(f.dom, iova, (f.src + 4096) | VTD_PTE_RW);
    }
    /* (a stale translation may be used here; not asserted) */

    switch (kind) {
    case INV_GLOBAL:
        if (qi) {
            vtd_qi_push(g, vtd_desc_iotlb(VTD_GRAN_GLOBAL, 0, 0, 0, false));
            g_assert_true(vtd_qi_sync(g));
        } else {
            g_assert_true(vtd_reg_iotlb(g, VTD_GRAN_GLOBAL, 0, 0, 0));
        }
        break;
    case INV_DOMAIN:
        vtd_flush_domain(g, 1);
        break;
    case INV_PAGE:
        vtd_flush_page(g, 1, iova, 0);
        break;
    case INV_PAGE_AM:
        vtd_flush_page(g, 1, iova & ~0x3fffULL, 2);
        break;
    case INV_CONTEXT:
        if (qi) {
            vtd_qi_push(g, vtd_desc_cc(VTD_GRAN_DEVICE, 1, vt_sid(0), 0));
            vtd_qi_push(g, vtd_desc_iotlb(VTD_GRAN_DOMAIN, 1, 0, 0, false));
            g_assert_true(vtd_qi_sync(g));
        } else {
            g_assert_true(vtd_reg_cc(g, VTD_GRAN_DEVICE, 1, vt_sid(0), 0));
            g_assert_true(vtd_reg_iotlb(g, VTD_GRAN_DOMAIN, 1, 0, 0));
        }
        break;
    }
    /* after the invalidation completed, never the old translation */
    for (int i = 0; i < 3; i++) {
        g_assert_cmpint(probe(&f, iova), ==, 0xbb);
    }
    g_assert_cmpuint(vtd_fault_count(g), ==, 0);
    g_free(d2);
    fx_stop(&f);
}

static void test_iotlb_global(void) { do_iotlb(INV_GLOBAL, true); }
static void test_iotlb_domain(void) { do_iotlb(INV_DOMAIN, true); }
static void test_iotlb_page(void) { do_iotlb(INV_PAGE, true); }
static void test_iotlb_page_am(void) { do_iotlb(INV_PAGE_AM, true); }
static void test_context_cache(void) { do_iotlb(INV_CONTEXT, true); }
static void test_reg_global(void) { do_iotlb(INV_GLOBAL, false); }
static void test_reg_domain(void) { do_iotlb(INV_DOMAIN, false); }
static void test_reg_page(void) { do_iotlb(INV_PAGE, false); }
static void test_reg_context(void) { do_iotlb(INV_CONTEXT, false); }

/* Invalidation queue ---------------------------------------------------- */

static void test_wait_status(void)
{
    Fx f;
    VtdGuest *g;
    uint64_t st;

    fx_start(&f, 1, 4, true, 256);
    g = &f.e.g;
    st = vtd_alloc(g, 64, 64);
    qtest_writel(f.e.qts, st, 0);
    qtest_writel(f.e.qts, st + 4, 0x5a5a5a5a);
    vtd_qi_push(g, vtd_desc_wait(true, false, false, 0xcafe, st));
    vtd_qi_kick(g);
    g_assert_cmphex(qtest_readl(f.e.qts, st), ==, 0xcafe);
    g_assert_cmphex(qtest_readl(f.e.qts, st + 4), ==, 0x5a5a5a5a);
    g_assert_cmphex(vtd_readq(g, VTD_IQH), ==, vtd_readq(g, VTD_IQT));
    /* status write alone raises no completion */
    g_assert_cmphex(vtd_readl(g, VTD_ICS), ==, 0);
    fx_stop(&f);
}

static void test_wait_irq(void)
{
    Fx f;
    VtdGuest *g;
    uint8_t vec = next_vector++;

    fx_start(&f, 1, 4, true, 256);
    g = &f.e.g;
    vtd_inv_irq_setup(g, vec);
    vtd_qi_push(g, vtd_desc_wait(false, true, false, 0, 0));
    vtd_qi_kick(g);
    g_assert_cmphex(vtd_readl(g, VTD_ICS) & VTD_ICS_IWC, ==, VTD_ICS_IWC);
    g_assert_true(vtd_lapic_irr(f.e.qts, vec));
    vtd_writel(g, VTD_ICS, VTD_ICS_IWC);
    g_assert_cmphex(vtd_readl(g, VTD_ICS), ==, 0);

    /* masked: IP is set, the interrupt comes on unmask */
    vec = next_vector++;
    vtd_writel(g, VTD_IEDATA, vec);
    vtd_writel(g, VTD_IECTL, VTD_CTL_IM);
    vtd_qi_push(g, vtd_desc_wait(false, true, false, 0, 0));
    vtd_qi_kick(g);
    g_assert_cmphex(vtd_readl(g, VTD_IECTL), ==, VTD_CTL_IM | VTD_CTL_IP);
    g_assert_false(vtd_lapic_irr(f.e.qts, vec));
    vtd_writel(g, VTD_IECTL, 0);
    g_assert_true(vtd_lapic_irr(f.e.qts, vec));
    g_assert_cmphex(vtd_readl(g, VTD_IECTL), ==, 0);
    fx_stop(&f);
}

static void test_wait_status_and_irq(void)
{
    Fx f;
    VtdGuest *g;
    uint8_t vec = next_vector++;
    uint64_t st;

    fx_start(&f, 1, 4, true, 256);
    g = &f.e.g;
    st = vtd_alloc(g, 64, 64);
    vtd_inv_irq_setup(g, vec);
    vtd_qi_push(g, vtd_desc_wait(true, true, false, 0x77, st));
    vtd_qi_kick(g);
    g_assert_cmphex(qtest_readl(f.e.qts, st), ==, 0x77);
    g_assert_cmphex(vtd_readl(g, VTD_ICS) & VTD_ICS_IWC, ==, VTD_ICS_IWC);
    g_assert_true(vtd_lapic_irr(f.e.qts, vec));
    fx_stop(&f);
}

static void test_wait_fence(void)
{
    Fx f;
    VtdGuest *g;
    uint64_t st;
    uint64_t iova = BUF_IOVA + 0x300000;

    fx_start(&f, 1, 4, true, 256);
    g = &f.e.g;
    st = vtd_alloc(g, 64, 64);
    map_probe_target(&f);
    fill_page(f.e.qts, f.src, 0x11);
    fill_page(f.e.qts, f.src + 4096, 0x22);
    vtd_map(f.dom, iova, f.src, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_flush_all(g);
    g_assert_cmpint(probe(&f, iova), ==, 0x11);
    vtd_set_leaf(f.dom, iova, (f.src + 4096) | VTD_PTE_RW);
    /* invalidate, fenced wait, second wait: both status writes land */
    vtd_qi_push(g, vtd_desc_iotlb(VTD_GRAN_PAGE, 1, iova, 0, false));
    vtd_qi_push(g, vtd_desc_wait(true, false, true, 1, st));
    vtd_qi_push(g, vtd_desc_wait(true, false, false, 2, st + 4));
    vtd_qi_kick(g);
    g_assert_cmphex(qtest_readl(f.e.qts, st), ==, 1);
    g_assert_cmphex(qtest_readl(f.e.qts, st + 4), ==, 2);
    g_assert_cmpint(probe(&f, iova), ==, 0x22);
    fx_stop(&f);
}

static void test_invalid_descriptor(void)
{
    Fx f;
    VtdGuest *g;
    uint64_t st;
    uint32_t bad;

    fx_start(&f, 1, 4, true, 256);
    g = &f.e.g;
    st = vtd_alloc(g, 64, 64);
    vtd_qi_push(g, vtd_desc_wait(true, false, false, 1, st));
    bad = g->iq_tail;
    vtd_qi_push(g, (VtdDesc) { .lo = 0xf, .hi = 0 });   /* no such type */
    vtd_qi_push(g, vtd_desc_wait(true, false, false, 2, st + 4));
    vtd_qi_kick(g);
    g_assert_cmphex(vtd_readl(g, VTD_FSTS) & VTD_FSTS_IQE, ==, VTD_FSTS_IQE);
    g_assert_cmphex(vtd_readq(g, VTD_IQH) >> 4, ==, bad);
    g_assert_cmphex(qtest_readl(f.e.qts, st), ==, 1);
    g_assert_cmphex(qtest_readl(f.e.qts, st + 4), ==, 0);
    /* fix the descriptor, clear IQE: the queue resumes at IQH */
    qtest_writeq(f.e.qts, g->iq + bad * 16,
                 vtd_desc_iotlb(VTD_GRAN_GLOBAL, 0, 0, 0, false).lo);
    vtd_writel(g, VTD_FSTS, VTD_FSTS_IQE);
    vtd_qi_kick(g);
    g_assert_cmphex(qtest_readl(f.e.qts, st + 4), ==, 2);
    g_assert_cmphex(vtd_readl(g, VTD_FSTS) & VTD_FSTS_IQE, ==, 0);
    g_assert_true(vtd_qi_sync(g));
    fx_stop(&f);
}

/*
 * device-iotlb=on: ECAP.DT, a context with translation type 1 (device-TLBs
 * enabled) translates, device-IOTLB invalidate descriptors (one page, a
 * size-encoded range, everything) complete in order with the wait after
 * them, and one with a reserved bit set raises IQE with IQH at it.
 */
static void test_device_iotlb(void)
{
    VtEnv e;
    VtdGuest *g;
    VtdDomain *dom;
    uint64_t src, dst, st, sid = vt_sid(0);
    uint8_t in[64], out[64];
    uint32_t bad, res;
    const uint64_t dt_lo = 3 | sid << 32;

    vt_start(&e, vt_iommu_name(), ",device-iotlb=on", 1, 256, NULL);
    g = &e.g;
    g_assert_true(vtd_readq(g, VTD_ECAP) & VTD_ECAP_DT);
    vtd_set_root_table(g);
    vtd_qi_enable(g, 0);
    dom = vtd_domain_new(g, 1, 4);
    vt_map_rings(&e, dom, 0);
    vtd_set_context_raw(g, sid, dom->pgd | VTD_CTX_TT_DEVTLB | VTD_CTX_P,
                        VTD_CTX_DID(1) | VTD_CTX_AW(4));
    src = vtd_alloc(g, 4096, 4096);
    dst = vtd_alloc(g, 4096, 4096);
    vtd_map(dom, 0x40000000, src, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_map(dom, 0x40001000, dst, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_flush_all(g);
    vtd_enable_translation(g);
    for (int i = 0; i < sizeof(in); i++) {
        in[i] = g_test_rand_int();
    }
    qtest_memwrite(e.qts, src, in, sizeof(in));
    g_assert_cmphex(vdma_copy(&e.dma[0], 0x40000000, 0x40001000, sizeof(in),
                              &res), ==, VIOMMU_DMA_ST_OK);
    qtest_memread(e.qts, dst, out, sizeof(out));
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));

    st = vtd_alloc(g, 64, 64);
    vtd_qi_push(g, (VtdDesc) { .lo = dt_lo, .hi = 0x40000000 });
    vtd_qi_push(g, (VtdDesc) { .lo = dt_lo, .hi = 0x40000000 | 1 });
    vtd_qi_push(g, (VtdDesc) { .lo = dt_lo, .hi = 0x7ffffffffffff000ULL | 1 });
    vtd_qi_push(g, vtd_desc_wait(true, false, false, 1, st));
    bad = g->iq_tail;
    vtd_qi_push(g, (VtdDesc) { .lo = dt_lo, .hi = 0x40000000 | (1 << 11) });
    vtd_qi_push(g, vtd_desc_wait(true, false, false, 2, st + 4));
    vtd_qi_kick(g);
    g_assert_cmphex(qtest_readl(e.qts, st), ==, 1);
    g_assert_cmphex(vtd_readl(g, VTD_FSTS) & VTD_FSTS_IQE, ==, VTD_FSTS_IQE);
    g_assert_cmphex(vtd_readq(g, VTD_IQH) >> 4, ==, bad);
    g_assert_cmphex(qtest_readl(e.qts, st + 4), ==, 0);
    /* fix it, clear IQE: the queue resumes at IQH */
    qtest_writeq(e.qts, g->iq + bad * 16 + 8, 0x40000000);
    vtd_writel(g, VTD_FSTS, VTD_FSTS_IQE);
    vtd_qi_kick(g);
    g_assert_cmphex(qtest_readl(e.qts, st + 4), ==, 2);
    g_assert_cmphex(vtd_readl(g, VTD_FSTS) & VTD_FSTS_IQE, ==, 0);
    g_free(dom);
    vt_stop(&e);
}

/* A wait descriptor with neither SW nor IF is a valid (no-op) descriptor */
static void test_wait_plain(void)
{
    Fx f;
    VtdGuest *g;

    fx_start(&f, 1, 4, true, 256);
    g = &f.e.g;
    vtd_qi_push(g, vtd_desc_wait(false, false, false, 0, 0));
    vtd_qi_push(g, vtd_desc_wait(false, false, true, 0, 0));
    vt_assert_deviation("D2", vtd_qi_sync(g));
    g_assert_cmphex(vtd_readl(g, VTD_FSTS), ==, 0);
    fx_stop(&f);
}

static void test_queue_wrap(void)
{
    Fx f;
    VtdGuest *g;
    uint64_t st;

    fx_start(&f, 1, 4, true, 256);
    g = &f.e.g;
    st = vtd_alloc(g, 4096, 4096);
    /* 256-entry queue: 700 descriptors in batches of 100 wrap twice */
    for (int b = 0; b < 7; b++) {
        for (int i = 0; i < 99; i++) {
            vtd_qi_push(g, vtd_desc_iotlb(VTD_GRAN_DOMAIN, 1, 0, 0, false));
        }
        vtd_qi_push(g, vtd_desc_wait(true, false, false, b + 1, st + 4 * b));
        vtd_qi_kick(g);
        g_assert_cmphex(qtest_readl(f.e.qts, st + 4 * b), ==, b + 1);
    }
    g_assert_cmphex(vtd_readq(g, VTD_IQH) >> 4, ==, g->iq_tail);
    g_assert_cmphex(vtd_readl(g, VTD_FSTS), ==, 0);
    fx_stop(&f);
}

/* Contexts, page sizes, domains ----------------------------------------- */

static void test_passthrough(void)
{
    Fx f;
    uint32_t res;

    fx_start(&f, 2, 4, true, 256);
    if (!(f.e.g.ecap & VTD_ECAP_PT)) {
        fx_stop(&f);
        g_test_skip("no pass-through support");
        return;
    }
    vtd_attach_passthrough(&f.e.g, vt_sid(1), 9);
    vtd_flush_all(&f.e.g);
    fill_page(f.e.qts, f.src, 0x3c);
    g_assert_cmphex(vdma_copy(&f.e.dma[1], f.src + 5, f.dst + 9, 100, &res),
                    ==, VIOMMU_DMA_ST_OK);
    g_assert_cmphex(qtest_readb(f.e.qts, f.dst + 9), ==, 0x3c);
    g_assert_cmphex(qtest_readb(f.e.qts, f.dst + 108), ==, 0x3c);
    /* the translated device still cannot reach that memory */
    g_assert_cmphex(vdma_copy(&f.e.dma[0], f.src, f.dst, 8, &res), ==,
                    VIOMMU_DMA_ST_READ_FAULT);
    fx_stop(&f);
}

static void do_superpage(uint64_t size)
{
    Fx f;
    uint64_t iova = size == VTD_PAGE_1G ? 0x40000000ULL * 7 : BUF_IOVA +
                    0x600000;
    uint64_t gpa, off;
    uint32_t res;

    fx_start(&f, 1, 4, true, 512);
    if (!(VTD_CAP_SLLPS(f.e.g.cap) & (size == VTD_PAGE_1G ? 2 : 1))) {
        fx_stop(&f);
        g_test_skip("page size not supported");
        return;
    }
    map_probe_target(&f);
    /* 1 GiB: map the first GiB of RAM; 2 MiB: a fresh aligned chunk */
    gpa = size == VTD_PAGE_1G ? 0 : vtd_alloc(&f.e.g, size, size);
    vtd_map(f.dom, iova, gpa, size, VTD_PTE_RW, size);
    vtd_flush_all(&f.e.g);
    off = (size == VTD_PAGE_1G ? f.src : gpa + 0x1ff000) - gpa;
    fill_page(f.e.qts, gpa + off, 0x5e);
    g_assert_cmpint(probe(&f, iova + off + 17), ==, 0x5e);
    /* write through the superpage, across two 4K frames inside it */
    g_assert_cmphex(vdma_fill(&f.e.dma[0], iova + off - 4, 8, 0x9999999999999999ULL,
                              &res), ==, VIOMMU_DMA_ST_OK);
    g_assert_cmphex(qtest_readl(f.e.qts, gpa + off - 4), ==, 0x99999999);
    g_assert_cmphex(qtest_readl(f.e.qts, gpa + off), ==, 0x99999999);
    /* just past the superpage is unmapped */
    g_assert_cmpint(probe(&f, iova + size), ==, -VIOMMU_DMA_ST_READ_FAULT);
    check_fault(&f.e.g, iova + size, vt_sid(0), VTD_FR_READ, true);
    /* page-selective invalidation of an address inside drops the page */
    vtd_unmap(f.dom, iova, size);
    vtd_flush_page(&f.e.g, 1, iova + off, 0);
    g_assert_cmpint(probe(&f, iova + off), ==, -VIOMMU_DMA_ST_READ_FAULT);
    fx_stop(&f);
}

static void test_superpage_2m(void) { do_superpage(VTD_PAGE_2M); }
static void test_superpage_1g(void) { do_superpage(VTD_PAGE_1G); }

static void test_multi_domain(void)
{
    Fx f;
    VtdGuest *g;
    VtdDomain *d2;
    uint64_t iova = BUF_IOVA + 0x10000, buf2;
    uint32_t res;

    fx_start(&f, 3, 4, true, 256);
    g = &f.e.g;
    d2 = vtd_domain_new(g, 2, 3);
    buf2 = vtd_alloc(g, 2 * 4096, 4096);
    /* dev 1 and 2 share domain 2; same IOVA, different memory */
    vt_map_rings(&f.e, f.dom, 0);
    vt_map_rings(&f.e, d2, 1);
    vt_map_rings(&f.e, d2, 2);
    vtd_map(f.dom, iova, f.src, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_map(d2, iova, buf2, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_attach(d2, vt_sid(1));
    vtd_attach(d2, vt_sid(2));
    vtd_flush_all(g);
    g_assert_cmphex(vdma_fill(&f.e.dma[0], iova, 64, 0x0101010101010101ULL,
                              &res), ==, VIOMMU_DMA_ST_OK);
    g_assert_cmphex(vdma_fill(&f.e.dma[1], iova, 64, 0x0202020202020202ULL,
                              &res), ==, VIOMMU_DMA_ST_OK);
    g_assert_cmphex(qtest_readb(f.e.qts, f.src + 63), ==, 1);
    g_assert_cmphex(qtest_readb(f.e.qts, buf2 + 63), ==, 2);
    /* dev 2 sees dev 1's data through the shared domain */
    qtest_memset(f.e.qts, buf2 + 4096, 0, 4096);
    vtd_map(d2, iova + 4096, buf2 + 4096, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    vtd_flush_domain(g, 2);
    g_assert_cmphex(vdma_copy(&f.e.dma[2], iova, iova + 4096, 32, &res), ==,
                    VIOMMU_DMA_ST_OK);
    g_assert_cmphex(qtest_readb(f.e.qts, buf2 + 4096), ==, 2);
    g_assert_cmphex(qtest_readb(f.e.qts, buf2 + 4096 + 31), ==, 2);
    g_assert_cmphex(qtest_readb(f.e.qts, f.src + 63), ==, 1);
    /* a domain-selective flush of domain 1 leaves domain 2 working */
    vtd_unmap(f.dom, iova, 4096);
    vtd_flush_domain(g, 1);
    g_assert_cmphex(vdma_fill(&f.e.dma[0], iova, 8, 0, &res), ==,
                    VIOMMU_DMA_ST_WRITE_FAULT);
    check_fault(g, iova, vt_sid(0), VTD_FR_WRITE, false);
    g_assert_cmphex(vdma_fill(&f.e.dma[2], iova, 8, 0x0303030303030303ULL,
                              &res), ==, VIOMMU_DMA_ST_OK);
    g_assert_cmphex(qtest_readb(f.e.qts, buf2), ==, 3);
    g_free(d2);
    fx_stop(&f);
}

/* Reset and migration --------------------------------------------------- */

static void test_system_reset(void)
{
    Fx f;
    VtdGuest *g;

    fx_start(&f, 1, 4, true, 256);
    g = &f.e.g;
    vtd_fault_irq_setup(g, 0x70);
    g_assert_cmpint(probe(&f, BUF_IOVA), ==, -VIOMMU_DMA_ST_READ_FAULT);
    g_assert_cmpuint(vtd_fault_count(g), >=, 1);
    qtest_system_reset(f.e.qts);
    g_assert_cmphex(vtd_readl(g, VTD_GSTS), ==, 0);
    g_assert_cmphex(vtd_readl(g, VTD_FSTS), ==, 0);
    g_assert_cmphex(vtd_readl(g, VTD_FECTL), ==, VTD_CTL_IM);
    g_assert_cmphex(vtd_readq(g, VTD_IQA), ==, 0);
    g_assert_cmphex(vtd_readq(g, VTD_RTADDR), ==, 0);
    g_assert_cmpuint(vtd_fault_count(g), ==, 0);
    g_assert_cmphex(vdma_reg_read(&f.e.dma[0], VIOMMU_DMA_Q_BASE(0) +
                                  VIOMMU_DMA_Q_CTRL), ==, 0);
    fx_stop(&f);
}

static void test_migration(void)
{
    Fx f;
    VtdGuest *g;
    uint64_t iova = BUF_IOVA + 0x20000;
    uint32_t res;

    fx_start(&f, 1, 4, true, 256);
    g = &f.e.g;
    map_probe_target(&f);
    fill_page(f.e.qts, f.src, 0x6d);
    vtd_map(f.dom, iova, f.src, 4096, VTD_PTE_R, VTD_PAGE_4K);
    vtd_flush_all(g);
    g_assert_cmpint(probe(&f, iova), ==, 0x6d);

    vt_migrate(&f.e);

    /* the same registers, mappings and queue state on the destination */
    g_assert_cmphex(vtd_readl(g, VTD_GSTS), ==,
                    VTD_GCMD_SRTP | VTD_GCMD_QIE | VTD_GCMD_TE);
    fill_page(f.e.qts, f.src, 0x6e);
    g_assert_cmpint(probe(&f, iova), ==, 0x6e);
    g_assert_cmphex(vdma_fill(&f.e.dma[0], iova + 0x1008, 8, 0, &res), ==,
                    VIOMMU_DMA_ST_WRITE_FAULT);
    check_fault(g, iova + 0x1000, vt_sid(0), VTD_FR_WRITE, false);
    g_assert_true(vtd_qi_sync(g));
    fx_stop(&f);
}

/* ---------------------------------------------------------------------- */

typedef struct VtCase {
    const char *path;
    void (*fn)(void);
    /* intel-iommu: aborts QEMU (not run) */
    const char *intel_aborts;
    /* intel-iommu: known deviation, the case must fail on it */
    const char *intel_deviation;
} VtCase;

/*
 * Page tables in a PAM segment (0xd0000): while the MCH maps it to RAM the
 * walk reads them; once it maps the segment away (to the option-ROM
 * space, empty here) a walk must not see them any more, whatever the
 * IOMMU cached about where that RAM lives; mapped back, they work again.
 */
#define MCH_PAM3        0x93            /* low nibble: 0xd0000-0xd3fff */
#define PAM_TABLE       0xd0000ULL

static void pam3_set(QTestState *qts, uint8_t v)
{
    qtest_outl(qts, 0xcf8, 0x80000000u | (MCH_PAM3 & ~3u));
    qtest_outb(qts, 0xcfc + (MCH_PAM3 & 3), v);
}

static void test_tables_follow_ram_layout(void)
{
    Fx f;
    VtdGuest *g;
    uint64_t iova = BUF_IOVA + 0x400000, l1, l2e;
    uint8_t tbl[4096];

    fx_start(&f, 1, 4, true, 256);
    g = &f.e.g;
    map_probe_target(&f);
    vtd_map(f.dom, iova, f.src, 4096, VTD_PTE_RW, VTD_PAGE_4K);
    fill_page(f.e.qts, f.src, 0x5a);
    /* move the level-1 table of the iova's 2 MiB region to 0xd0000 */
    pam3_set(f.e.qts, 0x33);
    l1 = vtd_pte_gpa(f.dom, iova, 1) & ~0xfffULL;
    l2e = vtd_pte_gpa(f.dom, iova, 2);
    qtest_memread(f.e.qts, l1, tbl, sizeof(tbl));
    qtest_memwrite(f.e.qts, PAM_TABLE, tbl, sizeof(tbl));
    qtest_writeq(f.e.qts, l2e, PAM_TABLE | VTD_PTE_RW);
    vtd_flush_all(g);
    g_assert_cmpint(probe(&f, iova), ==, 0x5a);

    /* RAM mapped away: the table reads as empty, the DMA faults */
    pam3_set(f.e.qts, 0x30);
    vtd_flush_domain(g, 1);
    g_assert_cmpint(probe(&f, iova), ==, -VIOMMU_DMA_ST_READ_FAULT);
    check_fault(g, iova, vt_sid(0), VTD_FR_READ, true);  /* not present: 6h */

    /* and back */
    pam3_set(f.e.qts, 0x33);
    vtd_flush_domain(g, 1);
    g_assert_cmpint(probe(&f, iova), ==, 0x5a);
    fx_stop(&f);
}

static const VtCase cases[] = {
    { "regs/reset-values", test_reset_values },
    { "regs/enable-sequence", test_enable_sequence },
    { "dma/map-4level", test_map_dma_4level },
    { "dma/map-3level", test_map_dma_3level },
    { "fault/reasons", test_fault_reasons },
    { "fault/write-cached-read-only", test_fault_write_cached_ro, NULL,
      "D1: write to a read-only page cached in the IOTLB is blocked "
      "without a fault record" },
    { "fault/width-3level", test_fault_width_3level },
    { "fault/overflow", test_fault_overflow },
    { "fault/one-record-per-access", test_fault_one_record },
    { "iotlb/qi-global", test_iotlb_global },
    { "iotlb/qi-domain", test_iotlb_domain },
    { "iotlb/qi-page", test_iotlb_page },
    { "iotlb/qi-page-am", test_iotlb_page_am },
    { "iotlb/qi-context", test_context_cache },
    { "iotlb/reg-global", test_reg_global },
    { "iotlb/reg-domain", test_reg_domain },
    { "iotlb/reg-page", test_reg_page },
    { "iotlb/reg-context", test_reg_context },
    { "qi/wait-status", test_wait_status },
    { "qi/wait-irq", test_wait_irq },
    { "qi/wait-status-irq", test_wait_status_and_irq,
      "wait descriptor with SW and IF set trips an assertion (QEMU issue 3028)" },
    { "qi/wait-fence", test_wait_fence },
    { "qi/invalid-descriptor", test_invalid_descriptor },
    { "qi/wait-plain", test_wait_plain, NULL,
      "D2: wait descriptor with SW=0 and IF=0 is rejected with IQE" },
    { "qi/wrap", test_queue_wrap },
    { "qi/device-iotlb", test_device_iotlb },
    { "ctx/passthrough", test_passthrough },
    { "ctx/superpage-2m", test_superpage_2m },
    { "ctx/superpage-1g", test_superpage_1g },
    { "ctx/multi-domain", test_multi_domain },
    { "ctx/tables-follow-ram-layout", test_tables_follow_ram_layout },
    { "state/system-reset", test_system_reset },
    { "state/migration", test_migration },
};

int main(int argc, char **argv)
{
    if (vt_test_init(&argc, &argv)) {
        for (int i = 0; i < ARRAY_SIZE(cases); i++) {
            vt_add_case("/viommu", cases[i].path, cases[i].fn,
                        cases[i].intel_aborts, cases[i].intel_deviation,
                        false);
        }
        /* intel-iommu accepts aw-bits 39 and 48 only */
        vt_add_case("/viommu", "dma/map-5level", test_map_dma_5level, NULL,
                    NULL, true);
    }
    return g_test_run();
}
