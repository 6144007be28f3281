// SPDX-License-Identifier: GPL-2.0-or-later
#include "fault_recording.hpp"

#include "events.hpp"
#include "registers.hpp"

namespace viommu::vtd {

static constexpr uint64_t FRCD_F = bit(63), FRCD_T = bit(62);
static constexpr unsigned FRCD_FR = 32;
// PASID present (bit 95 of the record) and the PASID value (123:104).
static constexpr uint64_t FRCD_PP = bit(31);
static constexpr unsigned FRCD_PV = 40;
static constexpr uint32_t EVENT_DATA_MASK = 0xffff;  // EIMD needs ECAP.EIM
static constexpr uint32_t EVENT_ADDR_MASK = ~3u;

FaultRecorder::FaultRecorder(const Host &host, Stats &stats, unsigned records)
    : host_(host), stats_(stats), frcd_(records)
{
    reset();
}

void FaultRecorder::reset()
{
    std::lock_guard guard(lock_);
    status_ = 0;
    fri_ = 0;
    fectl_ = ECTL_IM;
    fedata_ = feaddr_ = feuaddr_ = 0;
    for (auto &r : frcd_)
        r = {0, 0};
}

bool FaultRecorder::handles(uint32_t offset) const
{
    return (offset >= reg::FSTS && offset <= reg::FEUADDR) ||
           (offset >= reg::FRCD && offset < reg::FRCD + frcd_.size() * reg::FRCD_LEN);
}

bool FaultRecorder::pending_locked() const
{
    return (fsts_locked() & (fsts::W1C | fsts::PPF)) != 0;
}

// While PPF is set, FRI names the oldest pending record: software reads
// records from there until one has F clear.  Records fill in order from
// fri_, the next free one.
uint32_t FaultRecorder::fsts_locked() const
{
    size_t n = frcd_.size();
    for (size_t i = 0; i < n; i++) {
        size_t index = (fri_ + i) % n;
        if (frcd_[index][1] & FRCD_F)
            return status_ | fsts::PPF | uint32_t(index) << fsts::FRI;
    }
    return status_ | fri_ << fsts::FRI;
}

uint32_t FaultRecorder::fsts() const
{
    std::lock_guard guard(lock_);
    return fsts_locked();
}

uint32_t FaultRecorder::status() const
{
    std::lock_guard guard(lock_);
    return status_;
}

// An interrupt condition arises only when no status was pending before.
void FaultRecorder::raise_locked(bool was_pending, Msi &msi)
{
    if (was_pending)
        return;
    if (fectl_ & ECTL_IM) {
        fectl_ |= ECTL_IP;
        return;
    }
    msi = {true, uint64_t{feuaddr_} << 32 | feaddr_, fedata_};
}

void FaultRecorder::after_clear_locked()
{
    if (!pending_locked())
        fectl_ &= ~ECTL_IP;
}

void FaultRecorder::deliver(const Msi &msi)
{
    if (!msi.send)
        return;
    stats_.add(Counter::FaultEvents);
    host_.msi(msi.addr, msi.data);
}

void FaultRecorder::record(uint16_t sid, uint64_t addr, VtdFaultReason reason, bool is_write,
                           std::optional<uint32_t> pasid)
{
    Msi msi;
    {
        std::lock_guard guard(lock_);
        bool was_pending = pending_locked();
        uint64_t page = addr & mask(63, PAGE_SHIFT);
        uint64_t info = FRCD_F | (is_write ? 0 : FRCD_T) | uint64_t{reason} << FRCD_FR | sid;
        if (pasid)
            info |= FRCD_PP | uint64_t{*pasid & 0xfffff} << FRCD_PV;
        // While a record is pending the specification lets hardware collapse
        // further faults of the same source-id into it.  QEMU's memory core
        // retries a refused access in 4-byte steps, so one DMA would
        // otherwise fill every record with copies of one fault.
        for (const auto &pending : frcd_) {
            if (pending[0] == page && pending[1] == info) {
                stats_.add(Counter::FaultsCollapsed);
                host_.event([&] {
                    return ev::fault_record(VTD_FAULT_COLLAPSED, &pending - frcd_.data(), pending);
                });
                return;
            }
        }
        auto &r = frcd_[fri_];
        if ((status_ & fsts::PFO) || (r[1] & FRCD_F)) {
            stats_.add(Counter::FaultsOverflowed);
            host_.event([&] { return ev::fault_record(VTD_FAULT_OVERFLOW, fri_, {page, info}); });
            if (!(status_ & fsts::PFO)) {
                status_ |= fsts::PFO;
                raise_locked(was_pending, msi);
            }
        } else {
            r[0] = page;
            r[1] = info;
            host_.event([&] { return ev::fault_record(VTD_FAULT_RECORDED, fri_, r); });
            fri_ = (fri_ + 1) % frcd_.size();
            stats_.add(Counter::FaultsRecorded);
            raise_locked(was_pending, msi);
        }
    }
    deliver(msi);
}

void FaultRecorder::set_status(uint32_t bits)
{
    Msi msi;
    {
        std::lock_guard guard(lock_);
        bool was_pending = pending_locked();
        if ((status_ & bits) == bits)
            return;
        status_ |= bits & fsts::W1C;
        raise_locked(was_pending, msi);
    }
    deliver(msi);
}

uint32_t FaultRecorder::read32(uint32_t offset) const
{
    std::lock_guard guard(lock_);
    switch (offset) {
    case reg::FSTS:
        return fsts_locked();
    case reg::FECTL:
        return fectl_;
    case reg::FEDATA:
        return fedata_;
    case reg::FEADDR:
        return feaddr_;
    case reg::FEUADDR:
        return feuaddr_;
    }
    if (offset < reg::FRCD)
        return 0;  // reserved dwords inside the FSTS..FEUADDR block
    unsigned rel = offset - reg::FRCD;
    auto &r = frcd_[rel / reg::FRCD_LEN];
    uint64_t q = r[(rel % reg::FRCD_LEN) / 8];
    return (rel % 8) ? q >> 32 : static_cast<uint32_t>(q);
}

void FaultRecorder::write32(uint32_t offset, uint32_t value)
{
    Msi msi;
    {
        std::lock_guard guard(lock_);
        switch (offset) {
        case reg::FSTS:
            status_ &= ~(value & fsts::W1C);
            after_clear_locked();
            break;
        case reg::FECTL:
            if ((fectl_ & ECTL_IM) && !(value & ECTL_IM) && (fectl_ & ECTL_IP)) {
                msi = {true, uint64_t{feuaddr_} << 32 | feaddr_, fedata_};
                fectl_ &= ~ECTL_IP;
            }
            fectl_ = (fectl_ & ~ECTL_IM) | (value & ECTL_IM);
            break;
        case reg::FEDATA:
            fedata_ = value & EVENT_DATA_MASK;
            break;
        case reg::FEADDR:
            feaddr_ = value & EVENT_ADDR_MASK;
            break;
        case reg::FEUADDR:
            feuaddr_ = value;
            break;
        default:
            if (offset >= reg::FRCD && (offset - reg::FRCD) % reg::FRCD_LEN == 12 &&
                (value & (FRCD_F >> 32))) {
                frcd_[(offset - reg::FRCD) / reg::FRCD_LEN][1] &= ~FRCD_F;
                after_clear_locked();
            }
            break;
        }
    }
    deliver(msi);
}

FaultRecorder::State FaultRecorder::save() const
{
    std::lock_guard guard(lock_);
    return {status_ | fri_ << fsts::FRI, fectl_, fedata_, feaddr_, feuaddr_, frcd_};
}

bool FaultRecorder::load(const State &s)
{
    unsigned fri = field(s.fsts, 15, fsts::FRI);
    if (s.records.size() != frcd_.size() || fri >= frcd_.size() ||
        (s.fsts & ~(fsts::W1C | mask(15, fsts::FRI))) || (s.fectl & ~(ECTL_IM | ECTL_IP)) ||
        (s.fedata & ~EVENT_DATA_MASK) || (s.feaddr & ~EVENT_ADDR_MASK))
        return false;
    std::lock_guard guard(lock_);
    status_ = s.fsts & fsts::W1C;
    fri_ = fri;
    fectl_ = s.fectl;
    fedata_ = s.fedata;
    feaddr_ = s.feaddr;
    feuaddr_ = s.feuaddr;
    frcd_ = s.records;
    return true;
}

}  // namespace viommu::vtd
