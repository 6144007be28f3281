// SPDX-License-Identifier: GPL-2.0-or-later
// Unmap/flush policies; see flush.hpp.
#include "flush.hpp"

#include <cstddef>
#include <deque>
#include <vector>

namespace viommu::iova {

namespace {

class PolicyBase : public FlushPolicy {
protected:
    PolicyBase(Allocator &a, Flusher &f, const FlushTunables &t) : a_(a), f_(f), t_(t) {}
    Env &env() { return a_.env(); }
    unsigned cpu() { return a_.env().current_cpu() % a_.config().ncpus; }
    void count(Counter c, uint64_t n = 1) { a_.stats().add(cpu(), c, n); }
    void flush_all(size_t ranges)
    {
        env().charge(Work::invalidate, 1);
        f_.flush_all(ranges);
        count(Counter::unmap_flushes);
    }
    void give_back(std::span<const Range> rs) { a_.free_batch(rs); }
    // ranges the unmap path found with Allocator::lookup()
    void give_back_found(std::span<const Range> rs) { a_.free_found_batch(rs); }

    Allocator &a_;
    Flusher &f_;
    FlushTunables t_;
};

class Strict final : public PolicyBase {
public:
    Strict(Allocator &a, Flusher &f, const FlushTunables &t) : PolicyBase(a, f, t) {}
    void unmap(Range r) override
    {
        count(Counter::unmaps);
        env().charge(Work::invalidate, 1);
        f_.flush_range(r);
        count(Counter::unmap_flushes);
        a_.free(r.pfn, r.pages);
    }
    void drain() override {}
    std::vector<const InstrumentedLock *> locks() const override { return {}; }
    size_t pending() const override { return 0; }
};

// 2008..4.6 intel-iommu: intel_unmap() finds the struct iova
// (find_iova(), under iova_rbtree_lock alone), then add_unmap() queues it
// under async_umap_flush_lock; flush_unmaps() invalidates and frees the
// whole list (__free_iova() of each entry) under async_umap_flush_lock.
class GlobalList final : public PolicyBase {
public:
    GlobalList(Allocator &a, Flusher &f, const FlushTunables &t)
        : PolicyBase(a, f, t), lock_(a.env(), "async_umap_flush_lock", 0, a.config().lock_timing),
          timer_([this] { timeout(); })
    {
    }
    ~GlobalList() override
    {
        env().cancel_timer(timer_);
        drain();
    }

    void unmap(Range r) override
    {
        count(Counter::unmaps);
        // no such mapping: the driver warns and queues nothing
        if (a_.lookup(r.pfn, r.pages) != Status::ok)
            return;
        LockGuard g(lock_, Site::unmap_add);
        if (list_.size() >= t_.high_water)
            flush_locked();
        list_.push_back(r);
        env().arm_timer(timer_, env().now() + t_.timeout_ns);
    }
    void drain() override
    {
        LockGuard g(lock_, Site::unmap_flush);
        flush_locked();
    }
    std::vector<const InstrumentedLock *> locks() const override { return {&lock_}; }
    size_t pending() const override { return list_.size(); }

private:
    void timeout()
    {
        LockGuard g(lock_, Site::flush_timer);
        count(Counter::unmap_timer_flushes);
        flush_locked();
    }
    void flush_locked()
    {
        if (list_.empty())
            return;
        flush_all(list_.size());
        give_back_found(list_);
        list_.clear();
    }

    InstrumentedLock lock_;
    Timer timer_;
    std::vector<Range> list_;
};

// 4.7 intel-iommu: per-CPU deferred queues.
class PercpuDefer final : public PolicyBase {
public:
    PercpuDefer(Allocator &a, Flusher &f, const FlushTunables &t) : PolicyBase(a, f, t)
    {
        for (unsigned c = 0; c < a.config().ncpus; c++)
            qs_.push_back(std::make_unique<Queue>(this, c));
    }
    ~PercpuDefer() override
    {
        for (auto &q : qs_)
            env().cancel_timer(q->timer);
        drain();
    }

    void unmap(Range r) override
    {
        count(Counter::unmaps);
        Queue &q = *qs_[cpu()];
        // Read unlocked as the kernel did; a stale size only shifts a flush.
        if (q.size.load(std::memory_order_relaxed) >= t_.high_water)
            for (auto &other : qs_)
                flush_queue(*other, Site::unmap_flush);
        LockGuard g(q.lock, Site::unmap_add);
        q.entries.push_back(r);
        q.size.store(q.entries.size(), std::memory_order_relaxed);
        env().arm_timer(q.timer, env().now() + t_.timeout_ns);
    }
    void drain() override
    {
        for (auto &q : qs_)
            flush_queue(*q, Site::unmap_flush);
    }
    std::vector<const InstrumentedLock *> locks() const override
    {
        std::vector<const InstrumentedLock *> v;
        for (auto &q : qs_)
            v.push_back(&q->lock);
        return v;
    }
    size_t pending() const override
    {
        size_t n = 0;
        for (auto &q : qs_)
            n += q->size.load();
        return n;
    }

private:
    struct Queue {
        Queue(PercpuDefer *p, unsigned c)
            : lock(p->env(), "deferred_flush", c, p->a_.config().lock_timing), timer([p, this] {
                  p->count(Counter::unmap_timer_flushes);
                  p->flush_queue(*this, Site::flush_timer);
              })
        {
        }
        InstrumentedLock lock;
        Timer timer;
        std::vector<Range> entries;
        std::atomic<size_t> size{0};
    };

