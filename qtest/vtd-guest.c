/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vtd-guest: a guest-side VT-d driver for qtests.  See vtd-guest.h and
 * docs/qtest.rst.
 */
#include "qemu/osdep.h"
#include "vtd-guest.h"

#define VTD_POLL_MAX    10000

void vtd_guest_init(VtdGuest *g, QTestState *qts, uint64_t mem_start,
                    uint64_t mem_end)
{
    memset(g, 0, sizeof(*g));
    g->qts = qts;
    g->base = VTD_BASE;
    g->mem_next = mem_start;
    g->mem_end = mem_end;
    g->cap = vtd_readq(g, VTD_CAP);
    g->ecap = vtd_readq(g, VTD_ECAP);
    g->wait_status = vtd_alloc(g, 64, 64);
}

uint64_t vtd_alloc(VtdGuest *g, uint64_t size, uint64_t align)
{
    uint64_t addr = ROUND_UP(g->mem_next, align);

    g_assert_cmphex(addr + size, <=, g->mem_end);
    g->mem_next = addr + size;
    qtest_memset(g->qts, addr, 0, size);
    return addr;
}

uint32_t vtd_readl(VtdGuest *g, uint32_t reg)
{
    return qtest_readl(g->qts, g->base + reg);
}

uint64_t vtd_readq(VtdGuest *g, uint32_t reg)
{
    return qtest_readq(g->qts, g->base + reg);
}

void vtd_writel(VtdGuest *g, uint32_t reg, uint32_t val)
{
    qtest_writel(g->qts, g->base + reg, val);
}

void vtd_writeq(VtdGuest *g, uint32_t reg, uint64_t val)
{
    qtest_writeq(g->qts, g->base + reg, val);
}

bool vtd_gcmd(VtdGuest *g, uint32_t bit, bool on)
{
    uint32_t sts = vtd_readl(g, VTD_GSTS) & VTD_GSTS_PERSIST;
    uint32_t cmd = on ? (sts | bit) : (sts & ~bit);

    vtd_writel(g, VTD_GCMD, cmd);
    for (int i = 0; i < VTD_POLL_MAX; i++) {
        if (!!(vtd_readl(g, VTD_GSTS) & bit) == on) {
            return true;
        }
    }
    return false;
}

void vtd_set_root_table(VtdGuest *g)
{
    if (!g->root) {
        g->root = vtd_alloc(g, 4096, 4096);
    }
    vtd_writeq(g, VTD_RTADDR, g->root);
    g_assert_true(vtd_gcmd(g, VTD_GCMD_SRTP, true));
}

void vtd_enable_translation(VtdGuest *g)
{
    g_assert_true(vtd_gcmd(g, VTD_GCMD_TE, true));
}

void vtd_disable_translation(VtdGuest *g)
{
    g_assert_true(vtd_gcmd(g, VTD_GCMD_TE, false));
}

static uint64_t vtd_context_gpa(VtdGuest *g, uint16_t sid)
{
    uint8_t bus = sid >> 8;

    g_assert(g->root);
    if (!g->ctx[bus]) {
        g->ctx[bus] = vtd_alloc(g, 4096, 4096);
        qtest_writeq(g->qts, g->root + bus * 16, g->ctx[bus] | 1);
        qtest_writeq(g->qts, g->root + bus * 16 + 8, 0);
    }
    return g->ctx[bus] + (sid & 0xff) * 16;
}

void vtd_set_context_raw(VtdGuest *g, uint16_t sid, uint64_t lo, uint64_t hi)
{
    uint64_t ce = vtd_context_gpa(g, sid);

    /* clear P first so a concurrent walk never sees a torn entry */
    qtest_writeq(g->qts, ce, 0);
    qtest_writeq(g->qts, ce + 8, hi);
    qtest_writeq(g->qts, ce, lo);
}

void vtd_attach(VtdDomain *d, uint16_t sid)
{
    vtd_set_context_raw(d->g, sid, d->pgd | VTD_CTX_TT_MULTI | VTD_CTX_P,
                        VTD_CTX_DID(d->did) | VTD_CTX_AW(d->levels));
}

