// SPDX-License-Identifier: GPL-2.0-or-later
// Builders of the events the engine reports through VtdHostOps.event
// (include/viommu/vtd.h).  Each is called inside Host::event()'s lambda,
// so nothing is built when the host takes no events.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "iotlb.hpp"
#include "registers.hpp"
#include "root_context.hpp"
#include "viommu/vtd.h"

namespace viommu::vtd::ev {

inline VtdEvent context_miss(uint16_t sid, const ContextLookup &r)
{
    VtdEvent e{.kind = VTD_EVENT_CONTEXT_MISS, .u = {}};
    auto &m = e.u.context_miss;
    m.sid = sid;
    m.fault = static_cast<uint8_t>(r.fault);
    m.tt = static_cast<uint8_t>(r.ctx.tt);
    m.did = r.ctx.did;
    m.levels = r.ctx.levels;
    m.fpd = r.fpd;
    m.slptptr = r.ctx.slptptr;
    return e;
}

inline VtdEvent page_walk(uint16_t sid, uint16_t did, uint64_t addr, unsigned access,
                          unsigned first_level, unsigned levels_read, VtdFaultReason fault,
                          const Leaf &leaf)
{
    VtdEvent e{.kind = VTD_EVENT_PAGE_WALK, .u = {}};
    auto &w = e.u.page_walk;
    w.sid = sid;
    w.did = did;
    w.addr = addr;
    w.access = static_cast<uint8_t>(access);
    w.first_level = static_cast<uint8_t>(first_level);
    w.levels_read = static_cast<uint8_t>(levels_read);
    w.fault = static_cast<uint8_t>(fault);
    if (fault == VTD_FR_NONE) {
        w.leaf_level = leaf.level;
        w.perm = leaf.perm;
        w.phys = leaf.phys;
    }
    return e;
}

inline VtdEvent fault(uint16_t sid, uint64_t addr, VtdFaultReason reason, bool write,
                      uint8_t outcome)
{
    VtdEvent e{.kind = VTD_EVENT_FAULT, .u = {}};
    auto &f = e.u.fault;
    f.sid = sid;
    f.reason = static_cast<uint8_t>(reason);
    f.write = write;
    f.outcome = outcome;
    f.addr = addr;
    return e;
}

inline VtdEvent fault_record(VtdFaultOutcome outcome, size_t index,
                             const std::array<uint64_t, 2> &record)
{
    VtdEvent e{.kind = VTD_EVENT_FAULT_RECORD, .u = {}};
    auto &r = e.u.fault_record;
    r.outcome = static_cast<uint8_t>(outcome);
    r.index = static_cast<uint16_t>(index);
    r.record = {record[0], record[1]};
    return e;
}

// The granularity a descriptor encodes, by type: bits 5:4 of context-cache
// and IOTLB descriptors, G (bit 4) of an interrupt entry cache descriptor
// (global or index-selective); a device-IOTLB descriptor names one device.
inline VtdGranularity descriptor_granularity(uint64_t lo)
{
    switch (lo & 0xf) {
    case 1:
    case 2:
        return static_cast<VtdGranularity>(field(lo, 5, 4));
    case 3:
        return VTD_GRAN_SELECTIVE;
    case 4:
        return (lo & bit(4)) ? VTD_GRAN_SELECTIVE : VTD_GRAN_GLOBAL;
    }
    return VTD_GRAN_NONE;
}

inline VtdEvent descriptor(uint64_t index, uint64_t lo, uint64_t hi)
{
    VtdEvent e{.kind = VTD_EVENT_DESCRIPTOR, .u = {}};
    auto &d = e.u.descriptor;
    d.index = index;
    d.type = static_cast<uint8_t>(lo & 0xf);
    d.granularity = static_cast<uint8_t>(descriptor_granularity(lo));
    d.lo = lo;
    d.hi = hi;
    return e;
}

inline VtdEvent queue_run(uint64_t head, uint64_t tail, uint64_t entries, uint64_t base)
{
    VtdEvent e{.kind = VTD_EVENT_QUEUE_RUN, .u = {}};
    e.u.queue_run = {head, tail, entries, base};
    return e;
}

inline VtdEvent queue_error(VtdQueueErrorCause cause, uint64_t head, uint64_t tail,
                            const std::optional<std::array<uint64_t, 2>> &desc)
{
    VtdEvent e{.kind = VTD_EVENT_QUEUE_ERROR, .u = {}};
    auto &q = e.u.queue_error;
    q.fsts_bit = fsts::IQE;
    q.cause = static_cast<uint8_t>(cause);
    q.head = head;
    q.tail = tail;
    if (desc) {
        q.lo = (*desc)[0];
        q.hi = (*desc)[1];
    }
    return e;
}

inline VtdEvent wait(uint64_t lo, uint64_t status_addr, bool write_failed, uint8_t irq)
{
    VtdEvent e{.kind = VTD_EVENT_WAIT, .u = {}};
    auto &w = e.u.wait;
    w.status_write = lo & bit(5);
    w.interrupt = lo & bit(4);
    w.fence = lo & bit(6);
    w.write_failed = write_failed;
    w.irq = irq;
    w.status_data = static_cast<uint32_t>(lo >> 32);
    w.status_addr = status_addr;
    return e;
}

inline VtdEvent context_invalidation(bool queued, Granularity g, uint16_t did, uint16_t sid,
                                     uint16_t sid_mask, uint64_t dropped)
{
    VtdEvent e{.kind = VTD_EVENT_CONTEXT_INVALIDATION, .u = {}};
    auto &c = e.u.context_invalidation;
    c.source = queued ? VTD_INVAL_QUEUE : VTD_INVAL_REGISTER;
    c.granularity = static_cast<uint8_t>(g);
    c.did = did;
    c.sid = sid;
    c.sid_mask = sid_mask;
    c.dropped = dropped;
    return e;
}

inline VtdEvent iotlb_invalidation(bool queued, Granularity g, uint16_t did, uint64_t addr,
                                   uint8_t am, bool ih, uint64_t dropped)
{
    VtdEvent e{.kind = VTD_EVENT_IOTLB_INVALIDATION, .u = {}};
    auto &i = e.u.iotlb_invalidation;
    i.source = queued ? VTD_INVAL_QUEUE : VTD_INVAL_REGISTER;
    i.granularity = static_cast<uint8_t>(g);
    i.did = did;
    i.ih = ih;
    i.am = am;
    i.addr = addr;
    i.dropped = dropped;
    return e;
}

inline VtdEvent global_command(uint32_t command, uint32_t before, uint32_t after,
                               uint64_t root_table, uint64_t iqa)
{
    VtdEvent e{.kind = VTD_EVENT_GLOBAL_COMMAND, .u = {}};
    e.u.global_command = {command, before, after, root_table, iqa};
    return e;
}

inline VtdEvent cache_reset(VtdCacheResetReason reason)
{
    VtdEvent e{.kind = VTD_EVENT_CACHE_RESET, .u = {}};
    e.u.cache_reset.reason = static_cast<uint8_t>(reason);
    return e;
}

inline VtdEvent replay(uint16_t sid, const ContextLookup &cl, uint64_t start, uint64_t end,
                       uint64_t leaves, bool truncated)
{
    VtdEvent e{.kind = VTD_EVENT_REPLAY, .u = {}};
    auto &r = e.u.replay;
    r.sid = sid;
    r.did = cl.ctx.did;
    r.fault = static_cast<uint8_t>(cl.fault);
    r.pass_through = cl.fault == VTD_FR_NONE && cl.ctx.tt == TranslationType::PassThrough;
    r.truncated = truncated;
    r.start = start;
    r.end = end;
    r.leaves = leaves;
    return e;
}

}  // namespace viommu::vtd::ev
