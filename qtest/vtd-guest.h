/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vtd-guest: a guest-side VT-d driver for qtests.
 *
 * Builds root/context tables and second-level page tables in guest memory,
 * enables translation, drives queued and register-based invalidation and
 * reads fault records, all through libqtest.  Works against any VT-d
 * compatible remapping unit at VTD_BASE (viommu-vtd, intel-iommu).
 * Definitions below are written from the Intel VT-d specification
 * (legacy-mode translation, 128-bit invalidation descriptors).
 */
#ifndef VTD_GUEST_H
#define VTD_GUEST_H

#include "libqtest.h"

#define VTD_BASE            0xfed90000ULL

/* Registers */
#define VTD_VER             0x00
#define VTD_CAP             0x08
#define VTD_ECAP            0x10
#define VTD_GCMD            0x18
#define VTD_GSTS            0x1c
#define VTD_RTADDR          0x20
#define VTD_CCMD            0x28
#define VTD_FSTS            0x34
#define VTD_FECTL           0x38
#define VTD_FEDATA          0x3c
#define VTD_FEADDR          0x40
#define VTD_FEUADDR         0x44
#define VTD_AFLOG           0x58
#define VTD_PMEN            0x64
#define VTD_IQH             0x80
#define VTD_IQT             0x88
#define VTD_IQA             0x90
#define VTD_ICS             0x9c
#define VTD_IECTL           0xa0
#define VTD_IEDATA          0xa4
#define VTD_IEADDR          0xa8
#define VTD_IEUADDR         0xac
#define VTD_IRTA            0xb8

/* CAP */
#define VTD_CAP_ND(c)       ((c) & 7)
#define VTD_CAP_RWBF        (1ULL << 4)
#define VTD_CAP_CM          (1ULL << 7)
#define VTD_CAP_SAGAW(c)    (((c) >> 8) & 0x1f)
#define VTD_CAP_MGAW(c)     ((((c) >> 16) & 0x3f) + 1)
#define VTD_CAP_FRO(c)      ((((c) >> 24) & 0x3ff) * 16)
#define VTD_CAP_SLLPS(c)    (((c) >> 34) & 0xf)
#define VTD_CAP_PSI         (1ULL << 39)
#define VTD_CAP_NFR(c)      ((((c) >> 40) & 0xff) + 1)
#define VTD_CAP_MAMV(c)     (((c) >> 48) & 0x3f)

/* ECAP */
#define VTD_ECAP_C          (1ULL << 0)
#define VTD_ECAP_QI         (1ULL << 1)
#define VTD_ECAP_DT         (1ULL << 2)
#define VTD_ECAP_IR         (1ULL << 3)
#define VTD_ECAP_EIM        (1ULL << 4)
#define VTD_ECAP_PT         (1ULL << 6)
#define VTD_ECAP_IRO(e)     ((((e) >> 8) & 0x3ff) * 16)

/* GCMD / GSTS */
#define VTD_GCMD_TE         (1u << 31)
#define VTD_GCMD_SRTP       (1u << 30)
#define VTD_GCMD_SFL        (1u << 29)
#define VTD_GCMD_EAFL       (1u << 28)
#define VTD_GCMD_WBF        (1u << 27)
#define VTD_GCMD_QIE        (1u << 26)
#define VTD_GCMD_IRE        (1u << 25)
#define VTD_GCMD_SIRTP      (1u << 24)
#define VTD_GCMD_CFI        (1u << 23)
/* the status bits that stay set (the rest are one-shot commands) */
#define VTD_GSTS_PERSIST    (VTD_GCMD_TE | VTD_GCMD_QIE | VTD_GCMD_IRE | \
                             VTD_GCMD_CFI)

/* IRTA: table address, EIME, size S (2^(S+1) entries) */
#define VTD_IRTA_EIME       (1ULL << 11)
/* CCMD (64-bit) */
#define VTD_CCMD_ICC        (1ULL << 63)
#define VTD_CCMD_CIRG(g)    ((uint64_t)(g) << 61)
#define VTD_CCMD_CAIG(v)    (((v) >> 59) & 3)
#define VTD_CCMD_DID(d)     ((uint64_t)(d) & 0xffff)
#define VTD_CCMD_SID(s)     (((uint64_t)(s) & 0xffff) << 16)
#define VTD_CCMD_FM(f)      (((uint64_t)(f) & 3) << 32)