void vtd_attach_passthrough(VtdGuest *g, uint16_t sid, uint16_t did)
{
    /* AW must still name a supported width */
    vtd_set_context_raw(g, sid, VTD_CTX_TT_PT | VTD_CTX_P,
                        VTD_CTX_DID(did) |
                        VTD_CTX_AW((VTD_CAP_SAGAW(g->cap) & 4) ? 4 : 3));
}

void vtd_detach(VtdGuest *g, uint16_t sid)
{
    vtd_set_context_raw(g, sid, 0, 0);
}

VtdDomain *vtd_domain_new(VtdGuest *g, uint16_t did, int levels)
{
    VtdDomain *d = g_new0(VtdDomain, 1);

    g_assert(levels >= 3 && levels <= 5);
    d->g = g;
    d->did = did;
    d->levels = levels;
    d->pgd = vtd_alloc(g, 4096, 4096);
    return d;
}

static unsigned vtd_index(uint64_t iova, int level)
{
    return (iova >> (12 + 9 * (level - 1))) & 511;
}

static uint64_t vtd_level_size(int level)
{
    return 1ULL << (12 + 9 * (level - 1));
}

/*
 * Walk to the entry for iova at leaf_level.  With alloc, missing or
 * superpage intermediate entries are replaced by new tables; without it,
 * returns 0 if the walk stops early.  *stop receives the level reached.
 */
static uint64_t vtd_walk(VtdDomain *d, uint64_t iova, int leaf_level,
                         bool alloc, int *stop)
{
    QTestState *qts = d->g->qts;
    uint64_t table = d->pgd;

    for (int level = d->levels; ; level--) {
        uint64_t pte_gpa = table + vtd_index(iova, level) * 8;
        uint64_t pte;

        if (level == leaf_level) {
            *stop = level;
            return pte_gpa;
        }
        pte = qtest_readq(qts, pte_gpa);
        if (!(pte & VTD_PTE_RW) || (pte & VTD_PTE_PS)) {
            if (!alloc) {
                *stop = level;
                return (pte & VTD_PTE_RW) ? pte_gpa : 0;
            }
            table = vtd_alloc(d->g, 4096, 4096);
            qtest_writeq(qts, pte_gpa, table | VTD_PTE_RW);
            continue;
        }
        table = VTD_PTE_ADDR(pte);
    }
}

void vtd_map(VtdDomain *d, uint64_t iova, uint64_t gpa, uint64_t size,
             uint64_t perm, uint64_t page_size)
{
    int leaf = page_size == VTD_PAGE_1G ? 3 : page_size == VTD_PAGE_2M ? 2 : 1;
    uint64_t ps = leaf > 1 ? VTD_PTE_PS : 0;

    g_assert_cmphex(vtd_level_size(leaf), ==, page_size);
    g_assert_cmphex(iova % page_size, ==, 0);
    g_assert_cmphex(gpa % page_size, ==, 0);
    g_assert_cmphex(size % page_size, ==, 0);
    for (uint64_t off = 0; off < size; off += page_size) {
        int stop;
        uint64_t pte_gpa = vtd_walk(d, iova + off, leaf, true, &stop);

        qtest_writeq(d->g->qts, pte_gpa, (gpa + off) | ps | perm);
    }
}

void vtd_unmap(VtdDomain *d, uint64_t iova, uint64_t size)
{
    uint64_t end = iova + size;

    while (iova < end) {
        int stop;
        uint64_t pte_gpa = vtd_walk(d, iova, 1, false, &stop);
        uint64_t step = vtd_level_size(stop);

        if (pte_gpa) {
            qtest_writeq(d->g->qts, pte_gpa, 0);
        }
        iova = (iova & ~(step - 1)) + step;
    }
}

uint64_t vtd_pte_gpa(VtdDomain *d, uint64_t iova, int level)
{
    int stop;
    uint64_t gpa = vtd_walk(d, iova, level, false, &stop);

    return stop == level ? gpa : 0;
}

void vtd_set_leaf(VtdDomain *d, uint64_t iova, uint64_t pte)
{
    int stop;
    uint64_t gpa = vtd_walk(d, iova, 1, false, &stop);

    g_assert(gpa);
    qtest_writeq(d->g->qts, gpa, pte);
}

