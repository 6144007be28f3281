// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel's spinlock implementation (arch_spinlock_t) as the modelled
// kernel had it, and what handing a contended lock over costs with it.
//
//   queued  qspinlock (x86 from 4.2, arm64 from 4.19): waiters queue on
//           MCS nodes; only the queue head spins on the lock word, so a
//           release moves the lock line to one CPU whatever the number
//           of waiters.
//   ticket  the ticket lock (x86 before 4.2, arm64 before 4.19): every
//           waiter spins on the lock word (arm64: in WFE, woken by the
//           release clearing its exclusive monitor).  The release's store
//           invalidates every waiter's copy and each waiter reads the line
//           again; those reads are served one after another, and the next
//           ticket's holder is, on average, in the middle of them.
//
// docs/cost-model.rst ("How the costs are charged") gives the sources.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace viommu::sim {

enum class Spinlock { queued, ticket };

std::optional<Spinlock> parse_spinlock(std::string_view name);
std::span<const std::string_view> spinlock_names();

// Lock-line transfers, in halves, that the next holder waits for when a
// lock is released with @spinners CPUs spinning on it (the next holder
// included; 0: nobody waited, the line moves on the next holder's own
// attempt, one transfer).  queued: 2 (one transfer) for any number;
// ticket: spinners + 1 ((k + 1) / 2 transfers: the mean position of the
// next holder's read among k serialized re-reads).
unsigned handoff_half_transfers(Spinlock kind, unsigned spinners);

}  // namespace viommu::sim
