// SPDX-License-Identifier: GPL-2.0-or-later
#include "invalidation_queue.hpp"

#include <bit>

#include "events.hpp"
#include "iotlb.hpp"

namespace viommu::vtd {

namespace desc {
constexpr unsigned CONTEXT = 1, IOTLB = 2, DEVICE_IOTLB = 3, IEC = 4, WAIT = 5;
constexpr unsigned PASID_IOTLB = 6, PASID_CACHE = 7, PASID_DEVICE_TLB = 8;
// Type bits 6:4 sit in qw0 bits 11:9 and are decoded with bits 3:0, so a
// descriptor with any of them set has no type below 16.
constexpr uint64_t CC_LO_RSVD = mask(15, 6) | mask(63, 50);
// IOTLB qw0 bits 7:6 (DR, DW: drain reads and writes) are accepted and
// have nothing to drain here; reserved starts above them.
constexpr uint64_t IOTLB_LO_RSVD = mask(15, 8) | mask(63, 32);
constexpr uint64_t IOTLB_HI_IH = bit(6), IOTLB_HI_RSVD = mask(11, 7);
constexpr uint64_t DIOTLB_LO_RSVD = mask(11, 4) | mask(31, 21) | mask(51, 48);
constexpr uint64_t DIOTLB_HI_RSVD = mask(11, 1);
constexpr uint64_t DIOTLB_HI_S = bit(0), DIOTLB_HI_ADDR = mask(63, 12);
constexpr uint64_t IEC_LO_G = bit(4), IEC_LO_RSVD = mask(26, 5) | mask(63, 48);
constexpr uint64_t WAIT_IF = bit(4), WAIT_SW = bit(5), WAIT_FN = bit(6);
constexpr uint64_t WAIT_LO_RSVD = mask(31, 7);  // PD (bit 7) needs ECAP.PRS
constexpr uint64_t WAIT_HI_RSVD = mask(1, 0);
// PASID-based-IOTLB (VT-d 3.x, 6.5.2.4):
//   qw0  3:0 type (6), 5:4 G (10b: PASID-selective, 11b: page-selective
//        within PASID), 31:16 DID, 51:32 PASID
//   qw1  5:0 AM, 6 IH, 63:12 ADDR (G=11b only)
constexpr uint64_t PIOTLB_LO_RSVD = mask(8, 6) | mask(15, 12) | mask(63, 52);
constexpr uint64_t PIOTLB_HI_IH = bit(6), PIOTLB_HI_RSVD = mask(11, 7);
// PASID-cache (6.5.2.2): qw0  3:0 type (7), 5:4 G (00b domain-selective,
//   01b PASID-selective, 11b global), 31:16 DID, 51:32 PASID; qw1 reserved
constexpr uint64_t PC_LO_RSVD = mask(8, 6) | mask(15, 12) | mask(63, 52);
// PASID-based-device-TLB (6.5.2.7):
//   qw0  3:0 type (8), 8:4 MIP, 15:12 PFSID[3:0], 31:16 SID, 51:32 PASID,
//        63:52 PFSID[15:4]
//   qw1  0 G (all PASIDs), 11 S (size), 63:12 ADDR (as decode_device_tlb)
constexpr uint64_t PDTLB_HI_G = bit(0), PDTLB_HI_S = bit(11), PDTLB_HI_RSVD = mask(10, 1);
}  // namespace desc

static constexpr uint32_t EVENT_DATA_MASK = 0xffff;
static constexpr uint32_t EVENT_ADDR_MASK = ~3u;
static constexpr uint64_t IQA_WRITABLE = iq::IQA_BASE | iq::IQA_QS;

// DW is reserved (zero) without scalable mode.  Base bits from the host
// address width up read 0 (intel-iommu masks them too), so that the queue
// never reaches past 2^HAW, let alone wraps around to address 0.
uint64_t InvalidationQueue::iqa_writable() const
{
    return (IQA_WRITABLE & ~f_.above_haw()) | (f_.scalable_mode ? iq::IQA_DW : 0);
}

void InvalidationQueue::reset()
{
    enabled_ = false;
    iqh_ = iqt_ = iqa_ = 0;
    ics_ = 0;
    iectl_ = ECTL_IM;
    iedata_ = ieaddr_ = ieuaddr_ = 0;
    iqei_ = QueueErrorInfo::None;
}

bool InvalidationQueue::handles(uint32_t offset) const
{
    return offset >= reg::IQH && offset <= reg::IQER + 4;
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
    case reg::IQER:
        if (f_.scalable_mode && !(offset & 4) && (faults_.fsts() & fsts::IQE))
            return static_cast<uint32_t>(iqei_);
        return 0;
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
        iqa_ = with_half(iqa_, offset, value) & iqa_writable();
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
    return enabled_ && iqh_ != iqt_ && !(faults_.status() & fsts::IQE);
}

static_assert(VTD_QUEUE_SLICE_PROBES > Iotlb::MAX_PAGE_PROBES);

void InvalidationQueue::error(QueueErrorInfo why)
{
    iqei_ = why;
    faults_.set_status(fsts::IQE);
}

bool InvalidationQueue::process()
{
    if (!enabled_ || (faults_.status() & fsts::IQE))
        return false;
    const uint64_t n = entries();
    const unsigned shift = desc_shift();
    uint64_t head = iqh_ >> shift;
    const uint64_t tail = iqt_ >> shift;
    // IQH can be misaligned only if DW was set after descriptors ran
    // (software must not change IQA while the queue is enabled).
    const bool misaligned = wide() && ((iqt_ | iqh_) & iq::IQT_QT_256_RSVD);
    if (tail >= n || head >= n || misaligned) {
        stats_.add(Counter::QiTailErrors);
        host_.event([&] { return ev::queue_error(VTD_QERR_TAIL, head, tail, std::nullopt); });
        error(misaligned ? QueueErrorInfo::MisalignedTail : QueueErrorInfo::InvalidTail);
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
        const uint64_t at = base + (head << shift);
        // One read per descriptor, of its width.
        std::optional<std::array<uint64_t, 2>> d;
        Desc full{};
        if (wide()) {
            if (auto q = host_.read_qwords<4>(at)) {
                full = *q;
                d = std::array<uint64_t, 2>{full[0], full[1]};
            }
        } else if ((d = host_.read_u128(at))) {
            full = {(*d)[0], (*d)[1], 0, 0};
        }
        if (d)
            host_.event([&] { return ev::descriptor(head, (*d)[0], (*d)[1]); });
        const QueueErrorInfo why = d ? execute(full, probes) : QueueErrorInfo::FetchError;
        if (why != QueueErrorInfo::None) {
            stats_.add(Counter::QiInvalidDescriptors);
            if (why == QueueErrorInfo::InvalidWidth)
                stats_.add(Counter::QiWidthErrors);
            host_.event([&] {
                return ev::queue_error(d ? VTD_QERR_DESCRIPTOR : VTD_QERR_UNREADABLE, head, tail,
                                       d);
            });
            error(why);
            return false;
        }
        if (host_.has_clock())
            stats_.latency(host_.now_ns() - start);
        head = (head + 1) % n;
        iqh_ = head << shift;
        done++;
    }
    return false;
}

QueueErrorInfo InvalidationQueue::execute(const Desc &d, uint64_t &probes)
{
    using E = QueueErrorInfo;
    const uint64_t lo = d[0], hi = d[1];
    const unsigned type = static_cast<unsigned>(field(lo, 3, 0) | field(lo, 11, 9) << 4);
    switch (type) {
    case desc::PASID_IOTLB:
    case desc::PASID_CACHE:
    case desc::PASID_DEVICE_TLB:
        if (!f_.scalable_mode)
            return E::InvalidType;
        if (!wide())
            return E::InvalidWidth;
        break;
    case desc::CONTEXT:
    case desc::IOTLB:
    case desc::DEVICE_IOTLB:
    case desc::IEC:
    case desc::WAIT:
        // 256-bit mode: the upper half of a legacy-format descriptor is
        // reserved, so 128-bit descriptors written into a 256-bit queue
        // (two per slot) fail here.
        if (d[2] || d[3])
            return E::ReservedField;
        break;
    default:
        return E::InvalidType;  // unknown, or page-request only (ECAP.PRS is clear)
    }
    switch (type) {
    case desc::CONTEXT: {
        auto g = static_cast<Granularity>(field(lo, 5, 4));
        if ((lo & desc::CC_LO_RSVD) || hi || g == Granularity::Invalid)
            return E::ReservedField;
        stats_.descriptor(type);
        target_.invalidate_context({g, static_cast<uint16_t>(field(lo, 31, 16)),
                                    static_cast<uint16_t>(field(lo, 47, 32)),
                                    static_cast<uint8_t>(field(lo, 49, 48))});
        return E::None;
    }
    case desc::IOTLB: {
        auto g = static_cast<Granularity>(field(lo, 5, 4));
        uint8_t am = g == Granularity::Selective ? field(hi, 5, 0) : 0;
        if ((lo & desc::IOTLB_LO_RSVD) || (hi & desc::IOTLB_HI_RSVD) || g == Granularity::Invalid ||
            (g == Granularity::Selective && am > f_.mamv))
            return E::ReservedField;
        stats_.descriptor(type);
        // ADDR bits at and above MGAW are ignored.
        probes += target_.invalidate_iotlb({g, static_cast<uint16_t>(field(lo, 31, 16)),
                                            hi & mask(f_.aw_bits - 1, PAGE_SHIFT + am), am,
                                            (hi & desc::IOTLB_HI_IH) != 0});
        return E::None;
    }
    case desc::DEVICE_IOTLB:
        return device_iotlb(lo, hi);
    case desc::IEC:
        if ((lo & desc::IEC_LO_RSVD) || hi)
            return E::ReservedField;
        stats_.descriptor(type);
        stats_.add(Counter::InterruptEntryCache);
        target_.invalidate_interrupt_entries({!(lo & desc::IEC_LO_G),
                                              static_cast<uint16_t>(field(lo, 47, 32)),
                                              static_cast<uint8_t>(field(lo, 31, 27))});
        return E::None;
    case desc::WAIT:
        return wait(lo, hi);
    case desc::PASID_IOTLB:
        return pasid_iotlb(d, probes);
    case desc::PASID_CACHE:
        return pasid_cache(d);
    case desc::PASID_DEVICE_TLB:
        return pasid_device_tlb(d);
    }
    return E::InvalidType;
}

QueueErrorInfo InvalidationQueue::pasid_iotlb(const Desc &d, uint64_t &probes)
{
    const uint64_t lo = d[0], hi = d[1];
    const unsigned g = field(lo, 5, 4);
    const uint8_t am = field(hi, 5, 0);
    // An AM above MAMV is no error here (see invalidate_pasid_iotlb).
    if ((lo & desc::PIOTLB_LO_RSVD) || (hi & desc::PIOTLB_HI_RSVD) || d[2] || d[3] || g < 2)
        return QueueErrorInfo::ReservedField;
    stats_.descriptor(desc::PASID_IOTLB);
    PasidIotlbInvalidation req;
    req.page_selective = g == 3;
    req.did = static_cast<uint16_t>(field(lo, 31, 16));
    req.pasid = static_cast<uint32_t>(field(lo, 51, 32));
    if (req.page_selective) {
        req.am = am;
        req.addr = hi & mask(63, PAGE_SHIFT + am);
        req.ih = hi & desc::PIOTLB_HI_IH;
    }
    probes += target_.invalidate_pasid_iotlb(req);
    return QueueErrorInfo::None;
}

QueueErrorInfo InvalidationQueue::pasid_cache(const Desc &d)
{
    const uint64_t lo = d[0];
    const unsigned g = field(lo, 5, 4);
    if ((lo & desc::PC_LO_RSVD) || d[1] || d[2] || d[3] || g == 2)
        return QueueErrorInfo::ReservedField;
    stats_.descriptor(desc::PASID_CACHE);
    target_.invalidate_pasid_cache({static_cast<PasidCacheGranularity>(g),
                                    static_cast<uint16_t>(field(lo, 31, 16)),
                                    static_cast<uint32_t>(field(lo, 51, 32))});
    return QueueErrorInfo::None;
}

QueueErrorInfo InvalidationQueue::pasid_device_tlb(const Desc &d)
{
    const uint64_t lo = d[0], hi = d[1];
    if (!f_.device_iotlb)
        return QueueErrorInfo::InvalidType;
    if ((hi & desc::PDTLB_HI_RSVD) || d[2] || d[3])
        return QueueErrorInfo::ReservedField;
    // The size encoding is the legacy descriptor's with S in bit 11.
    const DeviceTlbRange r = decode_device_tlb((hi & desc::DIOTLB_HI_ADDR) |
                                               ((hi & desc::PDTLB_HI_S) ? desc::DIOTLB_HI_S : 0));
    PasidDeviceTlbInvalidation req;
    req.mip = static_cast<uint8_t>(field(lo, 8, 4));
    req.sid = static_cast<uint16_t>(field(lo, 31, 16));
    req.pasid = static_cast<uint32_t>(field(lo, 51, 32));
    req.pfsid = static_cast<uint16_t>(field(lo, 63, 52) << 4 | field(lo, 15, 12));
    req.global = hi & desc::PDTLB_HI_G;
    req.first = r.first;
    req.last = r.last;
    stats_.descriptor(desc::PASID_DEVICE_TLB);
    stats_.add(Counter::PasidDeviceTlb);
    if (req.global)
        stats_.add(Counter::PasidDeviceTlbGlobal);
    target_.invalidate_pasid_device_tlb(req);
    return QueueErrorInfo::None;
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

QueueErrorInfo InvalidationQueue::device_iotlb(uint64_t lo, uint64_t hi)
{
    if (!f_.device_iotlb)
        return QueueErrorInfo::InvalidType;
    if ((lo & desc::DIOTLB_LO_RSVD) || (hi & desc::DIOTLB_HI_RSVD))
        return QueueErrorInfo::ReservedField;
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
    return QueueErrorInfo::None;
}

QueueErrorInfo InvalidationQueue::wait(uint64_t lo, uint64_t hi)
{
    if ((lo & desc::WAIT_LO_RSVD) || (hi & desc::WAIT_HI_RSVD))
        return QueueErrorInfo::ReservedField;
    stats_.descriptor(desc::WAIT);
    stats_.add(Counter::Waits);
    // Everything before this descriptor has completed: descriptors run
    // one after the other, so Fence needs no further ordering; the host's
    // part of them completes now.
    if (lo & desc::WAIT_FN)
        stats_.add(Counter::WaitFence);
    host_.sync();
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
    return QueueErrorInfo::None;
}

InvalidationQueue::State InvalidationQueue::save() const
{
    return {enabled_, iqh_,    iqt_,    iqa_,     ics_,
            iectl_,   iedata_, ieaddr_, ieuaddr_, read32(reg::IQER)};
}

bool InvalidationQueue::load(const State &s)
{
    if ((s.iqh & ~iq::IQT_QT) || (s.iqt & ~iq::IQT_QT) || (s.iqa & ~iqa_writable()) ||
        (s.ics & ~ICS_IWC) || (s.iectl & ~(ECTL_IM | ECTL_IP)) || (s.iedata & ~EVENT_DATA_MASK) ||
        (s.ieaddr & ~EVENT_ADDR_MASK))
        return false;  // IQH past the queue's end is reachable (IQA rewritten): process() stops
                       // there
    // IQH resets whenever the queue is disabled; IECTL.IP arises only with
    // IM set and goes with ICS.IWC.
    if ((s.iqh && !s.enabled) ||
        ((s.iectl & ECTL_IP) && (!(s.iectl & ECTL_IM) || !(s.ics & ICS_IWC))))
        return false;
    // IQEI only with scalable mode and only while FSTS.IQE is set (the
    // fault recorder's state is loaded first); ITESID and ICESID are zero.
    if (s.iqercd > static_cast<uint64_t>(QueueErrorInfo::MisalignedTail) ||
        (s.iqercd && (!f_.scalable_mode || !(faults_.fsts() & fsts::IQE))))
        return false;
    enabled_ = s.enabled;
    iqh_ = s.iqh;
    iqt_ = s.iqt;
    iqa_ = s.iqa;
    ics_ = s.ics;
    iectl_ = s.iectl;
    iedata_ = s.iedata;
    ieaddr_ = s.ieaddr;
    ieuaddr_ = s.ieuaddr;
    iqei_ = static_cast<QueueErrorInfo>(s.iqercd);
    return true;
}

}  // namespace viommu::vtd