/* Queued invalidation */

void vtd_qi_enable(VtdGuest *g, unsigned qs)
{
    g->iq_entries = 256u << qs;
    g->iq = vtd_alloc(g, 4096ULL << qs, 4096);
    g->iq_tail = 0;
    vtd_writeq(g, VTD_IQT, 0);
    vtd_writeq(g, VTD_IQA, g->iq | qs);
    g_assert_true(vtd_gcmd(g, VTD_GCMD_QIE, true));
}

void vtd_qi_disable(VtdGuest *g)
{
    g_assert_true(vtd_gcmd(g, VTD_GCMD_QIE, false));
}

void vtd_qi_enable_dw(VtdGuest *g, unsigned qs)
{
    g->iq_entries = 128u << qs;
    g->iq = vtd_alloc(g, 4096ULL << qs, 4096);
    g->iq_tail = 0;
    g->iq_dw = true;
    vtd_writeq(g, VTD_IQT, 0);
    vtd_writeq(g, VTD_IQA, g->iq | VTD_IQA_DW | qs);
    g_assert_true(vtd_gcmd(g, VTD_GCMD_QIE, true));
}

void vtd_qi_push256(VtdGuest *g, VtdDesc d, uint64_t w2, uint64_t w3)
{
    uint64_t slot = g->iq + (uint64_t)g->iq_tail * 32;

    g_assert_true(g->iq_dw);
    qtest_writeq(g->qts, slot, d.lo);
    qtest_writeq(g->qts, slot + 8, d.hi);
    qtest_writeq(g->qts, slot + 16, w2);
    qtest_writeq(g->qts, slot + 24, w3);
    g->iq_tail = (g->iq_tail + 1) % g->iq_entries;
}

void vtd_qi_push(VtdGuest *g, VtdDesc d)
{
    uint64_t slot;

    if (g->iq_dw) {
        vtd_qi_push256(g, d, 0, 0);
        return;
    }
    slot = g->iq + (uint64_t)g->iq_tail * 16;
    qtest_writeq(g->qts, slot, d.lo);
    qtest_writeq(g->qts, slot + 8, d.hi);
    g->iq_tail = (g->iq_tail + 1) % g->iq_entries;
}

void vtd_qi_kick(VtdGuest *g)
{
    vtd_writeq(g, VTD_IQT, (uint64_t)g->iq_tail << (g->iq_dw ? 5 : 4));
}

VtdDesc vtd_desc_pasid_cache(int gran, uint16_t did, uint32_t pasid)
{
    return (VtdDesc) {
        .lo = VTD_INV_PC | ((uint64_t)(gran & 3) << 4) |
              ((uint64_t)did << 16) | ((uint64_t)(pasid & 0xfffff) << 32),
        .hi = 0,
    };
}

VtdDesc vtd_desc_piotlb(int gran, uint16_t did, uint32_t pasid,
                        uint64_t addr, unsigned am, bool ih)
{
    return (VtdDesc) {
        .lo = VTD_INV_PIOTLB | ((uint64_t)(gran & 3) << 4) |
              ((uint64_t)did << 16) | ((uint64_t)(pasid & 0xfffff) << 32),
        .hi = (addr & ~0xfffULL) | (ih ? 1ULL << 6 : 0) | (am & 0x3f),
    };
}

/* Scalable mode */

void vtd_sm_set_root_table(VtdGuest *g)
{
    g->root = vtd_alloc(g, 4096, 4096);
    vtd_writeq(g, VTD_RTADDR, g->root | VTD_RTADDR_TTM_SM);
    g_assert_true(vtd_gcmd(g, VTD_GCMD_SRTP, true));
}

