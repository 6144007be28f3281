// SPDX-License-Identifier: GPL-2.0-or-later
// Queued invalidation (legacy mode, 128-bit descriptors): IQH, IQT, IQA,
// ICS and the invalidation event registers (IECTL, IEDATA, IEADDR,
// IEUADDR).
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
// IQER (0xb0) reads 0: the Invalidation Queue Error Record register came
// with VT-d 3.0, and the unit reports VER 1.0, where the offset is
// reserved.  FSTS.ITE (Invalidation Time-out Error) is never set: a
// device-IOTLB invalidation is complete when the host's callback returns.
#pragma once

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
    };
    State save() const;
    bool load(const State &s);

private:
    uint64_t entries() const { return uint64_t{1} << ((iqa_ & iq::IQA_QS) + 8); }
    bool execute(uint64_t lo, uint64_t hi, uint64_t &probes);
    bool wait(uint64_t lo, uint64_t hi);
    bool device_iotlb(uint64_t lo, uint64_t hi);

    const Host &host_;
    const Features &f_;
    Stats &stats_;
    FaultRecorder &faults_;
    Invalidator &target_;

    bool enabled_ = false;
    uint64_t iqh_ = 0, iqt_ = 0, iqa_ = 0;
    uint32_t ics_ = 0, iectl_ = ECTL_IM, iedata_ = 0, ieaddr_ = 0, ieuaddr_ = 0;
};

}  // namespace viommu::vtd
