/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-vtd: declarations shared by the files of the QEMU glue.
 *
 *   viommu-vtd.c         the device: QOM type, properties, realize, reset,
 *                        migration, registers
 *   viommu-vtd-host.c    host services the engine calls: guest memory,
 *                        interrupts, time, prefetch
 *   viommu-vtd-events.c  the engine's events as trace events
 *   viommu-vtd-as.c      per-device address spaces, translate, IOMMU
 *                        notifiers and the invalidations pending for them
 *   viommu-vtd-ir.c      interrupt remapping: the interrupt window of each
 *                        address space, the IOAPIC's, KVM MSI routes
 */
#ifndef HW_VIOMMU_VIOMMU_VTD_INTERNAL_H
#define HW_VIOMMU_VIOMMU_VTD_INTERNAL_H

#include "exec/memory.h"
#include "qemu/interval-tree.h"
#include "hw/pci/pci.h"
#include "hw/pci/pci_bus.h"
#include "hw/pci-host/q35.h"
#include "viommu/vtd.h"
#include "viommu-vtd.h"

#define VIOMMU_VTD_MSI_BASE     0xfee00000ULL
#define VIOMMU_VTD_MSI_SIZE     0x100000ULL
#define VIOMMU_VTD_PENDING_MAX  32
/* The IOAPIC's source-id: the DMAR table's IOAPIC device scope (q35). */
#define VIOMMU_VTD_IOAPIC_SID   PCI_BUILD_BDF(Q35_PSEUDO_BUS_PLATFORM, \
                                              Q35_PSEUDO_DEVFN_IOAPIC)

typedef struct ViommuVtdAS ViommuVtdAS;

/*
 * What an address space was last decided from (viommu_vtd_as_refresh()),
 * as far as PASID-cache invalidations are concerned: those name a domain
 * (and a PASID), never a source-id, so the address spaces are indexed by
 * the domain of their RID_PASID entry.
 */
typedef enum ViommuVtdCtxKind {
    /* remapping off, a legacy-mode context, or an unusable scalable-mode
     * root or context entry: no PASID-cache invalidation changes it */
    VIOMMU_VTD_CTX_NONE,
    /* RID_PASID's PASID-table entry (ctx_did, ctx_pasid) */
    VIOMMU_VTD_CTX_PASID_ENTRY,
    /* RID_PASID's PASID directory or table entry unusable (not present,
     * reserved bits): any PASID-cache invalidation may change that */
    VIOMMU_VTD_CTX_PASID_FAULT,
} ViommuVtdCtxKind;

/* The address spaces whose RID_PASID entry is in one domain. */
typedef struct ViommuVtdDomainSpaces {
    QLIST_HEAD(, ViommuVtdAS) spaces;
} ViommuVtdDomainSpaces;

struct ViommuVtdAS {
    ViommuVtdState *s;
    PCIBus *bus;                    /* NULL once the bus went with its bridge */
    uint8_t devfn;
    bool bypass;                    /* nodmar alias in use, not the IOMMU MR */
    int32_t fixed_sid;              /* on a root bus: its fixed sid, else -1 */
    int32_t domain;                 /* last domain translate saw, -1 unknown */
    IOMMUNotifierFlag notifier_flags;
    QLIST_ENTRY(ViommuVtdAS) next;  /* in ViommuVtdState.notified */
    ViommuVtdCtxKind ctx_kind;
    uint16_t ctx_did;               /* CTX_PASID_ENTRY: domain and RID_PASID */
    uint32_t ctx_pasid;
    /* CTX_PASID_ENTRY: in by_domain[ctx_did]; CTX_PASID_FAULT: in
     * pasid_faulted */
    QLIST_ENTRY(ViommuVtdAS) ctx_next;
    uint64_t mark;                  /* viommu_vtd_process_pending()'s */
    IOMMUMemoryRegion iommu;
    MemoryRegion root;
    MemoryRegion nodmar;
    MemoryRegion msi;               /* interrupt window: alias, or IR */
    AddressSpace as;
    /* MAP notifiers: the leaves they were told (ViommuVtdMapped), valid
     * once the first of them was replayed */
    IntervalTreeRoot mapped;
    bool mapped_valid;
};

/*
 * One invalidation the engine reported, of any kind.  It selects address
 * spaces by source-id (those whose sid agrees with id outside mask; for
 * IOTLB invalidations, which name a domain, by the domain translate last
 * saw instead) and covers IOVAs [first, last].
 */
typedef struct ViommuVtdInv {
    bool all_domains;               /* IOTLB, PASID cache: every domain */
    bool all_pasids;                /* PASID cache: every PASID of `id` */
    uint16_t id;                    /* IOTLB, PASID cache: domain-id;
                                     * others: source-id */
    uint16_t mask;                  /* source-id bits that do not count */
    uint32_t pasid;                 /* PASID cache, unless all_pasids */
    hwaddr first, last;
} ViommuVtdInv;

typedef enum ViommuVtdInvKind {
    VIOMMU_VTD_INV_IOTLB,
    VIOMMU_VTD_INV_CONTEXT,
    VIOMMU_VTD_INV_DEVICE_IOTLB,
    VIOMMU_VTD_INV_PASID_CACHE,
    VIOMMU_VTD_INV_KINDS,
} ViommuVtdInvKind;

