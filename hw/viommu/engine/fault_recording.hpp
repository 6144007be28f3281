// SPDX-License-Identifier: GPL-2.0-or-later
// Primary fault logging: the fault recording registers (FRCD), the fault
// status register (FSTS) and the fault event interrupt (FECTL, FEDATA,
// FEADDR, FEUADDR).  Faults arrive from translating threads while the MMIO
// thread reads and clears the registers.  Every change happens under one
// lock, and interrupt messages are sent after dropping it; reads take no
// lock.  Each register dword is an atomic word that a change stores last
// (FSTS, with its PPF and FRI kept up to date by each change, after the
// records), so a read sees one complete state of that register, and a read
// of FSTS that names a pending record is followed by reads that see it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "host.hpp"
#include "registers.hpp"
#include "stats.hpp"

namespace viommu::vtd {

// What the fault record of a request with PASID says of the request: PP,
// its PASID (PV) and whether it asked for supervisor privilege (PRIV).
struct FaultPasid {
    uint32_t pasid = 0;
    bool privileged = false;
};

class FaultRecorder {
public:
    FaultRecorder(const Host &host, Stats &stats, unsigned records);

    void reset();
    // TES and IRES both went clear: the next fault goes to record 0.
    void reset_index();
    // One unsigned comparison per range (an offset below it wraps high).
    bool handles(uint32_t offset) const
    {
        return offset - reg::FSTS <= reg::FEUADDR - reg::FSTS || handles_record(offset);
    }
    uint32_t read32(uint32_t offset) const;
    bool handles_record(uint32_t offset) const { return offset - reg::FRCD < frcd_bytes_; }
    // An aligned quadword of a fault record (handles_record(offset)): one read.
    uint64_t read_record64(uint32_t offset) const
    {
        unsigned rel = offset - reg::FRCD;
        return frcd_[rel / reg::FRCD_LEN][(rel / 8) & 1].load(std::memory_order_acquire);
    }
    void write32(uint32_t offset, uint32_t value);

    // `pasid`: a request with PASID (PP, PV and PRIV).
    void record(uint16_t sid, uint64_t addr, VtdFaultReason reason, bool is_write,
                std::optional<FaultPasid> pasid = std::nullopt);
    // Set FSTS status bits (IQE, ICE, ITE) on behalf of the invalidation queue.
    void set_status(uint32_t bits);
    uint32_t fsts() const { return fsts_.load(std::memory_order_acquire); }
    // FSTS's status bits (PFO, IQE, ICE, ITE) alone: what the invalidation
    // queue asks before each slice.
    uint32_t status() const;

    struct State {
        uint32_t fsts = 0, fectl = 0, fedata = 0, feaddr = 0, feuaddr = 0;
        std::vector<std::array<uint64_t, 2>> records;
        uint32_t oldest = 0;  // the oldest pending record; 0 with none
    };
    State save() const;
    bool load(const State &s);  // false if inconsistent (nothing changed)

private:
    struct Msi {
        bool send = false;
        uint64_t addr = 0;
        uint32_t data = 0;
    };
    using Record = std::array<std::atomic<uint64_t>, 2>;

    bool pending_locked() const { return status_ != 0 || pending_ != 0; }
    bool full_locked(size_t index) const;
    void publish_locked();
    void find_oldest_locked();
    void raise_locked(bool was_pending, Msi &msi);
    void after_clear_locked();
    void deliver(const Msi &msi);

    const Host &host_;
    Stats &stats_;
    mutable std::mutex lock_;
    // Under lock_: the state FSTS is derived from.
    uint32_t status_ = 0;   // PFO, IQE, ICE, ITE
    unsigned fri_ = 0;      // the next record a fault goes to
    unsigned pending_ = 0;  // records with F set
    unsigned oldest_ = 0;   // with pending_: the oldest record with F set
    // Written under lock_, read without it.
    std::atomic<uint32_t> fsts_{0};  // status_ | PPF and FRI
    std::atomic<uint32_t> fectl_{0}, fedata_{0}, feaddr_{0}, feuaddr_{0};
    std::vector<Record> frcd_;
    std::vector<uint64_t> seq_;  // under lock_: the order records were filled in
    uint64_t next_seq_ = 0;
    const uint32_t frcd_bytes_;  // frcd_.size() * reg::FRCD_LEN
};

}  // namespace viommu::vtd