    void flush_queue(Queue &q, Site site)
    {
        LockGuard g(q.lock, site);
        if (q.entries.empty())
            return;
        flush_all(q.entries.size());
        give_back(q.entries);
        q.entries.clear();
        q.size.store(0, std::memory_order_relaxed);
    }

    std::vector<std::unique_ptr<Queue>> qs_;
};

// 4.14 iova flush queue: per-CPU rings and two global counters.
class FlushQueue final : public PolicyBase {
public:
    FlushQueue(Allocator &a, Flusher &f, const FlushTunables &t)
        : PolicyBase(a, f, t), timer_([this] { timeout(); })
    {
        for (unsigned c = 0; c < a.config().ncpus; c++)
            rings_.push_back(std::make_unique<Ring>(a.env(), c, a.config().lock_timing));
    }
    ~FlushQueue() override
    {
        env().cancel_timer(timer_);
        drain();
    }

    void unmap(Range r) override
    {
        count(Counter::unmaps);
        Ring &ring = *rings_[cpu()];
        {
            LockGuard g(ring.lock, Site::unmap_add);
            free_done(ring);
            // fq_full(): a ring of IOVA_FQ_SIZE slots is full one entry
            // short of them (tail + 1 == head).
            if (ring.entries.size() + 1 >= t_.ring_size) {
                domain_flush();
                free_done(ring);
            }
            ring.entries.push_back({r, start_.load(std::memory_order_acquire)});
            ring.size.store(ring.entries.size(), std::memory_order_relaxed);
        }
        env().arm_timer(timer_, env().now() + t_.timeout_ns);
    }
    void drain() override
    {
        if (!pending())
            return;
        domain_flush();
        for (auto &r : rings_) {
            LockGuard g(r->lock, Site::unmap_flush);
            free_done(*r);
        }
    }
    std::vector<const InstrumentedLock *> locks() const override
    {
        std::vector<const InstrumentedLock *> v;
        for (auto &r : rings_)
            v.push_back(&r->lock);
        return v;
    }
    size_t pending() const override
    {
        size_t n = 0;
        for (auto &r : rings_)
            n += r->size.load(std::memory_order_relaxed);
        return n;
    }

private:
    struct Entry {
        Range r;
        uint64_t counter;
    };
    struct Ring {
        Ring(Env &env, unsigned c, bool timed) : lock(env, "fq_ring", c, timed) {}
        InstrumentedLock lock;
        std::deque<Entry> entries;
        std::vector<Range> done;      // free_done()'s batch
        std::atomic<size_t> size{0};  // read by others without the lock
    };

    // Every queued entry is older than the new flush_start: all of them
    // can be freed once it finishes.
    void domain_flush()
    {
        start_.fetch_add(1, std::memory_order_acq_rel);
        env().charge(Work::shared_atomic, 1);
        flush_all(pending());
        finish_.fetch_add(1, std::memory_order_acq_rel);
        env().charge(Work::shared_atomic, 1);
    }
    // With the ring's lock held: entries queued before a completed flush.
    void free_done(Ring &ring)
    {
        uint64_t done = finish_.load(std::memory_order_acquire);
        ring.done.clear();
        while (!ring.entries.empty() && ring.entries.front().counter < done) {
            ring.done.push_back(ring.entries.front().r);
            ring.entries.pop_front();
        }
        if (!ring.done.empty())
            give_back(ring.done);
        ring.size.store(ring.entries.size(), std::memory_order_relaxed);
    }
    void timeout()
    {
        count(Counter::unmap_timer_flushes);
        domain_flush();
        for (auto &r : rings_) {
            LockGuard g(r->lock, Site::flush_timer);
            free_done(*r);
        }
    }

    std::vector<std::unique_ptr<Ring>> rings_;
    std::atomic<uint64_t> start_{0}, finish_{0};
    Timer timer_;
};

constexpr std::string_view policy_names[] = {"strict", "global-list", "percpu-defer",
                                             "flush-queue"};

}  // namespace

std::span<const std::string_view> FlushPolicy::policies()
{
    return policy_names;
}

void FlushPolicy::reset_stats()
{
    for (const InstrumentedLock *l : locks())
        const_cast<InstrumentedLock *>(l)->reset_stats();
}

std::unique_ptr<FlushPolicy> FlushPolicy::create(std::string_view policy, Allocator &a, Flusher &f,
                                                 const FlushTunables &t)
{
    if (policy == "strict")
        return std::make_unique<Strict>(a, f, t);
    if (policy == "global-list")
        return std::make_unique<GlobalList>(a, f, t);
    if (policy == "percpu-defer")
        return std::make_unique<PercpuDefer>(a, f, t);
    if (policy == "flush-queue")
        return std::make_unique<FlushQueue>(a, f, t);
    return nullptr;
}

}  // namespace viommu::iova
