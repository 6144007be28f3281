// SPDX-License-Identifier: GPL-2.0-or-later
// The VT-d invalidation queue as qi_submit_sync() drives it (intel-iommu,
// drivers/iommu/intel/dmar.c; read in Debian's linux-source-6.1, and the
// same loop in the 4.x driver).
//
// raw_spin_lock_irqsave(&qi->q_lock) (interrupts stay disabled until the
// function returns), write the descriptors and a wait descriptor, write
// the tail register, then poll the wait descriptor's status word: every
// iteration checks it and qi_check_fault() (a read of the fault status
// register) with q_lock held, drops q_lock for one cpu_relax() and takes
// it again.  So a CPU waiting for its invalidation keeps taking the
// queue's lock: another CPU submitting in the meantime gets it in one of
// those windows, and CPUs polling at the same time pass its line back and
// forth at every iteration.
//
// Timing (docs/cost-model.rst):
//   submission  the VirtualLock "vtd.q_lock" (site "submit"), inv_submit
//               for the descriptors and the tail write;
//   one poll    inv_poll (the status and fault reads) plus lock_local for
//               the unlock/relock, plus, when another CPU took q_lock since
//               this CPU's previous iteration (a submission or another
//               poller's iteration), the line from that CPU, after waiting
//               for its iteration to end;
//   completion  the iteration that finds the status written after the
//               hardware reached the wait descriptor ends the call.
// The whole call runs with interrupts disabled: InvStats::busy_ns is that
// time.  A submitter is not delayed by the pollers' short holds (at most
// one iteration each).
#pragma once

#include <memory>

#include "invq.hpp"

namespace viommu::sim {

std::unique_ptr<InvQueue> make_qi_sync_queue(Machine &m);

}  // namespace viommu::sim
