/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-vtd: the engine's events (VtdHostOps.event) as trace events.
 *
 * The engine reports an event only on the paths it names: context and
 * IOTLB misses, page walks, faults, descriptors and queue errors,
 * invalidations, commands, cache resets and replay walks; never for a
 * translation that hits.  Each event becomes one or two trace_viommu_vtd_*
 * points (hw/viommu/trace-events), which cost a test of their state when
 * tracing is off.  docs/viommu-vtd.rst lists them beside intel-iommu's.
 */

#include "qemu/osdep.h"
#include "viommu-vtd-internal.h"
#include "trace.h"

#define VIOMMU_VTD_GSTS_SRTP    (1u << 30)
#define VIOMMU_VTD_GSTS_QIES    (1u << 26)

static const char *viommu_vtd_desc_name(unsigned type)
{
    static const char *const names[] = {
        [1] = "context", [2] = "iotlb", [3] = "device-iotlb",
        [4] = "iec", [5] = "wait", [6] = "pasid-iotlb", [7] = "pasid-cache",
        [8] = "pasid-device-iotlb",
    };

    return type < ARRAY_SIZE(names) && names[type] ? names[type] : "invalid";
}

static const char *viommu_vtd_gran_name(unsigned type, unsigned gran)
{
    switch (gran) {
    case VTD_GRAN_GLOBAL:
        return "global";
    case VTD_GRAN_DOMAIN:
        return "domain";
    case VTD_GRAN_SELECTIVE:
        return type == 1 ? "device" : type == 2 ? "page" :
               type == 4 ? "index" : "selective";
    }
    return "-";
}

/*
 * A fetched descriptor's granularity; the scalable-mode P_IOTLB and
 * PASID-cache ones have their own field (bits 5:4), which the engine's
 * VtdGranularity does not name.
 */
static const char *viommu_vtd_desc_gran(const VtdEventDescriptor *d)
{
    static const char *const pasid_iotlb[] = { "-", "-", "pasid", "page" };
    static const char *const pasid_cache[] = {
        "domain", "pasid", "-", "global",
    };

    switch (d->type) {
    case 6:
        return pasid_iotlb[(d->lo >> 4) & 3];
    case 7:
        return pasid_cache[(d->lo >> 4) & 3];
    }
    return viommu_vtd_gran_name(d->type, d->granularity);
}

static const char *viommu_vtd_source_name(unsigned source)
{
    return source == VTD_INVAL_QUEUE ? "queue" : "register";
}

static const char *viommu_vtd_fault_outcome(unsigned outcome)
{
    switch (outcome) {
    case VTD_FAULT_RECORDED:
        return "recorded";
    case VTD_FAULT_COLLAPSED:
        return "collapsed";
    case VTD_FAULT_OVERFLOW:
        return "overflow";
    case VTD_FAULT_SUPPRESSED:
        return "suppressed (FPD)";
    case VTD_FAULT_NOT_REQUESTED:
        return "not recorded (replay or probe)";
    }
    return "?";
}

static const char *viommu_vtd_qerr_cause(unsigned cause)
{
    switch (cause) {
    case VTD_QERR_TAIL:
        return "tail beyond the queue";
    case VTD_QERR_UNREADABLE:
        return "descriptor not readable";
    case VTD_QERR_DESCRIPTOR:
        return "invalid descriptor";
    }
    return "?";
}

static const char *viommu_vtd_wait_irq(const VtdEventWait *w)
{
    if (!w->interrupt) {
        return "none";
    }
    return w->irq == 0 ? "sent" : w->irq == 1 ? "pending (IECTL.IM)" :
           "ICS.IWC already set";
}

static void viommu_vtd_event_command(const VtdEventGlobalCommand *g)
{
    trace_viommu_vtd_gcmd(g->command, g->status_before, g->status_after);
    if (g->command & VIOMMU_VTD_GSTS_SRTP) {
        trace_viommu_vtd_root_table(g->root_table);
    }
    if ((g->status_before ^ g->status_after) & VIOMMU_VTD_GSTS_QIES) {
        trace_viommu_vtd_qi_enable(!!(g->status_after & VIOMMU_VTD_GSTS_QIES),
                                   g->iqa & ~0xfffULL,
                                   /* IQA.DW (bit 11): 256-bit entries */
                                   (256u << (g->iqa & 7)) >>
                                   ((g->iqa >> 11) & 1));
    }
}

