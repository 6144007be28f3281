// SPDX-License-Identifier: GPL-2.0-or-later
#include "spinlock.hpp"

#include <array>

namespace viommu::sim {

namespace {
constexpr std::array<std::string_view, 2> names{"queued", "ticket"};
}

std::span<const std::string_view> spinlock_names()
{
    return names;
}

std::optional<Spinlock> parse_spinlock(std::string_view name)
{
    if (name == "queued")
        return Spinlock::queued;
    if (name == "ticket")
        return Spinlock::ticket;
    return std::nullopt;
}

unsigned handoff_half_transfers(Spinlock kind, unsigned spinners)
{
    if (kind == Spinlock::queued || spinners <= 1)
        return 2;
    return spinners + 1;
}

}  // namespace viommu::sim
