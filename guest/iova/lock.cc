// SPDX-License-Identifier: GPL-2.0-or-later
// InstrumentedLock slow path; see lock.hpp.
#include "lock.hpp"

#include <thread>

namespace viommu::iova {

void InstrumentedLock::spin() const
{
    for (unsigned n = 0;; n++) {
        while (word_.load(std::memory_order_relaxed)) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            // More threads than cores: let the holder run.
            if (++n % 64 == 0)
                std::this_thread::yield();
        }
        if (!word_.exchange(true, std::memory_order_acquire))
            return;
    }
}

}  // namespace viommu::iova
