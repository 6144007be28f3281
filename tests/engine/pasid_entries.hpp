// SPDX-License-Identifier: GPL-2.0-or-later
// Scalable-mode PASID-table entries (VT-d spec 9.6) as the eight 64-bit
// words a guest driver writes, for the engine's tests (through
// ScalableTables, scalable_tables.hpp) and benchmarks.  Needs neither
// GoogleTest nor a FakeHost: the benchmarks build their tables in memory
// of their own.
#pragma once

#include <array>
#include <cstdint>

namespace vtdtest {

// PGTT encodings.
constexpr unsigned PGTT_FS = 1, PGTT_SS = 2, PGTT_NESTED = 3, PGTT_PT = 4;

struct PasidEntries {
    using Words = std::array<uint64_t, 8>;

    // First-stage entry (or, with PGTT_NESTED, nested over the
    // second-stage table `ssptptr` of `ss_levels` levels): present, domain
    // `did`, the first-stage table at `fsptptr` with `w2_flags` in its word.
    static Words first_stage(uint64_t fsptptr, uint16_t did, uint64_t w2_flags = 0,
                             unsigned pgtt = PGTT_FS, uint64_t ssptptr = 0, unsigned ss_levels = 4)
    {
        Words w{};
        w[0] = 1 | uint64_t{pgtt} << 6;
        if (pgtt == PGTT_NESTED)
            w[0] |= ssptptr | uint64_t{ss_levels - 2} << 2;
        w[1] = did;
        w[2] = fsptptr | w2_flags;
        return w;
    }
    // Second-stage entry: the table at `ssptptr`, `levels` levels; `sre`
    // lets supervisor requests through.
    static Words second_stage(uint64_t ssptptr, uint16_t did, unsigned levels = 4, bool sre = false)
    {
        Words w{};
        w[0] = 1 | uint64_t{PGTT_SS} << 6 | ssptptr | uint64_t{levels - 2} << 2;
        w[1] = did;
        w[2] = sre ? 1 : 0;
        return w;
    }
    static Words pass_through(uint16_t did, bool sre = false)
    {
        Words w{};
        w[0] = 1 | uint64_t{PGTT_PT} << 6;
        w[1] = did;
        w[2] = sre ? 1 : 0;
        return w;
    }
};

}  // namespace vtdtest
