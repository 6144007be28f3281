// SPDX-License-Identifier: GPL-2.0-or-later
#include "invalidation_queue.hpp"

#include <bit>

#include "events.hpp"
#include "iotlb.hpp"

namespace viommu::vtd {

namespace desc {
constexpr unsigned CONTEXT = 1, IOTLB = 2, DEVICE_IOTLB = 3, IEC = 4, WAIT = 5;

constexpr uint64_t CC_LO_RSVD = mask(15, 6) | mask(63, 50);
constexpr uint64_t IOTLB_LO_DW = bit(6), IOTLB_LO_DR = bit(7);
constexpr uint64_t IOTLB_LO_RSVD = mask(15, 8) | mask(63, 32);
constexpr uint64_t IOTLB_HI_IH = bit(6), IOTLB_HI_RSVD = mask(11, 7);
constexpr uint64_t DIOTLB_LO_RSVD = mask(11, 4) | mask(31, 21) | mask(51, 48);
constexpr uint64_t DIOTLB_HI_RSVD = mask(11, 1);
constexpr uint64_t DIOTLB_HI_S = bit(0), DIOTLB_HI_ADDR = mask(63, 12);
constexpr uint64_t IEC_LO_G = bit(4), IEC_LO_RSVD = mask(26, 5) | mask(63, 48);
constexpr uint64_t WAIT_IF = bit(4), WAIT_SW = bit(5), WAIT_FN = bit(6);
constexpr uint64_t WAIT_LO_RSVD = mask(31, 7);  // PD (bit 7) needs ECAP.PRS
constexpr uint64_t WAIT_HI_RSVD = mask(1, 0);
}  // namespace desc

static constexpr uint32_t EVENT_DATA_MASK = 0xffff;
static constexpr uint32_t EVENT_ADDR_MASK = ~3u;
static constexpr uint64_t IQA_WRITABLE = iq::IQA_BASE | iq::IQA_QS;

void InvalidationQueue::reset()
{
    enabled_ = false;
    iqh_ = iqt_ = iqa_ = 0;
    ics_ = 0;
    iectl_ = ECTL_IM;
    iedata_ = ieaddr_ = ieuaddr_ = 0;
}

bool InvalidationQueue::handles(uint32_t offset) const
{
    return offset >= reg::IQH && offset <= reg::IEUADDR;
}

static uint32_t half(uint64_t v, uint32_t offset)
{
    return (offset & 4) ? v >> 32 : static_cast<uint32_t>(v);
}

static uint64_t with_half(uint64_t v, uint32_t offset, uint32_t value)
{
    return (offset & 4) ? (v & 0xffffffffull) | uint64_t{value} << 32
                        : (v & ~0xffffffffull) | value;
}

uint32_t InvalidationQueue::read32(uint32_t offset) const
{
    switch (offset & ~4u) {
    case reg::IQH:
        return half(iqh_, offset);
    case reg::IQT:
        return half(iqt_, offset);
    case reg::IQA:
        return half(iqa_, offset);
    }
    switch (offset) {
    case reg::ICS:
        return ics_;
    case reg::IECTL:
        return iectl_;
    case reg::IEDATA:
        return iedata_;
    case reg::IEADDR:
        return ieaddr_;
    case reg::IEUADDR:
        return ieuaddr_;
    }
    return 0;
}

void InvalidationQueue::write32(uint32_t offset, uint32_t value)
{
    switch (offset) {
    case reg::IQT:
        iqt_ = value & iq::IQT_QT;
        process();
        return;
    case reg::IQA:
    case reg::IQA + 4:
        iqa_ = with_half(iqa_, offset, value) & IQA_WRITABLE;
        return;
    case reg::ICS:
        if (value & ICS_IWC) {
            ics_ &= ~ICS_IWC;
            iectl_ &= ~ECTL_IP;
        }
        return;
    case reg::IECTL:
        if ((iectl_ & ECTL_IM) && !(value & ECTL_IM) && (iectl_ & ECTL_IP)) {
            iectl_ &= ~ECTL_IP;
            stats_.add(Counter::InvalidationEvents);
            host_.msi(uint64_t{ieuaddr_} << 32 | ieaddr_, iedata_);
        }
        iectl_ = (iectl_ & ~ECTL_IM) | (value & ECTL_IM);
        return;
    case reg::IEDATA:
        iedata_ = value & EVENT_DATA_MASK;
        return;
    case reg::IEADDR:
        ieaddr_ = value & EVENT_ADDR_MASK;
        return;
    case reg::IEUADDR:
        ieuaddr_ = value;
        return;
    }
    // IQH is read-only; the other dwords are reserved.
}

void InvalidationQueue::set_enabled(bool on)
{
    if (on == enabled_)
        return;
    enabled_ = on;
    if (!on)
        iqh_ = 0;  // the head resets whenever queued invalidation is disabled
    else
        process();
}

bool InvalidationQueue::pending() const
{
    return enabled_ && iqh_ != iqt_ && !(faults_.fsts() & fsts::IQE);
}

static_assert(VTD_QUEUE_SLICE_PROBES > Iotlb::MAX_PAGE_PROBES);

bool InvalidationQueue::process()
{
    if (!enabled_ || (faults_.fsts() & fsts::IQE))
        return false;
    const uint64_t n = entries();
    uint64_t head = iqh_ >> iq::DESC_SHIFT;
    const uint64_t tail = iqt_ >> iq::DESC_SHIFT;
    if (tail >= n || head >= n) {
        stats_.add(Counter::QiTailErrors);
        host_.event([&] { return ev::queue_error(VTD_QERR_TAIL, head, tail, std::nullopt); });
        faults_.set_status(fsts::IQE);
        return false;
    }
    const uint64_t base = iqa_ & iq::IQA_BASE;
    if (head != tail)
        host_.event([&] { return ev::queue_run(head, tail, n, base); });
    unsigned done = 0;
    uint64_t probes = 0;
    while (head != tail) {
        if (done == VTD_QUEUE_SLICE_DESCRIPTORS ||
            probes > VTD_QUEUE_SLICE_PROBES - Iotlb::MAX_PAGE_PROBES) {
            stats_.add(Counter::QiSlicesDeferred);
            return true;
        }
        uint64_t start = host_.has_clock() ? host_.now_ns() : 0;
        auto d = host_.read_u128(base + (head << iq::DESC_SHIFT));
        if (d)
            host_.event([&] { return ev::descriptor(head, (*d)[0], (*d)[1]); });
        if (!d || !execute((*d)[0], (*d)[1], probes)) {
            stats_.add(Counter::QiInvalidDescriptors);
            host_.event([&] {
                return ev::queue_error(d ? VTD_QERR_DESCRIPTOR : VTD_QERR_UNREADABLE, head, tail,
                                       d);
            });
            faults_.set_status(fsts::IQE);
            return false;
        }
        if (host_.has_clock())
            stats_.latency(host_.now_ns() - start);
        head = (head + 1) % n;
        iqh_ = head << iq::DESC_SHIFT;
        done++;
    }
    return false;
}

bool InvalidationQueue::execute(uint64_t lo, uint64_t hi, uint64_t &probes)
{
    const unsigned type = lo & 0xf;
    switch (type) {
    case desc::CONTEXT: {
        auto g = static_cast<Granularity>(field(lo, 5, 4));
        if ((lo & desc::CC_LO_RSVD) || hi || g == Granularity::Invalid)
            return false;
        stats_.descriptor(type);
        target_.invalidate_context({g, static_cast<uint16_t>(field(lo, 31, 16)),
                                    static_cast<uint16_t>(field(lo, 47, 32)),
                                    static_cast<uint8_t>(field(lo, 49, 48))});
        return true;
    }
    case desc::IOTLB: {
        auto g = static_cast<Granularity>(field(lo, 5, 4));
        uint8_t am = g == Granularity::Selective ? field(hi, 5, 0) : 0;
        if ((lo & desc::IOTLB_LO_RSVD) || (hi & desc::IOTLB_HI_RSVD) || g == Granularity::Invalid ||
            (g == Granularity::Selective && am > f_.mamv))
            return false;
        stats_.descriptor(type);
        probes += target_.invalidate_iotlb({g, static_cast<uint16_t>(field(lo, 31, 16)),
                                            hi & mask(63, PAGE_SHIFT + am), am,
                                            (hi & desc::IOTLB_HI_IH) != 0});
        return true;
    }
    case desc::DEVICE_IOTLB:
        return device_iotlb(lo, hi);
    case desc::IEC:
        if ((lo & desc::IEC_LO_RSVD) || hi)
            return false;
        stats_.descriptor(type);
        stats_.add(Counter::InterruptEntryCache);
        target_.invalidate_interrupt_entries({!(lo & desc::IEC_LO_G),
                                              static_cast<uint16_t>(field(lo, 47, 32)),
                                              static_cast<uint8_t>(field(lo, 31, 27))});
        return true;
    case desc::WAIT:
        return wait(lo, hi);
    }
    return false;  // unknown, or scalable-mode only
}

// Device-TLB Invalidate Descriptor (legacy mode, VT-d 6.5.2.5):
//   lo  3:0 type (3), 15:12 PFSID[3:0], 20:16 MIP, 47:32 SID, 63:52 PFSID[15:4]
//   hi  0 S (size), 63:12 ADDR
// With S clear the request names the 4 KiB page at ADDR.  With S set the
// range's size is encoded in ADDR as PCIe ATS invalidation requests do: the
// lowest clear bit of ADDR[63:12], at position 12 + k, makes the range
// 2^(13 + k) bytes, aligned to its size (the bits below it are ignored).
// No clear bit below 63 means the whole address space.  Everything else is
// reserved; without ECAP.DT the descriptor type itself is invalid.
DeviceTlbRange decode_device_tlb(uint64_t hi)
{
    const uint64_t addr = hi & desc::DIOTLB_HI_ADDR;
    if (!(hi & desc::DIOTLB_HI_S))
        return {addr, addr + (PAGE_SIZE - 1), false};
    const unsigned ones = std::countr_one(addr >> PAGE_SHIFT);  // 0..52
    const unsigned shift = PAGE_SHIFT + ones + 1;
    if (shift >= 64)
        return {0, ~uint64_t{0}, true};
    const uint64_t size = uint64_t{1} << shift;
    const uint64_t first = addr & ~(size - 1);
    return {first, first + (size - 1), false};
}

bool InvalidationQueue::device_iotlb(uint64_t lo, uint64_t hi)
{
    if (!f_.device_iotlb || (lo & desc::DIOTLB_LO_RSVD) || (hi & desc::DIOTLB_HI_RSVD))
        return false;
    const auto sid = static_cast<uint16_t>(field(lo, 47, 32));
    const auto pfsid = static_cast<uint16_t>(field(lo, 63, 52) << 4 | field(lo, 15, 12));
    const auto mip = static_cast<uint8_t>(field(lo, 20, 16));
    const DeviceTlbRange r = decode_device_tlb(hi);
    stats_.descriptor(desc::DEVICE_IOTLB);
    stats_.add(Counter::DeviceIotlb);
    if (r.all) {
        stats_.add(Counter::DeviceTlbAll);
    } else {
        stats_.add(hi & desc::DIOTLB_HI_S ? Counter::DeviceTlbRange : Counter::DeviceTlbPage);
        stats_.add(Counter::DeviceTlbPages, ((r.last - r.first) >> PAGE_SHIFT) + 1);
    }
    // The device-TLB is the device's (in QEMU: vhost's IOTLB behind a
    // DEVIOTLB_UNMAP notifier); the host forwards the request, and it has
    // completed when the call returns, so no Invalidation Time-out Error
    // can arise.
    target_.invalidate_device_tlb(sid, pfsid, mip, r.first, r.last);
    return true;
}

bool InvalidationQueue::wait(uint64_t lo, uint64_t hi)
{
    if ((lo & desc::WAIT_LO_RSVD) || (hi & desc::WAIT_HI_RSVD))
        return false;
    stats_.descriptor(desc::WAIT);
    stats_.add(Counter::Waits);
    // Everything before this descriptor has completed: descriptors run
    // one after the other, so Fence needs no further ordering.
    if (lo & desc::WAIT_FN)
        stats_.add(Counter::WaitFence);
    bool failed = false;
    uint8_t irq = 2;  // for the event: 0 sent, 1 pending, 2 IWC already set
    if (lo & desc::WAIT_SW) {
        stats_.add(Counter::WaitStatusWrite);
        failed = !host_.write_u32(hi & ~desc::WAIT_HI_RSVD, static_cast<uint32_t>(lo >> 32));
        if (failed)
            stats_.add(Counter::WaitStatusWriteFailed);
    }
    if (lo & desc::WAIT_IF) {
        stats_.add(Counter::WaitInterrupt);
        if (!(ics_ & ICS_IWC)) {
            ics_ |= ICS_IWC;
            if (iectl_ & ECTL_IM) {
                iectl_ |= ECTL_IP;
                irq = 1;
            } else {
                stats_.add(Counter::InvalidationEvents);
                host_.msi(uint64_t{ieuaddr_} << 32 | ieaddr_, iedata_);
                irq = 0;
            }
        }
    }
    host_.event([&] { return ev::wait(lo, hi & ~desc::WAIT_HI_RSVD, failed, irq); });
    return true;
}

InvalidationQueue::State InvalidationQueue::save() const
{
    return {enabled_, iqh_, iqt_, iqa_, ics_, iectl_, iedata_, ieaddr_, ieuaddr_};
}

bool InvalidationQueue::load(const State &s)
{
    if ((s.iqh & ~iq::IQT_QT) || (s.iqt & ~iq::IQT_QT) || (s.iqa & ~IQA_WRITABLE) ||
        (s.ics & ~ICS_IWC) || (s.iectl & ~(ECTL_IM | ECTL_IP)) || (s.iedata & ~EVENT_DATA_MASK) ||
        (s.ieaddr & ~EVENT_ADDR_MASK))
        return false;  // IQH past the queue's end is reachable (IQA rewritten): process() stops
                       // there
    enabled_ = s.enabled;
    iqh_ = s.iqh;
    iqt_ = s.iqt;
    iqa_ = s.iqa;
    ics_ = s.ics;
    iectl_ = s.iectl;
    iedata_ = s.iedata;
    ieaddr_ = s.ieaddr;
    ieuaddr_ = s.ieuaddr;
    return true;
}

}  // namespace viommu::vtd
