/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-vtd engine: the C ABI between the C++20 VT-d engine and its host
 * (QEMU's QOM glue, unit tests, fuzzers, benchmarks).
 *
 * The engine models an Intel VT-d remapping unit in legacy mode and, when
 * configured, scalable mode (PASID tables; first-stage, second-stage,
 * nested and pass-through translation): the register file, root/context
 * tables, page walks,
 * IOTLB and context cache, register-based and queued invalidation, fault
 * recording and statistics.  It includes no QEMU header; guest memory,
 * interrupts and time reach it only through VtdHostOps.
 *
 * Threading: vtd_engine_translate() and vtd_engine_walk() may be called from
 * any number of threads at once, concurrently with each other and with one
 * thread doing MMIO.  MMIO, reset, get_state and set_state are serialized
 * by the caller (QEMU holds the BQL for them).  No function throws; errors
 * are return values.
 */
#ifndef VIOMMU_VTD_H
#define VIOMMU_VTD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Size of the register window at the remapping unit's base address. */
#define VTD_MMIO_SIZE 0x1000

typedef struct VtdEngine VtdEngine;
typedef struct VtdEvent VtdEvent; /* below, with the event kinds */

/* Access permissions, as a bit mask (IOMMU_RO/IOMMU_WO/IOMMU_RW in QEMU). */
enum {
    VTD_PERM_NONE  = 0,
    VTD_PERM_READ  = 1,
    VTD_PERM_WRITE = 2,
    VTD_PERM_RW    = 3,
};

/* Fault reasons (VT-d specification, "Non-recoverable Fault Reason Encodings"). */
typedef enum VtdFaultReason {
    VTD_FR_NONE                = 0x0,
    VTD_FR_ROOT_ENTRY_P        = 0x1, /* root entry not present */
    VTD_FR_CONTEXT_ENTRY_P     = 0x2, /* context entry not present */
    VTD_FR_CONTEXT_ENTRY_INV   = 0x3, /* invalid context entry programming */
    VTD_FR_ADDR_BEYOND_MGAW    = 0x4, /* input address above the address width */
    VTD_FR_WRITE               = 0x5, /* write to a page without write permission */
    VTD_FR_READ                = 0x6, /* read of a page without read permission */
    VTD_FR_PAGING_ENTRY_INV    = 0x7, /* error accessing a second-level entry */
    VTD_FR_ROOT_TABLE_INV      = 0x8, /* error accessing the root entry */
    VTD_FR_CONTEXT_TABLE_INV   = 0x9, /* error accessing the context entry */
    VTD_FR_ROOT_ENTRY_RSVD     = 0xa, /* reserved bit set in a present root entry */
    VTD_FR_CONTEXT_ENTRY_RSVD  = 0xb, /* reserved bit set in a present context entry */
    VTD_FR_PAGING_ENTRY_RSVD   = 0xc, /* reserved bit set in a second-level entry */
    VTD_FR_CONTEXT_ENTRY_TT    = 0xd, /* translation type blocked */
    VTD_FR_INTERRUPT_ADDR      = 0xe, /* translated address in the interrupt range */
    /* Interrupt-remapping faults ("Interrupt Remapping Fault Conditions"). */
    VTD_FR_IR_REQ_RSVD         = 0x20, /* reserved field set in a remappable request */
    VTD_FR_IR_INDEX_OVER       = 0x21, /* interrupt_index beyond the table size */
    VTD_FR_IR_ENTRY_P          = 0x22, /* IRTE not present */
    VTD_FR_IR_ROOT_INV         = 0x23, /* error accessing the interrupt-remapping table */
    VTD_FR_IR_IRTE_RSVD        = 0x24, /* reserved field or invalid programming in an IRTE */
    VTD_FR_IR_REQ_COMPAT       = 0x25, /* compatibility-format request blocked */
    VTD_FR_IR_SID_ERR          = 0x26, /* source-id verification failed */
    VTD_FR_IR_PID_INV          = 0x27, /* posted-interrupt descriptor access error */
    /* Scalable-mode faults (RTADDR.TTM = scalable, or a request with PASID). */
    VTD_FR_SM_RTADDR_INV       = 0x30, /* invalid root table address */
    VTD_FR_SM_TTM0_PASID       = 0x31, /* request with PASID while TTM is legacy mode */
    VTD_FR_SM_TTM0_PAGE_REQ    = 0x32, /* page request while TTM is legacy mode */
    VTD_FR_SM_ROOT_ENTRY_INV   = 0x38, /* error accessing the scalable-mode root entry */
    VTD_FR_SM_ROOT_ENTRY_P     = 0x39, /* LP/UP of the root entry clear */
    VTD_FR_SM_ROOT_ENTRY_RSVD  = 0x3a, /* reserved bit set in the root entry */
    VTD_FR_SM_CONTEXT_ENTRY_INV_ACCESS = 0x40, /* error accessing the context entry */
    VTD_FR_SM_CONTEXT_ENTRY_P  = 0x41, /* context entry not present */
    VTD_FR_SM_CONTEXT_ENTRY_RSVD = 0x42, /* reserved bit set in the context entry */
    VTD_FR_SM_CONTEXT_ENTRY_INV = 0x43, /* invalid context entry programming */
    VTD_FR_SM_CONTEXT_DTE      = 0x44, /* translation request while DTE is clear */
    VTD_FR_SM_CONTEXT_PASIDE   = 0x45, /* request with PASID while PASIDE is clear */
    VTD_FR_SM_PASID_BEYOND_PDTS = 0x46, /* PASID beyond the PASID directory (PDTS) */
    VTD_FR_SM_CONTEXT_PRE      = 0x47, /* page request while PRE is clear */
    VTD_FR_SM_RID_PASID_INV    = 0x48, /* RID_PASID beyond the supported PASID width */
    VTD_FR_SM_PASID_DIR_INV    = 0x50, /* error accessing the PASID directory entry */
    VTD_FR_SM_PASID_DIR_P      = 0x51, /* PASID directory entry not present */
    VTD_FR_SM_PASID_DIR_RSVD   = 0x52, /* reserved bit set in the PASID directory entry */
    VTD_FR_SM_PASID_ENTRY_INV_ACCESS = 0x58, /* error accessing the PASID-table entry */
    VTD_FR_SM_PASID_ENTRY_P    = 0x59, /* PASID-table entry not present */
    VTD_FR_SM_PASID_ENTRY_RSVD = 0x5a, /* reserved bit set in the PASID-table entry */
    VTD_FR_SM_PASID_ENTRY_INV  = 0x5b, /* invalid PASID-table entry (PGTT, AW, FSPM) */
    VTD_FR_SM_PASID_ENTRY_ERE  = 0x5c, /* execute request while ERE is clear */
    VTD_FR_SM_PASID_ENTRY_SRE  = 0x5d, /* supervisor request while SRE is clear */
    VTD_FR_SM_FS_ENTRY_INV     = 0x70, /* error accessing a first-stage entry */
    VTD_FR_SM_FS_ENTRY_P       = 0x71, /* first-stage entry not present */
    VTD_FR_SM_FS_ENTRY_RSVD    = 0x72, /* reserved bit set in a first-stage entry */
    VTD_FR_SM_FS_TOP_INV       = 0x73, /* error accessing the top first-stage entry (FSPTPTR) */
    VTD_FR_SM_NESTED_FS_BEYOND_AW = 0x74, /* nested: first-stage table beyond the second stage */
    VTD_FR_SM_NESTED_FS_TOP_READ = 0x75, /* nested: top first-stage table not readable */
    VTD_FR_SM_NESTED_FS_READ   = 0x76, /* nested: first-stage table not readable */
    VTD_FR_SM_NESTED_FS_WRITE  = 0x77, /* nested: first-stage table not writable (A/D update) */
    VTD_FR_SM_SS_ENTRY_INV     = 0x78, /* error accessing a second-stage entry */
    VTD_FR_SM_SS_ENTRY_P       = 0x79, /* second-stage entry not present (R and W clear) */
    VTD_FR_SM_SS_ENTRY_RSVD    = 0x7a, /* reserved bit set in a second-stage entry */
    VTD_FR_SM_SS_TOP_INV       = 0x7b, /* error accessing the top second-stage entry (SSPTPTR) */
    VTD_FR_SM_SS_AD_NO_SNOOP   = 0x7c, /* second-stage A/D update without snoop */
    VTD_FR_SM_FS_NON_CANONICAL = 0x80, /* input address not canonical for the first stage */
    VTD_FR_SM_FS_USER          = 0x81, /* user request to a supervisor (U/S clear) page */
    VTD_FR_SM_EXECUTE          = 0x82, /* execute request without execute permission */
    VTD_FR_SM_ADDR_BEYOND_AW   = 0x83, /* input address above the second stage's width */
    VTD_FR_SM_SS_OUTPUT_BEYOND = 0x84, /* second-stage output above the address width */
    VTD_FR_SM_WRITE            = 0x85, /* write without write permission */
    VTD_FR_SM_READ             = 0x86, /* read without read permission */
    VTD_FR_SM_INTERRUPT_ADDR   = 0x87, /* translated address in the interrupt range */
    VTD_FR_SM_FS_AD_NO_SNOOP   = 0x90, /* first-stage A/D update without snoop */
} VtdFaultReason;

/* Services the host gives the engine.  All callbacks are mandatory except
 * `invalidated`, `context_invalidated`, `now_ns`, `device_iotlb_invalidated`,
 * `prefetch`, `interrupts_invalidated`, `event`, `pasid_cache_invalidated`
 * and (without first-stage translation) `mem_cmpxchg64`. */
typedef struct VtdHostOps {
    /* The remapping unit's own accesses to guest physical memory (root and
     * context tables, page tables, the invalidation queue, wait status
     * writes).  Return 0 on success, non-zero if [gpa, gpa+len) is not
     * accessible RAM; the engine then reports the specified error and
     * never touches the buffer's contents as valid data. */
    int (*mem_read)(void *opaque, uint64_t gpa, void *buf, size_t len);
    int (*mem_write)(void *opaque, uint64_t gpa, const void *buf, size_t len);
    /* Deliver an interrupt message (fault event, invalidation event). */
    void (*msi)(void *opaque, uint64_t addr, uint32_t data);
    /* Translations cached for [iova, iova + size) of the devices in `domain_id`
     * (every domain when `all_domains`) were invalidated by the guest.  The
     * QEMU glue turns this into IOMMU UNMAP notifications.  May be NULL. */
    void (*invalidated)(void *opaque, bool all_domains, uint16_t domain_id,
                        uint64_t iova, uint64_t size);
    /* The context cache was invalidated for source-ids matching `sid & ~mask`
     * (every source-id when `all`): the glue re-evaluates those devices'
     * address spaces.  May be NULL. */
    void (*context_invalidated)(void *opaque, bool all, uint16_t sid, uint16_t sid_mask);
    /* Monotonic nanoseconds for latency statistics.  May be NULL. */
    uint64_t (*now_ns)(void *opaque);
    /* A device-IOTLB invalidate descriptor (ECAP.DT): the device-TLB of
     * source-id `sid` must drop what it holds for the untranslated range
     * [first, last] (inclusive; [0, UINT64_MAX] for the whole address
     * space).  `pfsid` is the descriptor's physical-function source-id
     * (that of an SR-IOV VF's PF; Linux puts the device's own there),
     * `max_pending` its MIP hint.  The QEMU glue turns this into
     * IOMMU_NOTIFIER_DEVIOTLB_UNMAP events (vhost's device IOTLB).  May be
     * NULL. */
    void (*device_iotlb_invalidated)(void *opaque, uint16_t sid, uint16_t pfsid,
                                     uint8_t max_pending, uint64_t first, uint64_t last);
    /* A hint: the engine expects to read [gpa, gpa + 8) soon (the
     * page-table entry of a translation that will probably miss the
     * IOTLB), so its cache line can start loading.  Must not fail, block
     * or touch anything but the CPU cache.  May be NULL. */
    void (*prefetch)(void *opaque, uint64_t gpa);
    /* What vtd_engine_remap_interrupt() answers may have changed: for the
     * 2^index_mask interrupt indexes from `index` (its low index_mask bits
     * clear) after an index-selective interrupt-entry-cache invalidation;
     * for every index and compatibility-format requests too (`global`)
     * after a global one, GCMD.SIRTP, or a change of GSTS.IRES or CFIS.
     * The QEMU glue rebuilds the interrupt routes (KVM MSI routes) it
     * derived from earlier answers.  May be NULL. */
    void (*interrupts_invalidated)(void *opaque, bool global, uint16_t index,
                                   uint8_t index_mask);

    /* What the engine does, as events (see VtdEvent): for tracing.  Called
     * only on the paths the events name (misses, walks, faults,
     * invalidations, the queue, commands), never for a translation that
     * hits the IOTLB, so a NULL hook costs one predictable branch there.
     * May run on any translating thread, sometimes with an engine lock
     * held: it must not call into the engine.  May be NULL. */
    void (*event)(void *opaque, const VtdEvent *ev);

    /* Atomically compare the 8 bytes at `gpa` with `expected` and, if equal,
     * replace them with `desired` (guest memory as a guest CPU's locked
     * cmpxchg sees it: QEMU's address_space_map plus qatomic_cmpxchg, or
     * the memory core's atomic ops).  `*found` receives the value that was
     * there.  Returns 0 on success (whether or not the values matched),
     * non-zero if [gpa, gpa + 8) is not RAM.  The engine sets the accessed
     * and dirty flags of first-stage entries with it; mandatory when
     * VtdConfig.first_stage is set, unused otherwise (may be NULL). */
    int (*mem_cmpxchg64)(void *opaque, uint64_t gpa, uint64_t expected, uint64_t desired,
                         uint64_t *found);

    /* A PASID-cache invalidation (scalable mode): the guest may have
     * changed the PASID-table entries of domain `domain_id`
     * (VTD_GRAN_DOMAIN), of PASID `pasid` in that domain
     * (VTD_GRAN_SELECTIVE: PASID-selective-within-domain), or of every
     * domain (VTD_GRAN_GLOBAL; `domain_id` and `pasid` are then 0).  The
     * descriptor names no source-id: software names the domain-id of the
     * entry as the unit may have cached it (the old entry's), and a
     * not-present entry is not tied to any domain.  The QEMU glue
     * re-evaluates the address spaces of the devices whose RID_PASID entry
     * it last resolved (vtd_engine_device_context()) in that domain and
     * PASID, and those whose RID_PASID entry was unusable.  May be NULL:
     * the engine then reports the invalidation as context_invalidated()
     * of every source-id. */
    void (*pasid_cache_invalidated)(void *opaque, uint8_t granularity /* VtdGranularity */,
                                    uint16_t domain_id, uint32_t pasid);

    /* The invalidations reported through the hooks above since the last
     * call must take effect in the host now.  Called before an invalidation
     * wait descriptor completes (its status write, its interrupt), and only
     * when such a hook ran since the last call, so that software that sees
     * the wait complete finds what the host derived from earlier answers
     * (notifiers, interrupt routes) updated as well.  Runs inside the
     * register write or queue slice that processes the wait: it may call
     * into the engine, but must not write its registers.  May be NULL. */
    void (*sync)(void *opaque);
} VtdHostOps;

/* Model parameters, fixed at creation; reflected in CAP/ECAP. */
typedef struct VtdConfig {
    uint8_t  aw_bits;          /* 39 or 48 (SAGAW 3- or 4-level); 57 if supported */
    bool     pass_through;     /* ECAP.PT */
    bool     caching_mode;     /* CAP.CM: not-present entries may be cached */
    bool     device_iotlb;     /* ECAP.DT: device-IOTLB invalidation descriptors */
    bool     superpage_1g;     /* CAP.SLLPS bit for 1 GiB (2 MiB is always on) */
    uint32_t iotlb_entries;    /* IOTLB capacity (entries); 0 = default */
    uint32_t context_entries;  /* context-cache capacity; 0 = default */
    uint16_t fault_records;    /* CAP.NFR + 1, 1..VTD_MAX_FAULT_RECORDS (224, what
                                * fits in the register page from FRO 0x200);
                                * 0 = default (8) */
    bool     intremap;         /* ECAP.IR: interrupt remapping */
    bool     eim;              /* ECAP.EIM: x2APIC (32-bit) destinations; needs intremap */
    bool     scalable_mode;    /* ECAP.SMTS: scalable-mode translation; also makes IQA.DW
                                * (256-bit invalidation descriptors) writable */
    /* What scalable mode offers; all off by default (legacy mode only).
     * Nested translation (ECAP.NEST) is offered when both stages are.
     * RTADDR.TTM may select scalable mode with scalable_mode. */
    bool     first_stage;      /* ECAP.FLTS: PGTT first-stage (x86-64 format tables);
                                * needs scalable_mode and VtdHostOps.mem_cmpxchg64 */
    bool     second_stage;     /* ECAP.SLTS: PGTT second-stage; needs scalable_mode */
    bool     fs1gp;            /* CAP.FS1GP: 1 GiB first-stage pages; needs first_stage */
    uint8_t  pasid_bits;       /* ECAP.PASID, ECAP.PSS = pasid_bits - 1 (1..20): requests
                                * with PASID; 0 = none.  Needs scalable_mode */
    bool     snoop_control;    /* ECAP.SC: SNP in second-level leaves and PGSNP honoured
                                * (every DMA snoops: nothing else changes) */
} VtdConfig;

/* Fill `cfg` with the defaults: 48-bit, PT on, CM off, DT off, 1 GiB pages
 * on, interrupt remapping off. */
void vtd_config_default(VtdConfig *cfg);

/* Create an engine.  Returns NULL and writes a one-line reason into `err`
 * (if non-NULL) when `cfg` is invalid. */
VtdEngine *vtd_engine_new(const VtdConfig *cfg, const VtdHostOps *ops, void *opaque,
                          char *err, size_t err_len);
void vtd_engine_free(VtdEngine *e);

/* Power-on / system reset: registers to their reset values, caches empty,
 * statistics kept (vtd_engine_stats_reset() clears them). */
void vtd_engine_reset(VtdEngine *e);

/* Register accesses, `offset` within [0, VTD_MMIO_SIZE), size 4 or 8.
 * Unknown or misaligned offsets read as 0 and ignore writes. */
uint64_t vtd_engine_mmio_read(VtdEngine *e, uint64_t offset, unsigned size);
void vtd_engine_mmio_write(VtdEngine *e, uint64_t offset, uint64_t value, unsigned size);

/* Queued invalidation works in bounded slices, so that no register write
 * holds its caller (QEMU: the BQL) for long, whatever the guest queued.  A
 * write that makes descriptors available (IQT, GCMD.QIE, clearing
 * FSTS.IQE) processes at most VTD_QUEUE_SLICE_DESCRIPTORS descriptors, and
 * none after the one with which the slice's IOTLB probes reach
 * VTD_QUEUE_SLICE_PROBES; IQH then names the first descriptor not yet
 * processed.  While vtd_engine_queue_pending() is true the host calls
 * vtd_engine_process_queue() (QEMU: from a bottom half), one slice per
 * call, which returns whether descriptors remain.  Descriptors complete in
 * queue order whatever the slicing; a wait descriptor's status write or
 * interrupt happens in the slice that reaches it. */
#define VTD_QUEUE_SLICE_DESCRIPTORS 128
#define VTD_QUEUE_SLICE_PROBES 16384
bool vtd_engine_queue_pending(VtdEngine *e);
bool vtd_engine_process_queue(VtdEngine *e);

/* The result of a translation: [iova_base, iova_base + addr_mask] maps to
 * [phys_base, phys_base + addr_mask] with `perm`. */
typedef struct VtdTranslation {
    uint64_t iova_base;
    uint64_t phys_base;
    uint64_t addr_mask;
    uint8_t  perm;
    uint16_t domain_id;
} VtdTranslation;

/* Translate a DMA request from source-id `sid` (bus << 8 | devfn) to `addr`
 * needing `access` (VTD_PERM_READ and/or VTD_PERM_WRITE; VTD_PERM_NONE asks
 * for whatever the mapping allows, as QEMU's notifier replay does).
 *
 * Returns VTD_FR_NONE and fills `out` on success.  Otherwise returns the
 * fault reason; when `record_fault` is true and the context does not set FPD
 * the fault is recorded and signalled as the specification requires.
 * With translation disabled (GSTS.TES clear) every address maps to itself
 * with VTD_PERM_RW. */
VtdFaultReason vtd_engine_translate(VtdEngine *e, uint16_t sid, uint64_t addr,
                                    unsigned access, bool record_fault,
                                    VtdTranslation *out);

/* Translate a request with PASID (a PASID TLP prefix) from `sid` for
 * `pasid` (below 2^VtdConfig.pasid_bits), `privileged` being the prefix's
 * privileged-mode-requested bit (a supervisor request).  Otherwise as
 * vtd_engine_translate(), which is a request without PASID: in scalable
 * mode that one uses the context entry's RID_PASID and user privilege.  In
 * legacy mode (RTADDR.TTM = 0) a request with PASID faults
 * (VTD_FR_SM_TTM0_PASID); with translation disabled it maps to itself.
 * Faults are recorded with the PASID. */
VtdFaultReason vtd_engine_translate_pasid(VtdEngine *e, uint16_t sid, uint32_t pasid,
                                          bool privileged, uint64_t addr, unsigned access,
                                          bool record_fault, VtdTranslation *out);

/* Whether DMA remapping is enabled (GSTS.TES) and, if so, whether `sid` is
 * currently in a pass-through context (so the host may bypass translation). */
bool vtd_engine_translation_enabled(VtdEngine *e);
bool vtd_engine_is_pass_through(VtdEngine *e, uint16_t sid);

/* How requests without PASID from a source-id are translated, as the
 * translate path resolves it now (through the context cache). */
typedef struct VtdDeviceContext {
    uint8_t  fault;        /* VtdFaultReason of the context; the fields below
                            * except pasid_entry_fault are valid when 0 */
    bool     pass_through; /* translation type / PGTT pass-through */
    bool     scalable;     /* scalable mode: `did` and `pasid` are those of
                            * RID_PASID's PASID-table entry */
    bool     pasid_entry_fault; /* scalable mode: `fault` is one of RID_PASID's
                                 * PASID-directory or PASID-table entry (50h-5Dh),
                                 * which a PASID-cache invalidation may cure */
    uint16_t did;          /* domain-id (legacy: the context entry's) */
    uint32_t pasid;        /* scalable mode: RID_PASID */
} VtdDeviceContext;

/* Fill `out` for `sid`.  Returns false, and `out` all zero, while DMA
 * remapping is disabled (GSTS.TES clear).  Records no fault.  May be called
 * from any thread, like vtd_engine_translate(). */
bool vtd_engine_device_context(VtdEngine *e, uint16_t sid, VtdDeviceContext *out);

/* Walk the present mappings of `sid` in [start, end), calling `cb` for each
 * leaf (for MAP-notifier replay) with what a request without PASID from
 * `sid` may do there.  Reads tables without touching the IOTLB, recording
 * faults or setting accessed/dirty flags.  Second-stage tables (legacy
 * mode, PGTT second-stage): every present leaf with its R/W.  First-stage
 * tables (PGTT first-stage, RID_PASID's entry): the leaves a user request
 * can use (U/S at every level), readable, and writable where R/W is set at
 * every level and the leaf's D flag is set.  Nested: those leaves'
 * output translated by the second stage, in pieces of the smaller page
 * size with both stages' permissions.  Malformed entries and tables that
 * cannot be read are skipped (their addresses would fault).  Leaves come
 * in increasing IOVA order.  At most 2^24 entries are read, so looping
 * tables end the walk.  Returns 0; VTD_WALK_TRUNCATED if that budget ended
 * it before `end` (every leaf below the last one reported was reported;
 * beyond it nothing is known); or a fault reason if the context itself is
 * unusable: its context or PASID entry (nothing to replay for pass-through
 * either), or, first-stage, a top table that cannot be read (73h; nested:
 * 74h, 75h or the second stage's fault). */
#define VTD_WALK_TRUNCATED (-1)
typedef void (*VtdWalkFn)(void *ctx, const VtdTranslation *t);
int vtd_engine_walk(VtdEngine *e, uint16_t sid, uint64_t start, uint64_t end,
                    VtdWalkFn cb, void *ctx);

/* Statistics (device-wide and per domain) as a JSON document; the schema is
 * in docs/statistics.rst.  Returns a malloc()ed NUL-terminated string that the
 * caller frees with free(). */
char *vtd_engine_stats_json(VtdEngine *e);
void vtd_engine_stats_reset(VtdEngine *e);

/* Host memory the engine holds for per-domain state (domain statistics, the
 * caches' per-domain invalidation epochs), in bytes.  It grows with the
 * domain-ids the guest uses: about 1 KiB per domain a device translates
 * in, and at most 4 bytes per domain-id per kind of invalidation that
 * names it (in chunks of 256 domain-ids); under 1 MiB when the guest names
 * every domain-id in invalidations. */
size_t vtd_engine_domain_state_bytes(VtdEngine *e);

/* IOMMU notifier events the host delivered to its devices' notifiers on the
 * engine's behalf (reported in the statistics' "notifications" section). */
typedef enum VtdNotifyKind {
    VTD_NOTIFY_UNMAP = 0,          /* IOMMU_NOTIFIER_UNMAP (IOTLB invalidation, context change) */
    VTD_NOTIFY_MAP = 1,            /* IOMMU_NOTIFIER_MAP (caching mode, replay) */
    VTD_NOTIFY_DEVIOTLB_UNMAP = 2, /* IOMMU_NOTIFIER_DEVIOTLB_UNMAP (device-IOTLB invalidation) */
} VtdNotifyKind;
void vtd_engine_count_notify(VtdEngine *e, VtdNotifyKind kind, uint64_t events);

/* Interrupt remapping (ECAP.IR).  The outcome of an interrupt request. */
typedef enum VtdIrResult {
    VTD_IR_REMAPPED = 0,      /* remapped through an IRTE: deliver `out` */
    VTD_IR_PASS_THROUGH = 1,  /* delivered unchanged: remapping disabled (GSTS.IRES
                               * clear), or a compatibility-format request while
                               * GSTS.CFIS is set and IRTA.EIME clear */
    VTD_IR_BLOCKED = 2,       /* blocked: `out.fault` holds the reason */
    VTD_IR_NOT_INTERRUPT = 3, /* `addr` is outside the interrupt address range
                               * 0xFEE00000..0xFEEFFFFF: not an interrupt */
} VtdIrResult;

/* The interrupt to deliver.  `addr` and `data` are an MSI message in
 * compatibility format that requests it: destination bits 7:0 in address
 * bits 19:12, destination bits 31:8 (x2APIC destinations only) in address
 * bits 63:40, redirection hint in bit 3, destination mode in bit 2; vector in
 * data bits 7:0, delivery mode in 10:8, level-triggered as data bits 15 and
 * 14 set.  The decoded fields say the same.  For a pass-through request
 * `addr` and `data` are the request's own and the decoded fields are 0. */
typedef struct VtdInterrupt {
    uint64_t addr;
    uint32_t data;
    uint32_t dest;          /* APIC destination: 8 bits (xAPIC) or 32 (IRTA.EIME) */
    uint8_t  vector;
    uint8_t  delivery_mode; /* 0 fixed, 1 lowest priority, 2 SMI, 4 NMI, 5 INIT, 7 ExtINT */
    bool     level;         /* trigger mode: level (true) or edge */
    bool     dest_logical;  /* destination mode: logical (true) or physical */
    bool     redir_hint;    /* redirection hint */
    uint16_t index;         /* interrupt_index of a remappable request */
    VtdFaultReason fault;   /* VTD_IR_BLOCKED: why; otherwise VTD_FR_NONE */
} VtdInterrupt;

/* Remap an interrupt request: a DWORD write of `data` to `addr` from
 * source-id `sid`.  Interrupt-remapping faults are recorded in the fault
 * recording registers when `record_fault` is true and the specification
 * does not let the IRTE's FPD suppress them (pass false when only asking,
 * e.g. to build a KVM MSI route).  Without ECAP.IR every interrupt passes
 * through.  May be called from any thread, like vtd_engine_translate(). */
VtdIrResult vtd_engine_remap_interrupt(VtdEngine *e, uint16_t sid, uint64_t addr, uint32_t data,
                                       bool record_fault, VtdInterrupt *out);

/* Migration: the architectural state of the remapping unit as a plain
 * struct, everything software can observe and the unit needs to go on
 * where it stopped.  Caches are not part of it: they refill from the
 * guest's tables.  Registers hold the values they read as, except FSTS
 * (below).  A host describes the struct field by field in its own
 * migration format (the QEMU glue: VMState).  The struct has no padding:
 * two states are equal when their bytes are. */
/* The most fault recording registers this unit has: CAP.NFR's 8 bits could
 * say 256, but the 16-byte registers follow CAP.FRO (0x200) inside the one
 * 4 KiB register page (VTD_MMIO_SIZE), so 224 fit; VtdConfig.fault_records
 * is 1..VTD_MAX_FAULT_RECORDS. */
#define VTD_MAX_FAULT_RECORDS 224

/* One fault recording register (FRCD), 128 bits. */
typedef struct VtdFaultRecord {
    uint64_t lo; /* bits 63:0: FI, the faulting page's address */
    uint64_t hi; /* bits 127:64: F, T, PV (the PASID), FR, PP (PASID present), SID */
} VtdFaultRecord;

typedef struct VtdState {
    /* The model: must equal the loading engine's (same configuration). */
    uint64_t cap;
    uint64_t ecap;
    /* Root table, register-based invalidation, queued invalidation. */
    uint64_t rtaddr;
    uint64_t root_table; /* the root-table address latched by GCMD.SRTP */
    uint64_t ccmd;
    uint64_t iva;
    uint64_t iotlb;
    uint64_t iqh;
    uint64_t iqt;
    uint64_t iqa;
    uint32_t gsts;
    /* Fault recording.  `fsts` holds PFO, IQE, ICE, ITE and FRI (the next
     * record to fill); PPF is derived from the records' F bits. */
    uint32_t fsts;
    uint32_t fectl;
    uint32_t fedata;
    uint32_t feaddr;
    uint32_t feuaddr;
    /* Invalidation completion status and event. */
    uint32_t ics;
    uint32_t iectl;
    uint32_t iedata;
    uint32_t ieaddr;
    uint32_t ieuaddr;
    uint32_t n_fault_records; /* CAP.NFR + 1; records beyond it are zero */
    VtdFaultRecord fault_records[VTD_MAX_FAULT_RECORDS];
    /* Interrupt remapping (ECAP.IR; both zero without it).  GSTS above
     * holds IRTPS, IRES and CFIS. */
    uint64_t irta;            /* the register */
    uint64_t irta_latched;    /* IRTA as of the last GCMD.SIRTP */
    /* Scalable mode (ECAP.SMTS; zero without it): IQERCD_REG as it reads,
     * the IQEI (3:0) of a pending FSTS.IQE.  ITE and ICE never occur (every
     * device-TLB invalidation completes at once), so ITESID and ICESID are
     * zero.  RTADDR.TTM, the latched TTM and IQA.DW are in the registers
     * above. */
    uint64_t iqercd;
    /* The record FSTS.FRI names while PPF is set: the oldest pending one
     * (zero with none pending).  `fsts`'s FRI, the next record to fill,
     * does not give it: turning TE and IRE off resets that index to 0
     * while older records stay pending. */
    uint32_t fault_oldest;
    uint32_t reserved; /* zero */
} VtdState;

/* Why vtd_engine_set_state() refused a state. */
typedef enum VtdStateError {
    VTD_STATE_OK = 0,
    VTD_STATE_BAD_MODEL,          /* CAP, ECAP or the number of fault records differ */
    VTD_STATE_BAD_GLOBAL,         /* GSTS, RTADDR or the latched root table */
    VTD_STATE_BAD_REGISTER_INVAL, /* CCMD, IVA or IOTLB */
    VTD_STATE_BAD_FAULTS,         /* FSTS, FECTL, FEDATA, FEADDR or a fault record */
    VTD_STATE_BAD_QUEUE,          /* IQH, IQT, IQA, ICS or the invalidation event registers */
    VTD_STATE_BAD_INTERRUPT_REMAPPING, /* IRTA or the latched IRTA */
} VtdStateError;

/* Fill `st` with the engine's architectural state (caller serializes, as
 * for MMIO). */
void vtd_engine_get_state(VtdEngine *e, VtdState *st);
/* Make `st` the engine's state, as if software had programmed it; caches
 * start empty.  A state the unit could never be in (a register value it
 * could not hold, another model) is refused with the reason, and the engine
 * is left as it was. */
VtdStateError vtd_engine_set_state(VtdEngine *e, const VtdState *st);
/* A one-line description of `err`. */
const char *vtd_state_error_str(VtdStateError err);

/* Events: what the engine did, reported through VtdHostOps.event. */
typedef enum VtdEventKind {
    VTD_EVENT_CONTEXT_MISS = 0,      /* context cache miss: the entries read */
    VTD_EVENT_PAGE_WALK,             /* IOTLB miss and the walk that followed */
    VTD_EVENT_FAULT,                 /* a translation faulted */
    VTD_EVENT_FAULT_RECORD,          /* what fault recording did with it */
    VTD_EVENT_DESCRIPTOR,            /* an invalidation descriptor fetched */
    VTD_EVENT_QUEUE_RUN,             /* the queue starts processing */
    VTD_EVENT_QUEUE_ERROR,           /* the queue stopped with an error */
    VTD_EVENT_WAIT,                  /* an invalidation wait descriptor executed */
    VTD_EVENT_CONTEXT_INVALIDATION,  /* context-cache invalidation done */
    VTD_EVENT_IOTLB_INVALIDATION,    /* IOTLB invalidation done */
    VTD_EVENT_GLOBAL_COMMAND,        /* a write of GCMD */
    VTD_EVENT_CACHE_RESET,           /* both caches emptied */
    VTD_EVENT_REPLAY,                /* a replay walk (vtd_engine_walk) */
} VtdEventKind;

/* Invalidation granularity, as CCMD, IOTLB and descriptors encode it.
 * SELECTIVE: device (context cache), page range (IOTLB), interrupt
 * entry index (IEC), one device (device-IOTLB). */
typedef enum VtdGranularity {
    VTD_GRAN_NONE = 0, /* wait descriptors; invalid requests */
    VTD_GRAN_GLOBAL = 1,
    VTD_GRAN_DOMAIN = 2,
    VTD_GRAN_SELECTIVE = 3,
} VtdGranularity;

/* Where an invalidation request came from. */
typedef enum VtdInvalSource {
    VTD_INVAL_REGISTER = 0, /* CCMD, IOTLB register */
    VTD_INVAL_QUEUE = 1,    /* a descriptor */
} VtdInvalSource;

typedef enum VtdFaultOutcome {
    VTD_FAULT_RECORDED = 0,  /* into record `index` */
    VTD_FAULT_COLLAPSED,     /* into pending record `index` (same sid, page, reason, type) */
    VTD_FAULT_OVERFLOW,      /* dropped: FSTS.PFO set, or the next record busy */
    VTD_FAULT_SUPPRESSED,    /* not offered to recording: the context sets FPD */
    VTD_FAULT_NOT_REQUESTED, /* not offered: the caller asked for no recording */
} VtdFaultOutcome;

typedef enum VtdQueueErrorCause {
    VTD_QERR_TAIL = 0,       /* IQT (or IQH) beyond the queue */
    VTD_QERR_UNREADABLE = 1, /* the descriptor at IQH is not readable RAM */
    VTD_QERR_DESCRIPTOR = 2, /* invalid or unsupported descriptor at IQH */
} VtdQueueErrorCause;

typedef enum VtdCacheResetReason {
    VTD_CACHE_RESET_RESET = 0,      /* vtd_engine_reset / vtd_engine_set_state */
    VTD_CACHE_RESET_ROOT_TABLE = 1, /* GCMD.SRTP latched a root table */
} VtdCacheResetReason;

typedef struct VtdEventContextMiss {
    uint16_t sid;
    uint8_t fault;   /* VtdFaultReason; the rest is valid when 0 */
    uint8_t tt;      /* translation type (2: pass-through) */
    uint16_t did;
    uint8_t levels;  /* 0 for pass-through */
    bool fpd;
    uint64_t slptptr;
} VtdEventContextMiss;

typedef struct VtdEventPageWalk {
    uint16_t sid;
    uint16_t did;
    uint64_t addr;
    uint8_t access;      /* VTD_PERM_* asked for */
    uint8_t first_level; /* top level, or 1 from a cached level-1 table */
    uint8_t levels_read; /* entries read: first_level down to the last */
    uint8_t leaf_level;  /* 1 (4 KiB), 2 (2 MiB), 3 (1 GiB); 0 on a fault */
    uint8_t fault;       /* VtdFaultReason */
    uint8_t perm;        /* of the leaf */
    uint64_t phys;       /* of the leaf */
} VtdEventPageWalk;

typedef struct VtdEventFault {
    uint16_t sid;
    uint8_t reason; /* VtdFaultReason */
    bool write;
    uint8_t outcome; /* VTD_FAULT_SUPPRESSED, _NOT_REQUESTED, or 0: offered */
    uint64_t addr;
} VtdEventFault;

typedef struct VtdEventFaultRecord {
    uint8_t outcome; /* VTD_FAULT_RECORDED, _COLLAPSED, _OVERFLOW */
    uint16_t index; /* the record; for an overflow, the busy next one */
    VtdFaultRecord record;
} VtdEventFaultRecord;

typedef struct VtdEventDescriptor {
    uint64_t index;      /* position in the queue (IQH / 16) */
    uint8_t type;        /* bits 3:0: 1 context, 2 IOTLB, 3 device-IOTLB, 4 IEC, 5 wait */
    uint8_t granularity; /* VtdGranularity, as the descriptor encodes it */
    uint64_t lo, hi;
} VtdEventDescriptor;

typedef struct VtdEventQueueRun {
    uint64_t head, tail; /* descriptor indices */
    uint64_t entries;    /* queue size */
    uint64_t base;
} VtdEventQueueRun;

typedef struct VtdEventQueueError {
    uint32_t fsts_bit; /* FSTS.IQE (ICE and ITE are never raised) */
    uint8_t cause;     /* VtdQueueErrorCause */
    uint64_t head, tail;
    uint64_t lo, hi; /* the descriptor, for VTD_QERR_DESCRIPTOR */
} VtdEventQueueError;

typedef struct VtdEventWait {
    bool status_write;
    bool interrupt;
    bool fence;
    bool write_failed;
    uint8_t irq; /* with `interrupt`: 0 sent, 1 pending (IECTL.IM), 2 ICS.IWC already set */
    uint32_t status_data;
    uint64_t status_addr;
} VtdEventWait;

typedef struct VtdEventContextInvalidation {
    uint8_t source;      /* VtdInvalSource */
    uint8_t granularity; /* VtdGranularity */
    uint16_t did;
    uint16_t sid;
    uint16_t sid_mask; /* source-id bits ignored (FM) */
    uint64_t dropped;  /* cached contexts dropped (selective only) */
} VtdEventContextInvalidation;

typedef struct VtdEventIotlbInvalidation {
    uint8_t source;
    uint8_t granularity;
    uint16_t did;
    bool ih;
    uint8_t am;
    uint64_t addr;    /* page-selective: first page */
    uint64_t dropped; /* IOTLB entries dropped (page-selective only) */
} VtdEventIotlbInvalidation;

typedef struct VtdEventGlobalCommand {
    uint32_t command; /* the value written to GCMD */
    uint32_t status_before, status_after; /* GSTS */
    uint64_t root_table; /* latched (with GCMD.SRTP) */
    uint64_t iqa;        /* IQA (when GSTS.QIES changes) */
} VtdEventGlobalCommand;

typedef struct VtdEventCacheReset {
    uint8_t reason; /* VtdCacheResetReason */
} VtdEventCacheReset;

typedef struct VtdEventReplay {
    uint16_t sid;
    uint16_t did;
    uint8_t fault; /* of the context: nothing replayed */
    bool pass_through;
    bool truncated; /* entry budget spent */
    uint64_t start, end;
    uint64_t leaves;
} VtdEventReplay;

struct VtdEvent {
    VtdEventKind kind;
    union {
        VtdEventContextMiss context_miss;
        VtdEventPageWalk page_walk;
        VtdEventFault fault;
        VtdEventFaultRecord fault_record;
        VtdEventDescriptor descriptor;
        VtdEventQueueRun queue_run;
        VtdEventQueueError queue_error;
        VtdEventWait wait;
        VtdEventContextInvalidation context_invalidation;
        VtdEventIotlbInvalidation iotlb_invalidation;
        VtdEventGlobalCommand global_command;
        VtdEventCacheReset cache_reset;
        VtdEventReplay replay;
    } u;
};

#ifdef __cplusplus
}
#endif

#endif /* VIOMMU_VTD_H */
