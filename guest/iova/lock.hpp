// SPDX-License-Identifier: GPL-2.0-or-later
// InstrumentedLock: a test-and-test-and-set spinlock (the kernel's locks
// here are irqsave spinlocks) that records, per call site, acquisitions,
// contended acquisitions, and wait and hold time histograms.
//
// The statistics are written while the lock is held, so they need no
// synchronisation of their own.  "Contended" means the first try failed
// (real threads) or the Env said the CPU had to queue (simulation).  The
// counts are kept in the lock; a site's two histograms (about 700 bytes)
// are allocated at its first timed acquisition, so an untimed lock, or a
// site never taken, allocates nothing.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>

#include "env.hpp"
#include "stats.hpp"

namespace viommu::iova {

struct SiteLockStats {
    uint64_t acquisitions = 0;
    uint64_t contended = 0;
    TimeHistogram wait_ns;
    TimeHistogram hold_ns;

    void merge(const SiteLockStats &o)
    {
        acquisitions += o.acquisitions;
        contended += o.contended;
        wait_ns.merge(o.wait_ns);
        hold_ns.merge(o.hold_ns);
    }
};

using LockStats = std::array<SiteLockStats, static_cast<unsigned>(Site::count_)>;

class InstrumentedLock {
public:
    // @name identifies the lock class ("iova_rbtree_lock", "cpu_rcache",
    // ...); @instance tells per-CPU instances apart.
    InstrumentedLock(Env &env, std::string name, unsigned instance, bool timed)
        : env_(env), name_(std::move(name)), instance_(instance), timed_(timed)
    {
    }
    InstrumentedLock(const InstrumentedLock &) = delete;
    InstrumentedLock &operator=(const InstrumentedLock &) = delete;

    void lock(Site site)
    {
        const bool timed = timed_ && sampled();
        Nanos t0 = timed ? env_.now() : 0;
        bool contended = env_.lock_attempt(*this, site);
        if (!try_once()) {
            contended = true;
            spin();
        }
        env_.lock_acquired(*this, site);
        const unsigned i = static_cast<unsigned>(site);
        acquisitions_[i]++;
        contended_[i] += contended;
        if (timed) {
            held_since_ = env_.now();
            times(i).wait_ns.add_exclusive(held_since_ - t0);
        }
        site_ = site;
        timing_ = timed;
    }

    void unlock()
    {
        Site site = site_;
        if (timing_)
            times_[static_cast<unsigned>(site)]->hold_ns.add_exclusive(env_.now() - held_since_);
        word_.store(false, std::memory_order_release);
        env_.lock_released(*this, site);
    }

    const std::string &name() const { return name_; }
    unsigned instance() const { return instance_; }
    // Read only while no one can take the lock, or accept torn figures.
    uint64_t acquisitions(Site s) const { return acquisitions_[static_cast<unsigned>(s)]; }
    // Adds site @s's figures to @sum.
    void add_to(SiteLockStats &sum, Site s) const
    {
        const unsigned i = static_cast<unsigned>(s);
        sum.acquisitions += acquisitions_[i];
        sum.contended += contended_[i];
        if (times_[i]) {
            sum.wait_ns.merge(times_[i]->wait_ns);
            sum.hold_ns.merge(times_[i]->hold_ns);
        }
    }
    LockStats stats() const
    {
        LockStats all;
        for (unsigned i = 0; i < all.size(); i++)
            add_to(all[i], static_cast<Site>(i));
        return all;
    }
    // A copy, and a reset, taken while holding the lock (not counted as an
    // acquisition): safe while other threads (a timer) may take it.
    LockStats snapshot() const
    {
        acquire();
        LockStats copy = stats();
        word_.store(false, std::memory_order_release);
        return copy;
    }
    void reset_stats()
    {
        acquire();
        acquisitions_ = {};
        contended_ = {};
        for (auto &t : times_)
            if (t)
                *t = {};
        word_.store(false, std::memory_order_release);
    }

private:
    struct SiteTimes {
        TimeHistogram wait_ns;
        TimeHistogram hold_ns;
    };
    static constexpr unsigned sites = static_cast<unsigned>(Site::count_);

    SiteTimes &times(unsigned i)
    {
        if (!times_[i])
            times_[i] = std::make_unique<SiteTimes>();
        return *times_[i];
    }
    void acquire() const
    {
        if (!try_once())
            spin();
    }
    bool try_once() const
    {
        return !word_.load(std::memory_order_relaxed) &&
               !word_.exchange(true, std::memory_order_acquire);
    }
    void spin() const;
    bool sampled() const
    {
        const unsigned shift = env_.lock_sample_shift;
        if (!shift)
            return true;
        thread_local unsigned n = 0;
        return (n++ & ((1u << shift) - 1)) == 0;
    }

    Env &env_;
    std::string name_;
    unsigned instance_;
    bool timed_;
    alignas(64) mutable std::atomic<bool> word_{false};
    Site site_ = Site::alloc;
    bool timing_ = false;  // this acquisition is timed
    Nanos held_since_ = 0;
    std::array<uint64_t, sites> acquisitions_{};
    std::array<uint64_t, sites> contended_{};
    std::array<std::unique_ptr<SiteTimes>, sites> times_;  // null until timed
};

// RAII holder: LockGuard g(lock, Site::alloc);
class LockGuard {
public:
    LockGuard(InstrumentedLock &l, Site s) : l_(l) { l_.lock(s); }
    ~LockGuard() { l_.unlock(); }
    LockGuard(const LockGuard &) = delete;
    LockGuard &operator=(const LockGuard &) = delete;

private:
    InstrumentedLock &l_;
};

}  // namespace viommu::iova
