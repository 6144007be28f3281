// SPDX-License-Identifier: GPL-2.0-or-later
// Queued invalidation (legacy mode, 128-bit descriptors): IQH, IQT, IQA,
// ICS and the invalidation event registers (IECTL, IEDATA, IEADDR,
// IEUADDR).
//
// Descriptors are processed synchronously inside the MMIO write that makes
// work available (IQT, enabling QIE, or clearing FSTS.IQE), so a wait
// descriptor's status write has landed when the write returns.  An invalid
// descriptor or an out-of-range tail sets FSTS.IQE and stops the queue with
// IQH at the offending descriptor; clearing IQE resumes processing there.
#pragma once

#include <cstdint>

#include "fault_recording.hpp"
#include "features.hpp"
#include "host.hpp"
#include "invalidation.hpp"
#include "stats.hpp"

namespace viommu::vtd {

class InvalidationQueue {
public:
    InvalidationQueue(const Host &host, const Features &f, Stats &stats, FaultRecorder &faults,
                      Invalidator &target)
        : host_(host), f_(f), stats_(stats), faults_(faults), target_(target) {}

    void reset();
    bool handles(uint32_t offset) const;
    uint32_t read32(uint32_t offset) const;
    void write32(uint32_t offset, uint32_t value);

    bool enabled() const { return enabled_; }
    void set_enabled(bool on);
    // Process descriptors between IQH and IQT, if the queue may run.
    void process();

    struct State {
        bool enabled = false;
        uint64_t iqh = 0, iqt = 0, iqa = 0;
        uint32_t ics = 0, iectl = 0, iedata = 0, ieaddr = 0, ieuaddr = 0;
    };
    State save() const;
    bool load(const State &s);

private:
    uint64_t entries() const { return uint64_t{1} << ((iqa_ & iq::IQA_QS) + 8); }
    bool execute(uint64_t lo, uint64_t hi);
    bool wait(uint64_t lo, uint64_t hi);

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