uint64_t vtd_sm_pasid_entry_gpa(VtdGuest *g, uint16_t sid, uint32_t pasid)
{
    unsigned bus = sid >> 8, devfn = sid & 0xff, half = devfn >> 7;
    uint64_t ce, dir, dire, table;

    g_assert_cmpuint(pasid, <, 1u << 15);
    if (!g->sm_pasid_dir) {
        g->sm_pasid_dir = g_hash_table_new(NULL, NULL);
    }
    if (!g->sm_ctx[bus][half]) {
        /* root entry: LCTP in bits 63:12 (LP bit 0), UCTP in 127:76 */
        g->sm_ctx[bus][half] = vtd_alloc(g, 4096, 4096);
        qtest_writeq(g->qts, g->root + bus * 16 + half * 8,
                     g->sm_ctx[bus][half] | 1);
    }
    /* 256-bit context entries, 128 per table */
    ce = g->sm_ctx[bus][half] + (devfn & 0x7f) * 32;
    dir = (uint64_t)(uintptr_t)g_hash_table_lookup(g->sm_pasid_dir,
                                                   GUINT_TO_POINTER(sid));
    if (!dir) {
        dir = vtd_alloc(g, 4096, 4096);
        g_hash_table_insert(g->sm_pasid_dir, GUINT_TO_POINTER(sid),
                            (gpointer)(uintptr_t)dir);
        /* P, PDTS = 2 (2^(7+2) = 512 directory entries), PASIDDIRPTR;
         * RID_PASID 0 */
        qtest_writeq(g->qts, ce + 8, 0);
        qtest_writeq(g->qts, ce + 16, 0);
        qtest_writeq(g->qts, ce + 24, 0);
        qtest_writeq(g->qts, ce, dir | (2ULL << 9) | 1);
    }
    /* directory entry: 64 PASIDs per PASID table */
    dire = dir + (pasid >> 6) * 8;
    table = qtest_readq(g->qts, dire) & ~0xfffULL;
    if (!table) {
        table = vtd_alloc(g, 4096, 4096);
        qtest_writeq(g->qts, dire, table | 1);
    }
    return table + (pasid & 63) * 64;
}

void vtd_sm_set_pasid_entry(VtdGuest *g, uint16_t sid, uint32_t pasid,
                            const uint64_t qw[8])
{
    uint64_t pe = vtd_sm_pasid_entry_gpa(g, sid, pasid);

    /* P (in qw0) last */
    for (int i = 7; i >= 0; i--) {
        qtest_writeq(g->qts, pe + i * 8, qw[i]);
    }
}

/* qw0: P, AW (second-stage levels - 2) in 4:2, PGTT in 8:6, SSPTPTR;
 * qw1: DID; qw2: SRE 0, FSPM 3:2 (0: 4-level), FSPTPTR */
void vtd_sm_pe_second_stage(uint64_t qw[8], uint16_t did, VtdDomain *ss)
{
    memset(qw, 0, 8 * sizeof(qw[0]));
    qw[0] = 1 | ((uint64_t)(ss->levels - 2) << 2) |
            ((uint64_t)VTD_PGTT_SS << 6) | ss->pgd;
    qw[1] = did;
}

void vtd_sm_pe_first_stage(uint64_t qw[8], uint16_t did, uint64_t fs_top)
{
    memset(qw, 0, 8 * sizeof(qw[0]));
    /* AW as Linux sets it (the unit's AGAW: 48-bit) */
    qw[0] = 1 | (2ULL << 2) | ((uint64_t)VTD_PGTT_FS << 6);
    qw[1] = did;
    qw[2] = fs_top;
}

void vtd_sm_pe_nested(uint64_t qw[8], uint16_t did, uint64_t fs_top,
                      VtdDomain *ss)
{
    vtd_sm_pe_second_stage(qw, did, ss);
    qw[0] = (qw[0] & ~(7ULL << 6)) | ((uint64_t)VTD_PGTT_NESTED << 6);
    qw[2] = fs_top;
}

void vtd_sm_pe_pass_through(uint64_t qw[8], uint16_t did)
{
    memset(qw, 0, 8 * sizeof(qw[0]));
    /* AW as the second stage would have it (48-bit) */
    qw[0] = 1 | (2ULL << 2) | ((uint64_t)VTD_PGTT_PT << 6);
    qw[1] = did;
}

uint64_t vtd_fs_new(VtdGuest *g)
{
    return vtd_alloc(g, 4096, 4096);
}