/* IOTLB register (at ECAP.IRO + 8) and IVA (at ECAP.IRO) */
#define VTD_IOTLB_IVT       (1ULL << 63)
#define VTD_IOTLB_IIRG(g)   ((uint64_t)(g) << 60)
#define VTD_IOTLB_IAIG(v)   (((v) >> 57) & 3)
#define VTD_IOTLB_DR        (1ULL << 49)
#define VTD_IOTLB_DW        (1ULL << 48)
#define VTD_IOTLB_DID(d)    (((uint64_t)(d) & 0xffff) << 32)
#define VTD_IVA_AM(a)       ((uint64_t)(a) & 0x3f)
#define VTD_IVA_IH          (1ULL << 6)

/* invalidation granularities (CCMD.CIRG, IOTLB.IIRG, descriptor G) */
#define VTD_GRAN_GLOBAL     1
#define VTD_GRAN_DOMAIN     2
#define VTD_GRAN_DEVICE     3   /* context cache */
#define VTD_GRAN_PAGE       3   /* IOTLB */

/* FSTS */
#define VTD_FSTS_PFO        (1u << 0)
#define VTD_FSTS_PPF        (1u << 1)
#define VTD_FSTS_AFO        (1u << 2)
#define VTD_FSTS_APF        (1u << 3)
#define VTD_FSTS_IQE        (1u << 4)
#define VTD_FSTS_ICE        (1u << 5)
#define VTD_FSTS_ITE        (1u << 6)
#define VTD_FSTS_FRI(f)     (((f) >> 8) & 0xff)

/* FECTL / IECTL */
#define VTD_CTL_IM          (1u << 31)
#define VTD_CTL_IP          (1u << 30)

/* ICS */
#define VTD_ICS_IWC         (1u << 0)

/* Fault recording register, high quadword */
#define VTD_FRCD_F          (1ULL << 63)
#define VTD_FRCD_T          (1ULL << 62)    /* 1: read request */
#define VTD_FRCD_FR(h)      (((h) >> 32) & 0xff)
#define VTD_FRCD_SID(h)     ((h) & 0xffff)
#define VTD_FRCD_PP         (1ULL << 31)
#define VTD_FRCD_PV(h)      (((h) >> 40) & 0xfffff)

/* Fault reasons (legacy mode) */
#define VTD_FR_ROOT_NP      0x1
#define VTD_FR_CTX_NP       0x2
#define VTD_FR_CTX_INVALID  0x3
#define VTD_FR_BEYOND_MGAW  0x4
#define VTD_FR_WRITE        0x5
#define VTD_FR_READ         0x6
#define VTD_FR_PTE_ADDR     0x7
#define VTD_FR_ROOT_ADDR    0x8
#define VTD_FR_CTP_ADDR     0x9
#define VTD_FR_ROOT_RSVD    0xa
#define VTD_FR_CTX_RSVD     0xb
#define VTD_FR_PTE_RSVD     0xc
/* Fault reasons (interrupt remapping) */
#define VTD_FR_IR_REQ_RSVD  0x20
#define VTD_FR_IR_INDEX     0x21
#define VTD_FR_IR_NOT_PRESENT 0x22
#define VTD_FR_IR_TABLE     0x23
#define VTD_FR_IR_IRTE_RSVD 0x24
#define VTD_FR_IR_COMPAT    0x25
#define VTD_FR_IR_SID       0x26
/* Interrupt remapping table entry, remapped format */
#define VTD_IRTE_P          (1ULL << 0)
#define VTD_IRTE_FPD        (1ULL << 1)
#define VTD_IRTE_DM         (1ULL << 2)     /* logical destination */
#define VTD_IRTE_TM         (1ULL << 4)     /* level-triggered */
#define VTD_IRTE_DLM(m)     ((uint64_t)(m) << 5)
#define VTD_IRTE_VECTOR(v)  ((uint64_t)(v) << 16)
#define VTD_IRTE_DST_XAPIC(d) ((uint64_t)((d) & 0xff) << 40)
#define VTD_IRTE_DST_X2APIC(d) ((uint64_t)(d) << 32)
#define VTD_IRTE_SID(s)     ((uint64_t)(s) & 0xffff)   /* high quadword */
#define VTD_IRTE_SQ(q)      ((uint64_t)(q) << 16)
#define VTD_IRTE_SVT(t)     ((uint64_t)(t) << 18)
#define VTD_SVT_SID         1
#define VTD_SVT_BUS         2
/* an interrupt request in remappable format for `handle` (SHV: subhandle) */
#define VTD_MSI_REMAPPABLE(handle, shv) \
    (0xfee00000ULL | (((uint64_t)(handle) & 0x7fff) << 5) | (1ULL << 4) | \
     ((shv) ? 1ULL << 3 : 0) | ((((uint64_t)(handle) >> 15) & 1) << 2))

