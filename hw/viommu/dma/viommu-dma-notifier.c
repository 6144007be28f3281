/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-dma: x-map-notifier=on, a stand-in for device assignment's use of
 * an IOMMU.  Like VFIO, the device listens to its DMA address space and
 * registers a MAP and UNMAP notifier on every IOMMU region that appears
 * there, so that an IOMMU's handling of such notifiers (refusal included)
 * can be tested without a host device.  A refusal is reported with the
 * IOMMU's message and counted; MAP and UNMAP events are counted.  Nothing
 * of it is migrated or visible to the guest.
 */

#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "exec/memory.h"
#include "hw/pci/pci.h"
#include "viommu-dma-internal.h"

typedef struct VdmaIommuNotifier {
    IOMMUNotifier n;
    ViommuDmaState *s;
    IOMMUMemoryRegion *mr;
    QLIST_ENTRY(VdmaIommuNotifier) next;
} VdmaIommuNotifier;

static void vdma_iommu_event(IOMMUNotifier *n, IOMMUTLBEntry *entry)
{
    VdmaIommuNotifier *vn = container_of(n, VdmaIommuNotifier, n);

    if (entry->perm != IOMMU_NONE) {
        vn->s->map_events++;
    } else {
        vn->s->unmap_events++;
    }
}

static void vdma_region_add(MemoryListener *l, MemoryRegionSection *section)
{
    ViommuDmaState *s = container_of(l, ViommuDmaState, map_listener);
    VdmaIommuNotifier *vn;
    Error *err = NULL;
    hwaddr end;

    if (!memory_region_is_iommu(section->mr)) {
        return;
    }
    vn = g_new0(VdmaIommuNotifier, 1);
    vn->s = s;
    vn->mr = IOMMU_MEMORY_REGION(section->mr);
    end = section->offset_within_region + int128_get64(section->size) - 1;
    iommu_notifier_init(&vn->n, vdma_iommu_event, IOMMU_NOTIFIER_IOTLB_EVENTS,
                        section->offset_within_region, end,
                        memory_region_iommu_attrs_to_index(
                            vn->mr, MEMTXATTRS_UNSPECIFIED));
    if (memory_region_register_iommu_notifier(section->mr, &vn->n, &err)) {
        s->map_refusals++;
        error_reportf_err(err, "viommu-dma: MAP notifier refused: ");
        g_free(vn);
        return;
    }
    QLIST_INSERT_HEAD(&s->map_notifiers, vn, next);
    /* what is mapped already, as VFIO asks for it */
    memory_region_iommu_replay(vn->mr, &vn->n);
}

static void vdma_region_del(MemoryListener *l, MemoryRegionSection *section)
{
    ViommuDmaState *s = container_of(l, ViommuDmaState, map_listener);
    VdmaIommuNotifier *vn, *tmp;

    QLIST_FOREACH_SAFE(vn, &s->map_notifiers, next, tmp) {
        if (MEMORY_REGION(vn->mr) == section->mr &&
            vn->n.start == section->offset_within_region) {
            memory_region_unregister_iommu_notifier(section->mr, &vn->n);
            QLIST_REMOVE(vn, next);
            g_free(vn);
        }
    }
}

void viommu_dma_map_notifier_realize(ViommuDmaState *s)
{
    if (!s->map_notifier) {
        return;
    }
    QLIST_INIT(&s->map_notifiers);
    s->map_listener = (MemoryListener) {
        .name = "viommu-dma-map",
        .region_add = vdma_region_add,
        .region_del = vdma_region_del,
    };
    memory_listener_register(&s->map_listener,
                             pci_device_iommu_address_space(PCI_DEVICE(s)));
}

void viommu_dma_map_notifier_exit(ViommuDmaState *s)
{
    VdmaIommuNotifier *vn, *tmp;

    if (!s->map_notifier) {
        return;
    }
    memory_listener_unregister(&s->map_listener);
    QLIST_FOREACH_SAFE(vn, &s->map_notifiers, next, tmp) {
        memory_region_unregister_iommu_notifier(MEMORY_REGION(vn->mr), &vn->n);
        QLIST_REMOVE(vn, next);
        g_free(vn);
    }
}