/* entry of iova at level (4: PML4 .. 1: PTE), creating tables if `make` */
static uint64_t vtd_fs_entry(VtdGuest *g, uint64_t top, uint64_t iova,
                             bool make)
{
    uint64_t table = top;

    for (int level = 4; level > 1; level--) {
        uint64_t e = table + ((iova >> (12 + 9 * (level - 1))) & 511) * 8;
        uint64_t v = qtest_readq(g->qts, e);

        if (!(v & VTD_FS_P)) {
            if (!make) {
                return 0;
            }
            v = vtd_alloc(g, 4096, 4096) | VTD_FS_P | VTD_FS_RW | VTD_FS_US;
            qtest_writeq(g->qts, e, v);
        }
        table = v & 0x000ffffffffff000ULL;
    }
    return table + ((iova >> 12) & 511) * 8;
}

void vtd_fs_map(VtdGuest *g, uint64_t top, uint64_t iova, uint64_t gpa,
                uint64_t size, uint64_t flags)
{
    for (uint64_t off = 0; off < size; off += VTD_PAGE_4K) {
        qtest_writeq(g->qts, vtd_fs_entry(g, top, iova + off, true),
                     (gpa + off) | flags | VTD_FS_P | VTD_FS_US);
    }
}

uint64_t vtd_fs_leaf_gpa(VtdGuest *g, uint64_t top, uint64_t iova)
{
    return vtd_fs_entry(g, top, iova, false);
}

bool vtd_qi_sync(VtdGuest *g)
{
    uint32_t seq = ++g->wait_seq;

    qtest_writel(g->qts, g->wait_status, 0);
    vtd_qi_push(g, vtd_desc_wait(true, false, false, seq, g->wait_status));
    vtd_qi_kick(g);
    for (int i = 0; i < VTD_POLL_MAX; i++) {
        if (qtest_readl(g->qts, g->wait_status) == seq) {
            return true;
        }
        if (vtd_readl(g, VTD_FSTS) & VTD_FSTS_IQE) {
            return false;
        }
    }
    return false;
}

VtdDesc vtd_desc_cc(int gran, uint16_t did, uint16_t sid, unsigned fm)
{
    return (VtdDesc) {
        .lo = VTD_INV_CC | ((uint64_t)gran << 4) | ((uint64_t)did << 16) |
              ((uint64_t)sid << 32) | ((uint64_t)(fm & 3) << 48),
        .hi = 0,
    };
}

VtdDesc vtd_desc_iotlb(int gran, uint16_t did, uint64_t addr, unsigned am,
                       bool ih)
{
    return (VtdDesc) {
        .lo = VTD_INV_IOTLB | ((uint64_t)gran << 4) | (1ULL << 6) |
              (1ULL << 7) | ((uint64_t)did << 16),
        .hi = gran == VTD_GRAN_PAGE ?
              ((addr & ~0xfffULL) | (ih ? 1ULL << 6 : 0) | (am & 0x3f)) : 0,
    };
}

VtdDesc vtd_desc_wait(bool sw, bool irq, bool fn, uint32_t data,
                      uint64_t addr)
{
    return (VtdDesc) {
        .lo = VTD_INV_WAIT | (irq ? VTD_WAIT_IF : 0) |
              (sw ? VTD_WAIT_SW : 0) | (fn ? VTD_WAIT_FN : 0) |
              ((uint64_t)data << 32),
        .hi = sw ? (addr & ~3ULL) : 0,
    };
}

/* Register-based invalidation */

bool vtd_reg_cc(VtdGuest *g, int gran, uint16_t did, uint16_t sid,
                unsigned fm)
{
    vtd_writeq(g, VTD_CCMD, VTD_CCMD_ICC | VTD_CCMD_CIRG(gran) |
               VTD_CCMD_DID(did) | VTD_CCMD_SID(sid) | VTD_CCMD_FM(fm));
    for (int i = 0; i < VTD_POLL_MAX; i++) {
        uint64_t v = vtd_readq(g, VTD_CCMD);
        if (!(v & VTD_CCMD_ICC)) {
            return VTD_CCMD_CAIG(v) != 0;
        }
    }
    return false;
}