/* Context entry */
#define VTD_CTX_P           (1ULL << 0)
#define VTD_CTX_FPD         (1ULL << 1)
#define VTD_CTX_TT_MULTI    (0ULL << 2)     /* untranslated requests only */
#define VTD_CTX_TT_DEVTLB   (1ULL << 2)
#define VTD_CTX_TT_PT       (2ULL << 2)     /* pass-through */
#define VTD_CTX_AW(levels)  ((uint64_t)((levels) - 2))
#define VTD_CTX_DID(d)      (((uint64_t)(d) & 0xffff) << 8)

/* Second-level PTE */
#define VTD_PTE_R           (1ULL << 0)
#define VTD_PTE_W           (1ULL << 1)
#define VTD_PTE_RW          (VTD_PTE_R | VTD_PTE_W)
#define VTD_PTE_PS          (1ULL << 7)
#define VTD_PTE_ADDR(p)     ((p) & 0x000ffffffffff000ULL)

/* Invalidation descriptor types (low quadword bits 3:0) */
#define VTD_INV_CC          0x1
#define VTD_INV_IOTLB       0x2
#define VTD_INV_DEVTLB      0x3
#define VTD_INV_IEC         0x4
#define VTD_INV_WAIT        0x5
#define VTD_WAIT_IF         (1ULL << 4)
#define VTD_WAIT_SW         (1ULL << 5)
#define VTD_WAIT_FN         (1ULL << 6)

#define VTD_PAGE_4K         0x1000ULL
#define VTD_PAGE_2M         0x200000ULL
#define VTD_PAGE_1G         0x40000000ULL

typedef struct VtdDesc {
    uint64_t lo, hi;
} VtdDesc;

typedef struct VtdFault {
    uint64_t addr;
    uint16_t sid;
    uint8_t reason;
    bool is_read;
    bool has_pasid;             /* PP: the request had a PASID */
    uint32_t pasid;             /* PV */
    int index;
} VtdFault;

typedef struct VtdGuest {
    QTestState *qts;
    uint64_t base;
    uint64_t cap, ecap;
    /* bump allocator for guest-physical memory */
    uint64_t mem_next, mem_end;
    /* translation structures */
    uint64_t root;
    uint64_t ctx[256];          /* context table per bus, 0 if none */
    /* scalable mode: context table per bus half (devfn 0-127, 128-255),
     * PASID directory per source-id (one 4 KiB page: PDTS 2^9 entries,
     * PASIDs below 2^15) */
    uint64_t sm_ctx[256][2];
    GHashTable *sm_pasid_dir;   /* sid -> GPA */
    /* queued invalidation */
    uint64_t iq;
    uint32_t iq_entries;
    uint32_t iq_tail;
    bool iq_dw;                 /* 256-bit descriptors (IQA.DW) */
    uint64_t wait_status;       /* 4-byte status for wait descriptors */
    uint32_t wait_seq;
} VtdGuest;

typedef struct VtdDomain {
    VtdGuest *g;
    uint16_t did;
    int levels;                 /* 3 (39-bit), 4 (48-bit) or 5 (57-bit) */
    uint64_t pgd;               /* GPA of the top-level table */
} VtdDomain;

/* Setup and memory */
void vtd_guest_init(VtdGuest *g, QTestState *qts, uint64_t mem_start,
                    uint64_t mem_end);
uint64_t vtd_alloc(VtdGuest *g, uint64_t size, uint64_t align);

uint32_t vtd_readl(VtdGuest *g, uint32_t reg);
uint64_t vtd_readq(VtdGuest *g, uint32_t reg);
void vtd_writel(VtdGuest *g, uint32_t reg, uint32_t val);
void vtd_writeq(VtdGuest *g, uint32_t reg, uint64_t val);

/* Global command: set/clear one GCMD bit, wait for GSTS; false on timeout */
bool vtd_gcmd(VtdGuest *g, uint32_t bit, bool on);
/* allocate a root table and latch it with SRTP */
void vtd_set_root_table(VtdGuest *g);
void vtd_enable_translation(VtdGuest *g);
void vtd_disable_translation(VtdGuest *g);

/* Context entries */
void vtd_set_context_raw(VtdGuest *g, uint16_t sid, uint64_t lo, uint64_t hi);
void vtd_attach(VtdDomain *d, uint16_t sid);
void vtd_attach_passthrough(VtdGuest *g, uint16_t sid, uint16_t did);
void vtd_detach(VtdGuest *g, uint16_t sid);

