// SPDX-License-Identifier: GPL-2.0-or-later
// Instrumented re-implementation of the Linux guest IOVA allocator through
// its history: the C++ interface (the C one is include/viommu/iova.h).
//
//   env.hpp        time, current CPU, timers, simulator hooks (start here
//                  if you plug in a virtual clock)
//   lock.hpp       InstrumentedLock: per-site acquisitions/contention/wait/hold
//   stats.hpp      per-CPU counters, histograms
//   allocator.hpp  Allocator and its variants, selected by name
//   flush.hpp      unmap/flush policies and the Flusher callback
//   dma.hpp        the dma-iommu layer (SAC trick, forcedac, 6.6 once-only)
//
// Typical use:
//
//   RealEnv env(4);
//   auto a = Allocator::create("linux-4.15", env);
//   CountingFlusher inv;
//   auto fq = FlushPolicy::create("flush-queue", *a, inv);
//   DmaDomain dom(*a, *fq);
//   DmaDevice nic{.dma_mask = ~0ull};
//   MapResult m = dom.map(nic, 1500);
//   dom.unmap(m.iova, 1500);
//   std::string json = a->stats_json();
#pragma once

#include "allocator.hpp"
#include "dma.hpp"
#include "env.hpp"
#include "flush.hpp"
#include "lock.hpp"
#include "stats.hpp"