bool vtd_reg_iotlb(VtdGuest *g, int gran, uint16_t did, uint64_t addr,
                   unsigned am)
{
    uint32_t iro = VTD_ECAP_IRO(g->ecap);

    if (gran == VTD_GRAN_PAGE) {
        vtd_writeq(g, iro, (addr & ~0xfffULL) | VTD_IVA_AM(am));
    }
    vtd_writeq(g, iro + 8, VTD_IOTLB_IVT | VTD_IOTLB_IIRG(gran) |
               VTD_IOTLB_DR | VTD_IOTLB_DW | VTD_IOTLB_DID(did));
    for (int i = 0; i < VTD_POLL_MAX; i++) {
        uint64_t v = vtd_readq(g, iro + 8);
        if (!(v & VTD_IOTLB_IVT)) {
            return VTD_IOTLB_IAIG(v) != 0;
        }
    }
    return false;
}

static bool vtd_qi_on(VtdGuest *g)
{
    return vtd_readl(g, VTD_GSTS) & VTD_GCMD_QIE;
}

void vtd_flush_all(VtdGuest *g)
{
    if (vtd_qi_on(g)) {
        vtd_qi_push(g, vtd_desc_cc(VTD_GRAN_GLOBAL, 0, 0, 0));
        vtd_qi_push(g, vtd_desc_iotlb(VTD_GRAN_GLOBAL, 0, 0, 0, false));
        g_assert_true(vtd_qi_sync(g));
    } else {
        g_assert_true(vtd_reg_cc(g, VTD_GRAN_GLOBAL, 0, 0, 0));
        g_assert_true(vtd_reg_iotlb(g, VTD_GRAN_GLOBAL, 0, 0, 0));
    }
}

void vtd_flush_domain(VtdGuest *g, uint16_t did)
{
    if (vtd_qi_on(g)) {
        vtd_qi_push(g, vtd_desc_iotlb(VTD_GRAN_DOMAIN, did, 0, 0, false));
        g_assert_true(vtd_qi_sync(g));
    } else {
        g_assert_true(vtd_reg_iotlb(g, VTD_GRAN_DOMAIN, did, 0, 0));
    }
}

void vtd_flush_page(VtdGuest *g, uint16_t did, uint64_t addr, unsigned am)
{
    if (vtd_qi_on(g)) {
        vtd_qi_push(g, vtd_desc_iotlb(VTD_GRAN_PAGE, did, addr, am, false));
        g_assert_true(vtd_qi_sync(g));
    } else {
        g_assert_true(vtd_reg_iotlb(g, VTD_GRAN_PAGE, did, addr, am));
    }
}

/* Faults */

void vtd_fault_irq_setup(VtdGuest *g, uint8_t vector)
{
    vtd_writel(g, VTD_FEDATA, vector);
    vtd_writel(g, VTD_FEADDR, 0xfee00000);
    vtd_writel(g, VTD_FEUADDR, 0);
    vtd_writel(g, VTD_FECTL, 0);
}

void vtd_inv_irq_setup(VtdGuest *g, uint8_t vector)
{
    vtd_writel(g, VTD_IEDATA, vector);
    vtd_writel(g, VTD_IEADDR, 0xfee00000);
    vtd_writel(g, VTD_IEUADDR, 0);
    vtd_writel(g, VTD_IECTL, 0);
}

bool vtd_fault_read(VtdGuest *g, int index, VtdFault *f)
{
    uint32_t off = VTD_CAP_FRO(g->cap) + index * 16;
    uint64_t lo = vtd_readq(g, off);
    uint64_t hi = vtd_readq(g, off + 8);

    if (!(hi & VTD_FRCD_F)) {
        return false;
    }
    f->addr = lo & ~0xfffULL;
    f->sid = VTD_FRCD_SID(hi);
    f->reason = VTD_FRCD_FR(hi);
    f->is_read = hi & VTD_FRCD_T;
    f->has_pasid = hi & VTD_FRCD_PP;
    f->pasid = VTD_FRCD_PV(hi);
    f->index = index;
    return true;
}

void vtd_fault_clear(VtdGuest *g, int index)
{
    vtd_writel(g, VTD_CAP_FRO(g->cap) + index * 16 + 12, 0x80000000u);
}