/* Domains and second-level page tables */
VtdDomain *vtd_domain_new(VtdGuest *g, uint16_t did, int levels);
/* map [iova, iova+size) to gpa with leaves of page_size (4K, 2M, 1G) */
void vtd_map(VtdDomain *d, uint64_t iova, uint64_t gpa, uint64_t size,
             uint64_t perm, uint64_t page_size);
/* clear leaf entries covering [iova, iova+size) */
void vtd_unmap(VtdDomain *d, uint64_t iova, uint64_t size);
/* GPA of the leaf entry for iova at the given level (1: 4K leaf), or 0 */
uint64_t vtd_pte_gpa(VtdDomain *d, uint64_t iova, int level);
void vtd_set_leaf(VtdDomain *d, uint64_t iova, uint64_t pte);

/* Queued invalidation */
void vtd_qi_enable(VtdGuest *g, unsigned qs);
void vtd_qi_disable(VtdGuest *g);
/* write a descriptor at the software tail (IQT is not yet written) */
void vtd_qi_push(VtdGuest *g, VtdDesc d);
/* make pushed descriptors visible: write IQT */
void vtd_qi_kick(VtdGuest *g);
/* push a status-write wait, kick, poll; false on IQE or timeout */
bool vtd_qi_sync(VtdGuest *g);

VtdDesc vtd_desc_cc(int gran, uint16_t did, uint16_t sid, unsigned fm);
VtdDesc vtd_desc_iotlb(int gran, uint16_t did, uint64_t addr, unsigned am,
                       bool ih);
VtdDesc vtd_desc_wait(bool sw, bool irq, bool fn, uint32_t data,
                      uint64_t addr);

/* Register-based invalidation (valid while QI is disabled) */
bool vtd_reg_cc(VtdGuest *g, int gran, uint16_t did, uint16_t sid,
                unsigned fm);
bool vtd_reg_iotlb(VtdGuest *g, int gran, uint16_t did, uint64_t addr,
                   unsigned am);

/* Flush everything with whichever mechanism is enabled */
void vtd_flush_all(VtdGuest *g);
void vtd_flush_page(VtdGuest *g, uint16_t did, uint64_t addr, unsigned am);
void vtd_flush_domain(VtdGuest *g, uint16_t did);

/* Faults */
void vtd_fault_irq_setup(VtdGuest *g, uint8_t vector);
void vtd_inv_irq_setup(VtdGuest *g, uint8_t vector);
bool vtd_fault_read(VtdGuest *g, int index, VtdFault *f);
void vtd_fault_clear(VtdGuest *g, int index);
/* read and clear the first pending record; false if none */
bool vtd_fault_pop(VtdGuest *g, VtdFault *f);
int vtd_fault_count(VtdGuest *g);
void vtd_fault_clear_all(VtdGuest *g);

/* LAPIC: has vector been requested on CPU 0 (IRR bit)? */
bool vtd_lapic_irr(QTestState *qts, uint8_t vector);
/* the same on the CPU whose APIC ID is apic_id */
bool vtd_lapic_irr_on(QTestState *qts, unsigned apic_id, uint8_t vector);

/*
 * Interrupt remapping, as Linux's intel_irq_remapping sets it up: a table
 * of 2^(s+1) entries, IRTA (with EIME), SIRTP and wait for IRTPS, a global
 * interrupt-entry-cache invalidation (through the queue, which must be
 * on), then IRE (and CFI when cfi) and wait for IRES.  Returns the table's
 * GPA.
 */
uint64_t vtd_ir_enable(VtdGuest *g, unsigned s, bool eime, bool cfi);
void vtd_irte_set(VtdGuest *g, uint64_t table, unsigned index, uint64_t lo,
                  uint64_t hi);
/* interrupt entry cache invalidation: global, or 2^im entries from index */
VtdDesc vtd_desc_iec(bool global, uint16_t index, unsigned im);
/* push an IEC invalidation and wait for it */
void vtd_iec_flush(VtdGuest *g, bool global, uint16_t index, unsigned im);

/*
 * Scalable mode (VT-d 3.x, as Linux's intel-iommu sets it up in scalable
 * mode): RTADDR.TTM = 01b, root entries with lower/upper context-table
 * pointers, 256-bit context entries pointing at a PASID directory, 64-byte
 * PASID-table entries, 256-bit invalidation descriptors.
 */
