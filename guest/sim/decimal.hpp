// SPDX-License-Identifier: GPL-2.0-or-later
// Unsigned decimal numbers in text, as the command line, case files and
// DMA traces write them: one to 20 digits, nothing else (no sign, space or
// prefix), at most 2^64 - 1.
#pragma once

#include <cstdint>
#include <string_view>

namespace viommu::sim {

// False, and @out untouched, unless @s is such a number.
inline bool parse_u64(std::string_view s, uint64_t &out)
{
    if (s.empty() || s.size() > 20)
        return false;
    uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9')
            return false;
        uint64_t d = uint64_t(c - '0');
        if (v > (~uint64_t{0} - d) / 10)
            return false;
        v = v * 10 + d;
    }
    out = v;
    return true;
}

}  // namespace viommu::sim