void viommu_vtd_event(void *opaque, const VtdEvent *ev)
{
    switch (ev->kind) {
    case VTD_EVENT_CONTEXT_MISS: {
        const VtdEventContextMiss *m = &ev->u.context_miss;

        trace_viommu_vtd_context_miss(m->sid, m->fault, m->tt, m->did,
                                      m->levels, m->slptptr, m->fpd);
        break;
    }
    case VTD_EVENT_PAGE_WALK: {
        const VtdEventPageWalk *w = &ev->u.page_walk;

        trace_viommu_vtd_iotlb_miss(w->sid, w->did, w->addr, w->access);
        trace_viommu_vtd_page_walk(w->sid, w->did, w->addr, w->first_level,
                                   w->levels_read, w->leaf_level, w->fault,
                                   w->phys, w->perm);
        break;
    }
    case VTD_EVENT_FAULT: {
        const VtdEventFault *f = &ev->u.fault;

        trace_viommu_vtd_fault(f->sid, f->addr, f->reason, f->write,
                               f->outcome ? viommu_vtd_fault_outcome(f->outcome)
                                          : "offered to recording");
        break;
    }
    case VTD_EVENT_FAULT_RECORD: {
        const VtdEventFaultRecord *r = &ev->u.fault_record;

        trace_viommu_vtd_fault_record(viommu_vtd_fault_outcome(r->outcome),
                                      r->index, r->record.hi, r->record.lo);
        break;
    }
    case VTD_EVENT_DESCRIPTOR: {
        const VtdEventDescriptor *d = &ev->u.descriptor;

        trace_viommu_vtd_qi_desc(d->index, viommu_vtd_desc_name(d->type),
                                 viommu_vtd_desc_gran(d),
                                 d->hi, d->lo);
        break;
    }
    case VTD_EVENT_QUEUE_RUN: {
        const VtdEventQueueRun *q = &ev->u.queue_run;

        trace_viommu_vtd_qi_run(q->head, q->tail, q->entries, q->base);
        break;
    }
    case VTD_EVENT_QUEUE_ERROR: {
        const VtdEventQueueError *q = &ev->u.queue_error;

        trace_viommu_vtd_qi_error(q->fsts_bit,
                                  viommu_vtd_qerr_cause(q->cause),
                                  q->head, q->tail, q->hi, q->lo);
        break;
    }
    case VTD_EVENT_WAIT: {
        const VtdEventWait *w = &ev->u.wait;

        trace_viommu_vtd_qi_wait(w->status_write, w->status_addr,
                                 w->status_data, w->write_failed,
                                 viommu_vtd_wait_irq(w), w->fence);
        break;
    }
    case VTD_EVENT_CONTEXT_INVALIDATION: {
        const VtdEventContextInvalidation *c = &ev->u.context_invalidation;

        trace_viommu_vtd_cc_inv(viommu_vtd_source_name(c->source),
                                viommu_vtd_gran_name(1, c->granularity),
                                c->did, c->sid, c->sid_mask, c->dropped);
        break;
    }
    case VTD_EVENT_IOTLB_INVALIDATION: {
        const VtdEventIotlbInvalidation *i = &ev->u.iotlb_invalidation;

        trace_viommu_vtd_iotlb_inv(viommu_vtd_source_name(i->source),
                                   viommu_vtd_gran_name(2, i->granularity),
                                   i->did, i->addr, i->am, i->ih, i->dropped);
        break;
    }
    case VTD_EVENT_GLOBAL_COMMAND:
        viommu_vtd_event_command(&ev->u.global_command);
        break;
    case VTD_EVENT_CACHE_RESET:
        trace_viommu_vtd_cache_reset(ev->u.cache_reset.reason ==
                                     VTD_CACHE_RESET_ROOT_TABLE ?
                                     "root table latched" : "reset");
        break;
    case VTD_EVENT_REPLAY: {
        const VtdEventReplay *r = &ev->u.replay;

        trace_viommu_vtd_replay_walk(r->sid, r->did, r->start, r->end,
                                     r->leaves, r->truncated, r->fault,
                                     r->pass_through);
        break;
    }
    }
}