/*
 * Invalidations of one kind that the engine reports while it handles a
 * register write; acted on once the write returns, so that the engine is
 * never re-entered from its own callbacks.  An overflow degrades to "all".
 */
typedef struct ViommuVtdPending {
    ViommuVtdInv inv[VIOMMU_VTD_PENDING_MAX];
    unsigned n;
    bool all;
} ViommuVtdPending;

struct ViommuVtdClass {
    X86IOMMUClass parent_class;
    DeviceRealize parent_realize;
};

/* ECAP.PSS + 1 with x-pasid-mode=on: the PCIe PASID width. */
#define VIOMMU_VTD_PASID_BITS 20

/*
 * aw-bits=57: 5-level tables (SAGAW 57-bit, MGAW 57), beside intel-iommu's
 * 39 and 48.
 */
#define VIOMMU_VTD_AW_57BIT 57

struct ViommuVtdState {
    IntelIOMMUState parent_obj;

    VtdEngine *engine;
    MemoryRegion mmio;
    QEMUBH *queue_bh;               /* continues the invalidation queue */
    GHashTable *spaces;             /* ViommuVtdKey -> ViommuVtdAS */
    QLIST_HEAD(, ViommuVtdAS) notified;
    uint64_t mapped_leaves;         /* held for MAP notifiers, all spaces */
    /* address spaces by their RID_PASID entry (ViommuVtdCtxKind) */
    GHashTable *by_domain;          /* domain-id -> ViommuVtdDomainSpaces */
    QLIST_HEAD(, ViommuVtdAS) pasid_faulted;
    DeviceListener bridges;         /* forgets the buses of removed bridges */
    Notifier machine_done;          /* refuses device assignment without CM */
    uint64_t mark;                  /* viommu_vtd_process_pending()'s */
    bool dmar_enabled;
    ViommuVtdPending pending[VIOMMU_VTD_INV_KINDS];
    bool intremap;                  /* ECAP.IR: the windows remap */
    ViommuVtdAS *ioapic;            /* the IOAPIC's address space (IR) */
    /* interrupt-entry invalidations not yet told to the IEC notifiers */
    bool iec_pending, iec_global;
    uint16_t iec_index;
    uint8_t iec_mask;

    VtdState mig;                   /* engine state, only while migrating */

    uint32_t iotlb_entries;
    uint32_t context_entries;
    uint16_t fault_records;
    bool superpage_1g;
    OnOffAuto second_stage;         /* scalable mode: ECAP.SLTS */
    bool first_stage;               /* ECAP.FLTS offered (from x-flts) */
};

/*
 * A root bus has a fixed number, so its devices' source-ids are computed
 * once (pci_bus_num() is a QOM-checked call: too slow for every DMA);
 * behind a bridge the guest programs the bus number, so ask every time.
 */
static inline uint16_t viommu_vtd_sid(ViommuVtdAS *vas)
{
    if (vas->fixed_sid >= 0) {
        return vas->fixed_sid;
    }
    return PCI_BUILD_BDF(pci_bus_num(vas->bus), vas->devfn);
}

static inline uint64_t viommu_vtd_limit(ViommuVtdState *s)
{
    return (1ULL << s->parent_obj.aw_bits) - 1;
}

/* viommu-vtd-host.c */
extern const VtdHostOps viommu_vtd_host_ops;

/* viommu-vtd-events.c */
void viommu_vtd_event(void *opaque, const VtdEvent *ev);

/* viommu-vtd-as.c */
extern const PCIIOMMUOps viommu_vtd_pci_ops;
GHashTable *viommu_vtd_spaces_new(void);
void viommu_vtd_invalidated(void *opaque, bool all_domains,
                            uint16_t domain_id, uint64_t iova, uint64_t size);
void viommu_vtd_context_invalidated(void *opaque, bool all, uint16_t sid,
                                    uint16_t mask);
void viommu_vtd_device_iotlb_invalidated(void *opaque, uint16_t sid,
                                         uint16_t pfsid, uint8_t mip,
                                         uint64_t first, uint64_t last);
void viommu_vtd_pasid_cache_invalidated(void *opaque, uint8_t granularity,
                                        uint16_t domain_id, uint32_t pasid);
void viommu_vtd_process_pending(ViommuVtdState *s);
void viommu_vtd_resync(ViommuVtdState *s);
void viommu_vtd_iommu_mr_class_init(ObjectClass *oc, void *data);
ViommuVtdAS *viommu_vtd_as_new(ViommuVtdState *s, PCIBus *bus, int devfn,
                               int32_t fixed_sid, const char *name);
void viommu_vtd_device_unrealized(DeviceListener *listener, DeviceState *dev);

/* viommu-vtd-ir.c */
void viommu_vtd_apic_send(uint64_t addr, uint32_t data);
void viommu_vtd_ir_window_init(ViommuVtdAS *vas);
void viommu_vtd_ir_realize(ViommuVtdState *s, PCIBus *bus);
int viommu_vtd_int_remap(X86IOMMUState *iommu, MSIMessage *src,
                         MSIMessage *dst, uint16_t sid);
void viommu_vtd_interrupts_invalidated(void *opaque, bool global,
                                       uint16_t index, uint8_t index_mask);
void viommu_vtd_ir_process_pending(ViommuVtdState *s);

#endif
