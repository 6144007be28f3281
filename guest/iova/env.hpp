// SPDX-License-Identifier: GPL-2.0-or-later
// The environment an IOVA allocator runs in: time, "current CPU", timers,
// and the hooks through which a simulator observes locks and work.
//
// The allocator code never reads a clock, a thread id or a timer directly;
// it asks its Env.  Two implementations ship here:
//
//  - RealEnv: steady_clock, one CPU id per OS thread (assigned on first
//    use, modulo ncpus), timers run by run_due_timers() or by an optional
//    background thread.  Used by the real-thread tests and benchmarks.
//
//  - ManualEnv: a virtual clock that only moves when advance()/set_now()
//    is called (due timers fire then), and a settable current CPU.  Used by
//    deterministic tests; a simulator may use it as is or derive its own.
//
// How a simulator plugs in (guest/sim):
//
//   Derive from Env (or ManualEnv).  The simulator runs one virtual CPU at
//   a time on one OS thread; before calling into the allocator it sets the
//   current CPU (ManualEnv::set_cpu) and the clock.  Every InstrumentedLock
//   calls, in this order, with the lock and the call site:
//
//     lock_attempt(lock, site)  before taking it.  The simulator decides
//                               how long this CPU spins: typically it keeps
//                               a "free at" virtual time per lock and, if
//                               that is in the future, advances the clock
//                               to it (FIFO as a ticket/queued spinlock
//                               would) and returns true ("contended").
//     lock_acquired(lock, site) once held; the lock records the wait as
//                               now() after minus now() before the attempt.
//     lock_released(lock, site) after release; hold = now() difference.
//
//   Work done inside the allocator is reported through charge(work, n)
//   (rbtree nodes visited, magazine operations, ...), so the simulator can
//   advance virtual time by a cost model: a CPU holding iova_rbtree_lock for
//   a 500-node walk holds it 500 "node costs" long, and the other CPUs
//   queue behind it in virtual time.  The real lock underneath is still
//   taken, so nothing breaks if the simulator does use several threads.
//
//   Timers (the 10 ms flush-queue timer, the 100 ms depot trim) are armed
//   through arm_timer(); ManualEnv fires them from advance().  A simulator
//   may override arm_timer/cancel_timer to put them on its own event queue,
//   then call Timer::fire() at the deadline on the virtual CPU it chooses.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace viommu::iova {

using Nanos = uint64_t;

// Where a lock is taken; statistics are kept per lock and per site.
enum class Site : uint8_t {
    alloc,         // rbtree walk + insert (__alloc_and_insert_iova_range)
    free,          // rbtree erase (__free_iova; free_iova from 4.7: find + erase)
    insert,        // batch insert (percpu-batch refill)
    free_batch,    // magazine or batch freed back to the rbtree
    rcache_get,    // per-CPU magazine pop
    rcache_put,    // per-CPU magazine push
    depot_get,     // full magazine taken from the depot ("refill")
    depot_put,     // full magazine given to the depot
    rcache_flush,  // whole-cache flush after an allocation failure
    depot_trim,    // 6.7 delayed depot trimming
    unmap_add,     // deferred unmap: entry added to a flush list/queue
    unmap_flush,   // deferred unmap: batch invalidated and freed
    flush_timer,   // deferred unmap: timer-driven flush
    range_refill,  // viommu-lab: a CPU takes a new range chunk
    lookup,        // rbtree find of a range to free (4.4 find_iova)
    count_
};

const char *site_name(Site s);

// Units of work reported to Env::charge() for virtual-time cost models.
enum class Work : uint8_t {
    node_visit,         // one rbtree node examined, its line in this CPU's caches
    node_fetch,         // ... its line last written by another CPU on this socket
    node_fetch_socket,  // ... by a CPU on another socket
    tree_update,        // one rbtree insert or erase (with rebalancing)
    mag_op,             // one magazine push/pop/swap
    invalidate,         // one IOTLB invalidation issued
    shared_atomic,      // one atomic read-modify-write of a word other CPUs
                        // also write (the flush queue's flush counters): its
                        // line usually comes from another CPU's cache
    count_
};

class InstrumentedLock;

// A one-shot timer.  The owner sets the callback once; arm via Env.
class Timer {
public:
    explicit Timer(std::function<void()> fn) : fn_(std::move(fn)) {}
    void fire() { fn_(); }
    bool pending() const { return pending_.load(std::memory_order_acquire); }

private:
    friend class Env;
    friend class RealEnv;
    friend class ManualEnv;
    std::function<void()> fn_;
    std::atomic<bool> pending_{false};
};

