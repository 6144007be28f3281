// SPDX-License-Identifier: GPL-2.0-or-later
// Primary fault logging: the fault recording registers (FRCD), the fault
// status register (FSTS) and the fault event interrupt (FECTL, FEDATA,
// FEADDR, FEUADDR).  Faults arrive from translating threads while the MMIO
// thread reads and clears the registers, so all of it sits behind one
// lock, and interrupt messages are sent after dropping it.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "host.hpp"
#include "stats.hpp"

namespace viommu::vtd {

class FaultRecorder {
public:
    FaultRecorder(const Host &host, Stats &stats, unsigned records);

    void reset();
    bool handles(uint32_t offset) const;
    uint32_t read32(uint32_t offset) const;
    void write32(uint32_t offset, uint32_t value);

    // `pasid`: the request's PASID (a request with PASID): PP and PV.
    void record(uint16_t sid, uint64_t addr, VtdFaultReason reason, bool is_write,
                std::optional<uint32_t> pasid = std::nullopt);
    // Set FSTS status bits (IQE, ICE, ITE) on behalf of the invalidation queue.
    void set_status(uint32_t bits);
    uint32_t fsts() const;
    // FSTS's status bits (PFO, IQE, ICE, ITE) alone: what the invalidation
    // queue asks before each slice.  Unlike fsts() it does not scan the
    // fault records for PPF/FRI.
    uint32_t status() const;

    struct State {
        uint32_t fsts = 0, fectl = 0, fedata = 0, feaddr = 0, feuaddr = 0;
        std::vector<std::array<uint64_t, 2>> records;
    };
    State save() const;
    bool load(const State &s);  // false if inconsistent (nothing changed)

private:
    struct Msi {
        bool send = false;
        uint64_t addr = 0;
        uint32_t data = 0;
    };

    bool pending_locked() const;
    uint32_t fsts_locked() const;
    void raise_locked(bool was_pending, Msi &msi);
    void after_clear_locked();
    void deliver(const Msi &msi);

    const Host &host_;
    Stats &stats_;
    mutable std::mutex lock_;
    uint32_t status_ = 0;  // PFO, IQE, ICE, ITE (PPF is derived from the F bits)
    unsigned fri_ = 0;
    uint32_t fectl_ = 0, fedata_ = 0, feaddr_ = 0, feuaddr_ = 0;
    std::vector<std::array<uint64_t, 2>> frcd_;
};

}  // namespace viommu::vtd
