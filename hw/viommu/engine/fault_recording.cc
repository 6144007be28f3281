// SPDX-License-Identifier: GPL-2.0-or-later
#include "fault_recording.hpp"

#include <algorithm>

#include "events.hpp"

namespace viommu::vtd {

static constexpr uint64_t FRCD_F = bit(63), FRCD_T = bit(62);
static constexpr unsigned FRCD_FR = 32;
// PASID present (bit 95 of the record), privilege mode requested (bit
// 93, meaningful with PP only) and the PASID value (123:104).
static constexpr uint64_t FRCD_PP = bit(31), FRCD_PRIV = bit(29);
static constexpr unsigned FRCD_PV = 40;
static constexpr uint32_t EVENT_DATA_MASK = 0xffff;  // EIMD needs ECAP.EIM
static constexpr uint32_t EVENT_ADDR_MASK = ~3u;

// Under the lock, stores need no ordering among themselves; the lock-free
// readers pair their acquire loads with these release stores.
static constexpr auto LOCKED = std::memory_order_relaxed;
static constexpr auto PUBLISH = std::memory_order_release;

FaultRecorder::FaultRecorder(const Host &host, Stats &stats, unsigned records)
    : host_(host), stats_(stats), frcd_(records), seq_(records),
      frcd_bytes_(records * reg::FRCD_LEN)
{
    reset();
}

void FaultRecorder::reset()
{
    std::lock_guard guard(lock_);
    status_ = 0;
    fri_ = 0;
    pending_ = 0;
    oldest_ = 0;
    std::fill(seq_.begin(), seq_.end(), 0);
    next_seq_ = 0;
    fectl_.store(ECTL_IM, PUBLISH);
    fedata_.store(0, PUBLISH);
    feaddr_.store(0, PUBLISH);
    feuaddr_.store(0, PUBLISH);
    for (auto &r : frcd_) {
        r[0].store(0, PUBLISH);
        r[1].store(0, PUBLISH);
    }
    publish_locked();
}

void FaultRecorder::reset_index()
{
    std::lock_guard guard(lock_);
    fri_ = 0;
    publish_locked();
}

bool FaultRecorder::full_locked(size_t index) const
{
    return frcd_[index][1].load(LOCKED) & FRCD_F;
}

// While PPF is set, FRI names the oldest pending record (oldest_):
// software reads records from there until one has F clear; with none
// pending, FRI is fri_.  Every change to status_, fri_ or an F bit ends
// here.
void FaultRecorder::publish_locked()
{
    uint32_t v = status_ | (pending_ ? fsts::PPF | oldest_ << fsts::FRI : fri_ << fsts::FRI);
    fsts_.store(v, PUBLISH);
}

// oldest_ as the full record filled first (pending_ says one is).  Records
// fill in circular order, but reset_index() restarts that order at 0 with
// older records still pending, so the order is kept per record.
void FaultRecorder::find_oldest_locked()
{
    uint64_t oldest_seq = UINT64_MAX;
    for (size_t i = 0; i < frcd_.size(); i++) {
        if (full_locked(i) && seq_[i] < oldest_seq) {
            oldest_seq = seq_[i];
            oldest_ = static_cast<unsigned>(i);
        }
    }
}

uint32_t FaultRecorder::status() const
{
    return fsts() & fsts::W1C;
}

// An interrupt condition arises only when no status was pending before.
void FaultRecorder::raise_locked(bool was_pending, Msi &msi)
{
    if (was_pending)
        return;
    uint32_t fectl = fectl_.load(LOCKED);
    if (fectl & ECTL_IM) {
        fectl_.store(fectl | ECTL_IP, PUBLISH);
        return;
    }
    msi = {true, uint64_t{feuaddr_.load(LOCKED)} << 32 | feaddr_.load(LOCKED),
           fedata_.load(LOCKED)};
}

void FaultRecorder::after_clear_locked()
{
    if (!pending_locked())
        fectl_.store(fectl_.load(LOCKED) & ~ECTL_IP, PUBLISH);
}

void FaultRecorder::deliver(const Msi &msi)
{
    if (!msi.send)
        return;
    stats_.add(Counter::FaultEvents);
    host_.msi(msi.addr, msi.data);
}

void FaultRecorder::record(uint16_t sid, uint64_t addr, VtdFaultReason reason, bool is_write,
                           std::optional<FaultPasid> pasid)
{
    Msi msi;
    {
        std::lock_guard guard(lock_);
        bool was_pending = pending_locked();
        uint64_t page = addr & mask(63, PAGE_SHIFT);
        uint64_t info = FRCD_F | (is_write ? 0 : FRCD_T) | uint64_t{reason} << FRCD_FR | sid;
        if (pasid)
            info |= FRCD_PP | (pasid->privileged ? FRCD_PRIV : 0) |
                    uint64_t{pasid->pasid & 0xfffff} << FRCD_PV;
        // While a record is pending the specification lets hardware collapse
        // further faults of the same source-id into it.  QEMU's memory core
        // retries a refused access in 4-byte steps, so one DMA would
        // otherwise fill every record with copies of one fault.
        for (size_t i = 0; pending_ && i < frcd_.size(); i++) {
            std::array<uint64_t, 2> pending{frcd_[i][0].load(LOCKED), frcd_[i][1].load(LOCKED)};
            if (pending[0] == page && pending[1] == info) {
                stats_.add(Counter::FaultsCollapsed);
                host_.event([&] { return ev::fault_record(VTD_FAULT_COLLAPSED, i, pending); });
                return;
            }
        }
        if ((status_ & fsts::PFO) || full_locked(fri_)) {
            stats_.add(Counter::FaultsOverflowed);
            host_.event([&] { return ev::fault_record(VTD_FAULT_OVERFLOW, fri_, {page, info}); });
            if (!(status_ & fsts::PFO)) {
                status_ |= fsts::PFO;
                publish_locked();
                raise_locked(was_pending, msi);
            }
        } else {
            auto &r = frcd_[fri_];
            r[0].store(page, PUBLISH);
            r[1].store(info, PUBLISH);
            host_.event([&] { return ev::fault_record(VTD_FAULT_RECORDED, fri_, {page, info}); });
            seq_[fri_] = next_seq_++;
            if (pending_++ == 0)
                oldest_ = fri_;
            fri_ = (fri_ + 1) % frcd_.size();
            publish_locked();
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
        publish_locked();
        raise_locked(was_pending, msi);
    }
    deliver(msi);
}

uint32_t FaultRecorder::read32(uint32_t offset) const
{
    switch (offset) {
    case reg::FSTS:
        return fsts();
    case reg::FECTL:
        return fectl_.load(std::memory_order_acquire);
    case reg::FEDATA:
        return fedata_.load(std::memory_order_acquire);
    case reg::FEADDR:
        return feaddr_.load(std::memory_order_acquire);
    case reg::FEUADDR:
        return feuaddr_.load(std::memory_order_acquire);
    }
    if (offset < reg::FRCD)
        return 0;  // reserved dwords inside the FSTS..FEUADDR block
    uint64_t q = read_record64(offset & ~7u);
    return (offset & 4) ? q >> 32 : static_cast<uint32_t>(q);
}

void FaultRecorder::write32(uint32_t offset, uint32_t value)
{
    Msi msi;
    {
        std::lock_guard guard(lock_);
        switch (offset) {
        case reg::FSTS:
            if (status_ & value & fsts::W1C) {
                status_ &= ~(value & fsts::W1C);
                publish_locked();
            }
            after_clear_locked();
            break;
        case reg::FECTL: {
            uint32_t fectl = fectl_.load(LOCKED);
            if ((fectl & ECTL_IM) && !(value & ECTL_IM) && (fectl & ECTL_IP)) {
                msi = {true, uint64_t{feuaddr_.load(LOCKED)} << 32 | feaddr_.load(LOCKED),
                       fedata_.load(LOCKED)};
                fectl &= ~ECTL_IP;
            }
            fectl_.store((fectl & ~ECTL_IM) | (value & ECTL_IM), PUBLISH);
            break;
        }
        case reg::FEDATA:
            fedata_.store(value & EVENT_DATA_MASK, PUBLISH);
            break;
        case reg::FEADDR:
            feaddr_.store(value & EVENT_ADDR_MASK, PUBLISH);
            break;
        case reg::FEUADDR:
            feuaddr_.store(value, PUBLISH);
            break;
        default:
            if (offset >= reg::FRCD && (offset - reg::FRCD) % reg::FRCD_LEN == 12 &&
                (value & (FRCD_F >> 32))) {
                size_t index = (offset - reg::FRCD) / reg::FRCD_LEN;
                auto &hi = frcd_[index][1];
                uint64_t v = hi.load(LOCKED);
                if (v & FRCD_F) {
                    hi.store(v & ~FRCD_F, PUBLISH);
                    if (--pending_ && index == oldest_)
                        find_oldest_locked();
                    publish_locked();
                }
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
    State s{status_ | fri_ << fsts::FRI, fectl_.load(LOCKED),   fedata_.load(LOCKED),
            feaddr_.load(LOCKED),        feuaddr_.load(LOCKED), {}};
    s.records.resize(frcd_.size());
    for (size_t i = 0; i < frcd_.size(); i++)
        s.records[i] = {frcd_[i][0].load(LOCKED), frcd_[i][1].load(LOCKED)};
    s.oldest = pending_ ? oldest_ : 0;
    return s;
}

// A state the unit could hold: ITE and ICE never arise (every device-TLB
// invalidation completes at once), FECTL.IP only with IM set and a status
// or record pending, the oldest pending record one with F set.
bool FaultRecorder::load(const State &s)
{
    unsigned fri = field(s.fsts, 15, fsts::FRI);
    if (s.records.size() != frcd_.size() || fri >= frcd_.size() ||
        (s.fsts & ~(fsts::W1C | mask(15, fsts::FRI))) || (s.fsts & (fsts::ICE | fsts::ITE)) ||
        (s.fectl & ~(ECTL_IM | ECTL_IP)) || (s.fedata & ~EVENT_DATA_MASK) ||
        (s.feaddr & ~EVENT_ADDR_MASK))
        return false;
    auto full = [](const std::array<uint64_t, 2> &r) { return (r[1] & FRCD_F) != 0; };
    size_t pending = std::count_if(s.records.begin(), s.records.end(), full);
    if (pending ? s.oldest >= s.records.size() || !full(s.records[s.oldest]) : s.oldest != 0)
        return false;
    if ((s.fectl & ECTL_IP) && (!(s.fectl & ECTL_IM) || (!pending && !(s.fsts & fsts::W1C))))
        return false;
    std::lock_guard guard(lock_);
    status_ = s.fsts & fsts::W1C;
    fri_ = fri;
    fectl_.store(s.fectl, PUBLISH);
    fedata_.store(s.fedata, PUBLISH);
    feaddr_.store(s.feaddr, PUBLISH);
    feuaddr_.store(s.feuaddr, PUBLISH);
    for (size_t i = 0; i < frcd_.size(); i++) {
        frcd_[i][0].store(s.records[i][0], PUBLISH);
        frcd_[i][1].store(s.records[i][1], PUBLISH);
    }
    pending_ = static_cast<unsigned>(pending);
    oldest_ = s.oldest;
    // The order records were filled in, from the oldest one and the index:
    // those below fri_ were filled last, in order (since the index last
    // restarted at 0, or in this lap); the others before them, in circular
    // order from the oldest.
    next_seq_ = 0;
    for (size_t i = 0; i < frcd_.size(); i++)
        if (size_t index = (oldest_ + i) % frcd_.size(); index >= fri_)
            seq_[index] = next_seq_++;
    for (size_t index = 0; index < fri_; index++)
        seq_[index] = next_seq_++;
    publish_locked();
    return true;
}

}  // namespace viommu::vtd