class Env {
public:
    virtual ~Env() = default;

    virtual Nanos now() = 0;
    virtual unsigned current_cpu() = 0;
    virtual unsigned ncpus() const = 0;

    // Arm @t to fire at @deadline unless already pending (mod_timer-like
    // "arm once"); returns false if it was already pending.
    virtual bool arm_timer(Timer &t, Nanos deadline) = 0;
    virtual void cancel_timer(Timer &t) = 0;

    // Time only 1 in 2^n lock acquisitions (wait and hold histograms
    // become samples; counts stay exact).  0 for virtual clocks, where a
    // reading is free; about 6 for real clocks, where each costs 20-70 ns.
    unsigned lock_sample_shift = 0;

    // Simulator hooks; the defaults do nothing.
    virtual bool lock_attempt(const InstrumentedLock &, Site) { return false; }
    virtual void lock_acquired(const InstrumentedLock &, Site) {}
    virtual void lock_released(const InstrumentedLock &, Site) {}
    virtual void charge(Work, uint64_t) {}
    // The socket of @cpu, for the cost of a line it wrote (0: one socket).
    virtual unsigned socket_of(unsigned) const { return 0; }
    // Whether a socket's last-level cache is inclusive, so that it serves a
    // clean line one of its cores read (rbtree.hpp); false: the line comes
    // from a core that holds it.  Read once, when an allocator is built.
    virtual bool inclusive_llc() const { return false; }
    // Whether the rbtree keeps the per-node line bookkeeping that prices a
    // walk's node_fetch charges (rbtree.hpp).  Read once, like the above.
    virtual bool tracks_lines() const { return true; }

protected:
    static void set_pending(Timer &t, bool v) { t.pending_.store(v, std::memory_order_release); }
    static bool claim_pending(Timer &t)
    {
        bool expected = false;
        return t.pending_.compare_exchange_strong(expected, true);
    }
};

// Timers kept in deadline order; shared by RealEnv and ManualEnv.
class TimerList {
public:
    void add(Timer &t, Nanos deadline);
    void remove(Timer &t);
    // Pops the earliest timer due at @now, or returns null.
    Timer *take_first(Nanos now, Nanos &deadline);

private:
    std::mutex lock_;
    std::multimap<Nanos, Timer *> by_deadline_;
};

class RealEnv final : public Env {
public:
    explicit RealEnv(unsigned ncpus);
    ~RealEnv() override;

    Nanos now() override;
    unsigned current_cpu() override;
    unsigned ncpus() const override { return ncpus_; }
    bool arm_timer(Timer &t, Nanos deadline) override;
    void cancel_timer(Timer &t) override;
    // Real cores pay for their own lines; the bookkeeping would only add a
    // write to every node a walk reads.
    bool tracks_lines() const override { return false; }

    // Fire due timers on the calling thread.
    void run_due_timers();
    // A thread that calls run_due_timers() every @period_ns until destroyed.
    void start_timer_thread(Nanos period_ns = 1'000'000);

private:
    unsigned ncpus_;
    // Names this env for current_cpu()'s per-thread cache: unlike its
    // address, never shared with an env destroyed earlier.
    const uint64_t serial_;
    std::atomic<unsigned> next_cpu_{0};
    TimerList timers_;
    // Held while a callback runs, so cancel_timer() waits for it (like
    // del_timer_sync); recursive so a callback may re-arm or cancel.
    std::recursive_mutex firing_;
    std::atomic<bool> stop_{false};
    std::jthread timer_thread_;
};

class ManualEnv : public Env {
public:
    explicit ManualEnv(unsigned ncpus) : ncpus_(ncpus) {}

    Nanos now() override { return now_; }
    unsigned current_cpu() override { return cpu_; }
    unsigned ncpus() const override { return ncpus_; }
    bool arm_timer(Timer &t, Nanos deadline) override;
    void cancel_timer(Timer &t) override;

    void set_cpu(unsigned cpu) { cpu_ = cpu % ncpus_; }
    // Moves the clock forward, firing due timers in deadline order.
    void advance(Nanos delta) { set_now(now_ + delta); }
    void set_now(Nanos t);

private:
    unsigned ncpus_;
    unsigned cpu_ = 0;
    Nanos now_ = 0;
    TimerList timers_;
};

}  // namespace viommu::iova