#define VTD_ECAP_SMTS       (1ULL << 43)
#define VTD_ECAP_FLTS       (1ULL << 47)
#define VTD_ECAP_SLTS       (1ULL << 46)
#define VTD_ECAP_NEST       (1ULL << 26)
#define VTD_ECAP_PASID      (1ULL << 40)
#define VTD_RTADDR_TTM_SM   (1ULL << 10)
#define VTD_IQA_DW          (1ULL << 11)

#define VTD_PGTT_FS         1
#define VTD_PGTT_SS         2
#define VTD_PGTT_NESTED     3
#define VTD_PGTT_PT         4

/* first-stage (x86-64 format) entry bits */
#define VTD_FS_P            (1ULL << 0)
#define VTD_FS_RW           (1ULL << 1)
#define VTD_FS_US           (1ULL << 2)
#define VTD_FS_A            (1ULL << 5)
#define VTD_FS_D            (1ULL << 6)
#define VTD_FS_PS           (1ULL << 7)
#define VTD_FS_XD           (1ULL << 63)

/* scalable-mode fault reasons used by the tests */
#define VTD_FR_SM_TTM0_PASID    0x31
#define VTD_FR_SM_CONTEXT_PASIDE 0x45
#define VTD_FR_SM_PASID_DIR_INV 0x50
#define VTD_FR_SM_PASID_DIR_P   0x51
#define VTD_FR_SM_PASID_ENTRY_INV_ACCESS 0x58
#define VTD_FR_SM_PASID_ENTRY_P 0x59
#define VTD_FR_SM_PASID_ENTRY_SRE 0x5d
#define VTD_FR_SM_SS_ENTRY_P    0x79
#define VTD_FR_SM_FS_ENTRY_P    0x71
#define VTD_FR_SM_FS_USER       0x81

/* 256-bit descriptor types */
#define VTD_INV_PIOTLB      0x6
#define VTD_INV_PC          0x7
/* P_IOTLB granularity; PASID-cache granularity */
#define VTD_PIOTLB_PASID    2
#define VTD_PIOTLB_PAGE     3
#define VTD_PC_DOMAIN       0
#define VTD_PC_PASID        1
#define VTD_PC_GLOBAL       3

/* latch a scalable-mode root table (RTADDR.TTM = 01b) */
void vtd_sm_set_root_table(VtdGuest *g);
/*
 * Write the PASID-table entry of (sid, pasid): qw[0..7].  The context
 * entry (P, PDTS, PASID directory, RID_PASID 0), the directory entry and
 * the PASID table are created on first use.
 */
void vtd_sm_set_pasid_entry(VtdGuest *g, uint16_t sid, uint32_t pasid,
                            const uint64_t qw[8]);
/* GPA of (sid, pasid)'s PASID-table entry, creating the tables */
uint64_t vtd_sm_pasid_entry_gpa(VtdGuest *g, uint16_t sid, uint32_t pasid);
/* PASID-table entry words for each PGTT */
void vtd_sm_pe_second_stage(uint64_t qw[8], uint16_t did, VtdDomain *ss);
void vtd_sm_pe_first_stage(uint64_t qw[8], uint16_t did, uint64_t fs_top);
void vtd_sm_pe_nested(uint64_t qw[8], uint16_t did, uint64_t fs_top,
                      VtdDomain *ss);
void vtd_sm_pe_pass_through(uint64_t qw[8], uint16_t did);

/* first-stage 4-level tables: a top table, 4 KiB leaves */
uint64_t vtd_fs_new(VtdGuest *g);
/* map [iova, iova + size) to gpa, leaves with `flags` (P and US added) */
void vtd_fs_map(VtdGuest *g, uint64_t top, uint64_t iova, uint64_t gpa,
                uint64_t size, uint64_t flags);
/* GPA of the 4 KiB leaf entry of iova, or 0 */
uint64_t vtd_fs_leaf_gpa(VtdGuest *g, uint64_t top, uint64_t iova);

/* Queued invalidation with 256-bit descriptors (IQA.DW = 1) */
void vtd_qi_enable_dw(VtdGuest *g, unsigned qs);
/* a 256-bit descriptor: the first 128 bits as d, then w2, w3 */
void vtd_qi_push256(VtdGuest *g, VtdDesc d, uint64_t w2, uint64_t w3);
VtdDesc vtd_desc_pasid_cache(int gran, uint16_t did, uint32_t pasid);
VtdDesc vtd_desc_piotlb(int gran, uint16_t did, uint32_t pasid,
                        uint64_t addr, unsigned am, bool ih);

#endif