bool vtd_fault_pop(VtdGuest *g, VtdFault *f)
{
    int nfr = VTD_CAP_NFR(g->cap);
    int start = VTD_FSTS_FRI(vtd_readl(g, VTD_FSTS)) % nfr;

    for (int n = 0; n < nfr; n++) {
        int i = (start + n) % nfr;
        if (vtd_fault_read(g, i, f)) {
            vtd_fault_clear(g, i);
            return true;
        }
    }
    return false;
}

int vtd_fault_count(VtdGuest *g)
{
    int nfr = VTD_CAP_NFR(g->cap), n = 0;
    VtdFault f;

    for (int i = 0; i < nfr; i++) {
        n += vtd_fault_read(g, i, &f);
    }
    return n;
}

void vtd_fault_clear_all(VtdGuest *g)
{
    int nfr = VTD_CAP_NFR(g->cap);

    for (int i = 0; i < nfr; i++) {
        vtd_fault_clear(g, i);
    }
    vtd_writel(g, VTD_FSTS, VTD_FSTS_PFO | VTD_FSTS_AFO | VTD_FSTS_IQE |
               VTD_FSTS_ICE | VTD_FSTS_ITE);
}

static bool vtd_lapic_irr_in(const char *out, uint8_t vector);

bool vtd_lapic_irr(QTestState *qts, uint8_t vector)
{
    g_autofree char *out = qtest_hmp(qts, "info lapic");

    return vtd_lapic_irr_in(out, vector);
}

bool vtd_lapic_irr_on(QTestState *qts, unsigned apic_id, uint8_t vector)
{
    g_autofree char *out = qtest_hmp(qts, "info lapic %u", apic_id);

    return vtd_lapic_irr_in(out, vector);
}

static bool vtd_lapic_irr_in(const char *out, uint8_t vector)
{
    const char *line = strstr(out, "\nIRR");
    bool found = false;

    if (!line) {
        return false;
    }
    line += 4;
    while (*line && *line != '\n') {
        char *end;
        unsigned long v;

        while (*line == ' ' || *line == '\t') {
            line++;
        }
        v = strtoul(line, &end, 10);
        if (end == line) {
            break;
        }
        if (v == vector) {
            found = true;
        }
        line = end;
        while (*line && *line != ' ' && *line != '\n') {
            line++;     /* skip "(level)" */
        }
    }
    return found;
}

/* Interrupt remapping */

VtdDesc vtd_desc_iec(bool global, uint16_t index, unsigned im)
{
    return (VtdDesc) {
        .lo = VTD_INV_IEC | (global ? 0 : 1ULL << 4) |
              ((uint64_t)(im & 0x1f) << 27) | ((uint64_t)index << 32),
        .hi = 0,
    };
}

void vtd_iec_flush(VtdGuest *g, bool global, uint16_t index, unsigned im)
{
    vtd_qi_push(g, vtd_desc_iec(global, index, im));
    g_assert_true(vtd_qi_sync(g));
}

uint64_t vtd_ir_enable(VtdGuest *g, unsigned s, bool eime, bool cfi)
{
    uint64_t entries = 2ULL << s;
    uint64_t table = vtd_alloc(g, MAX(entries * 16, 4096), 4096);

    g_assert_true(g->ecap & VTD_ECAP_IR);
    g_assert_true(g->iq);
    vtd_writeq(g, VTD_IRTA, table | (eime ? VTD_IRTA_EIME : 0) | s);
    g_assert_true(vtd_gcmd(g, VTD_GCMD_SIRTP, true));
    vtd_iec_flush(g, true, 0, 0);
    g_assert_true(vtd_gcmd(g, VTD_GCMD_IRE, true));
    if (cfi) {
        g_assert_true(vtd_gcmd(g, VTD_GCMD_CFI, true));
    }
    return table;
}

void vtd_irte_set(VtdGuest *g, uint64_t table, unsigned index, uint64_t lo,
                  uint64_t hi)
{
    qtest_writeq(g->qts, table + index * 16ULL, lo);
    qtest_writeq(g->qts, table + index * 16ULL + 8, hi);
}
