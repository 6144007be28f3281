// SPDX-License-Identifier: GPL-2.0-or-later
// Queued invalidation: IQH, IQT, IQA, ICS, IQER and the invalidation event
// registers (IECTL, IEDATA, IEADDR, IEUADDR).
//
// Descriptors are 128 bits wide, or 256 bits with IQA.DW set (writable
// only with scalable mode, ECAP.SMTS).  IQH and IQT are byte offsets into
// the queue either way: with DW set a descriptor is 32 bytes, the queue
// of IQA.QS holds 2^(QS + 7) of them, and IQT bit 4 must be clear.  In
// 256-bit mode the descriptor types of legacy mode keep their low 128
// bits and have the upper 128 reserved (zero); the PASID-based types (6, 7
// and 8) exist only there: in a 128-bit queue they are an error.
//
// Descriptors are processed in order, in bounded slices (vtd.h): the MMIO
// write that makes work available (IQT, enabling QIE, or clearing
// FSTS.IQE) runs the first slice, the host's calls of process() the
// following ones, and IQH names the next descriptor throughout.  A slice
// ends after VTD_QUEUE_SLICE_DESCRIPTORS descriptors, or before a
// descriptor once its IOTLB probes exceed VTD_QUEUE_SLICE_PROBES -
// Iotlb::MAX_PAGE_PROBES, so one slice makes at most
// VTD_QUEUE_SLICE_PROBES probes.  An invalid
// descriptor or an out-of-range tail sets FSTS.IQE and stops the queue with
// IQH at the offending descriptor; clearing IQE resumes processing there.
//
// IQER (0xb0): with scalable mode its IQEI field (bits 3:0) says why IQE
// is set, while it is (the values below); without scalable mode the unit
// is a VT-d 1.0 one, where the offset is reserved, and IQER reads 0.
// ITESID and ICESID stay 0: FSTS.ITE (Invalidation Time-out Error) and
// FSTS.ICE (Invalidation Completion Error) never arise, because a
// device-TLB invalidation is complete when the host's callback returns.
#pragma once

#include <array>
#include <cstdint>

#include "fault_recording.hpp"
#include "features.hpp"
#include "host.hpp"
#include "invalidation.hpp"
#include "stats.hpp"

namespace viommu::vtd {

// The untranslated range a device-IOTLB invalidate descriptor's upper
// quadword names (inclusive bounds; `all`: the whole 64-bit space).
struct DeviceTlbRange {
    uint64_t first = 0, last = 0;
    bool all = false;
};
DeviceTlbRange decode_device_tlb(uint64_t hi);

// IQER.IQEI: why FSTS.IQE was set.
enum class QueueErrorInfo : uint8_t {
    None = 0,
    InvalidTail = 1,     // IQT (or IQH) beyond the queue
    FetchError = 2,      // the descriptor could not be read
    InvalidType = 3,     // unknown or unsupported descriptor type
    ReservedField = 4,   // a reserved field (or an invalid value in a field) set
    InvalidWidth = 5,    // a 256-bit-only descriptor type in a 128-bit queue
    MisalignedTail = 6,  // IQT bit 4 set with 256-bit descriptors
};

class InvalidationQueue {
public:
    InvalidationQueue(const Host &host, const Features &f, Stats &stats, FaultRecorder &faults,
                      Invalidator &target)
        : host_(host), f_(f), stats_(stats), faults_(faults), target_(target)
    {
    }

    void reset();
    bool handles(uint32_t offset) const;
    uint32_t read32(uint32_t offset) const;
    void write32(uint32_t offset, uint32_t value);

    bool enabled() const { return enabled_; }
    void set_enabled(bool on);
    // Process one slice of the descriptors between IQH and IQT, if the
    // queue may run; returns pending().
    bool process();
    // Descriptors the queue would process now.
    bool pending() const;

    struct State {
        bool enabled = false;
        uint64_t iqh = 0, iqt = 0, iqa = 0;
        uint32_t ics = 0, iectl = 0, iedata = 0, ieaddr = 0, ieuaddr = 0;
        uint64_t iqercd = 0;  // IQERCD as it reads (scalable mode)
    };
    State save() const;
    bool load(const State &s);

private:
    bool wide() const { return iqa_ & iq::IQA_DW; }
    unsigned desc_shift() const { return wide() ? iq::DESC_SHIFT_256 : iq::DESC_SHIFT; }
    uint64_t entries() const { return uint64_t{1} << ((iqa_ & iq::IQA_QS) + 8 - wide()); }
    using Desc = std::array<uint64_t, 4>;  // qw0..qw3; qw2 and qw3 are 0 in a 128-bit queue
    QueueErrorInfo execute(const Desc &d, uint64_t &probes);
    QueueErrorInfo wait(uint64_t lo, uint64_t hi);
    QueueErrorInfo device_iotlb(uint64_t lo, uint64_t hi);
    QueueErrorInfo pasid_iotlb(const Desc &d, uint64_t &probes);
    QueueErrorInfo pasid_cache(const Desc &d);
    QueueErrorInfo pasid_device_tlb(const Desc &d);
    void error(QueueErrorInfo why);
    uint64_t iqa_writable() const;

    const Host &host_;
    const Features &f_;
    Stats &stats_;
    FaultRecorder &faults_;
    Invalidator &target_;

    bool enabled_ = false;
    uint64_t iqh_ = 0, iqt_ = 0, iqa_ = 0;
    uint32_t ics_ = 0, iectl_ = ECTL_IM, iedata_ = 0, ieaddr_ = 0, ieuaddr_ = 0;
    QueueErrorInfo iqei_ = QueueErrorInfo::None;  // valid while FSTS.IQE is set
};

}  // namespace viommu::vtd
