// SPDX-License-Identifier: GPL-2.0-or-later
// IovaTree: the rbtree half of an iova_domain (tree, iova_rbtree_lock,
// cached nodes), with the allocation walk of each kernel generation.
//
//   Walk::v4_4   top-down walk from rb_last() or rb_prev(cached32_node),
//                padding computed per step; cached32 only
//   Walk::v4_15  cached_node + cached32_node, anchor node at ~0
//   Walk::v5_0   + max32_alloc_size fail-fast
//   Walk::v5_11  + second pass [cached.hi + 1, limit) from the anchor
//   Walk::v5_13  + second pass starts at iova_find_limit(limit)
//   Walk::v5_18  + max32_alloc_size reset by any free below 4 GiB, not only
//                with cached32_node's move (commit 5b61343b5059)
//
// Limits passed in are inclusive (alloc_iova_fast's limit_pfn).
#pragma once

#include <cstddef>
#include <span>

#include "allocator.hpp"
#include "rbtree.hpp"

namespace viommu::iova {

enum class Walk { v4_4, v4_15, v5_0, v5_11, v5_13, v5_18 };

class IovaTree {
public:
    // @exact_max32: only a failure at exactly the 32-bit limit lowers
    // max32_alloc_size (the kernel lets every failed walk do it, whatever
    // its limit, which makes later 32-bit requests fail fast wrongly).
    IovaTree(Env &env, Stats &stats, Walk walk, Pfn start_pfn, Pfn dma32_pfn, bool timed,
             bool exact_max32 = false);

    // alloc_iova(): size-aligned allocation of @pages at or below @limit.
    AllocResult alloc(unsigned cpu, uint64_t pages, Pfn limit, Site site = Site::alloc);
    // free_iova(): false if no range starts at @pfn.  For Walk::v4_4 it is
    // lookup() and erase_found(), each in its own hold, as 4.4's free_iova()
    // is find_iova() and __free_iova().
    bool free(unsigned cpu, Pfn pfn);
    // 4.4 find_iova(): one hold, a walk from the root to the range that
    // starts at @pfn; nothing changes.  False if there is none.
    bool lookup(unsigned cpu, Pfn pfn, Site site = Site::lookup);
    // 4.4 __free_iova() of the range starting at @pfn, which the caller
    // found with lookup() and holds: one hold, the erase only (no walk).
    bool erase_found(unsigned cpu, Pfn pfn, Site site = Site::free);
    // reserve_iova(): insert [lo, hi] unless it overlaps a node.
    bool reserve(unsigned cpu, Pfn lo, Pfn hi);
    // Many frees in one lock hold (a magazine going back to the tree).
    // @lock_if_empty: take the lock for an empty batch too, as
    // iova_magazine_free_pfns() does.
    void free_batch(unsigned cpu, std::span<const Pfn> pfns, Site site, bool lock_if_empty = false);

    // Unlocked variants for callers that hold lock already.
    AllocResult alloc_locked(unsigned cpu, uint64_t pages, Pfn limit);
    bool free_locked(unsigned cpu, Pfn pfn);
    // Give back the top of the range starting at @pfn: it ends at @new_hi
    // afterwards (its start, and so its key, stay).
    void shrink_locked(unsigned cpu, Pfn pfn, Pfn new_hi);

    InstrumentedLock &lock() { return lock_; }
    const InstrumentedLock &lock() const { return lock_; }
    size_t nodes() const { return rb_.size() - (anchor_ ? 1 : 0); }
    const RbTree &rb() const { return rb_; }
    Pfn max32_alloc_size() const { return max32_; }

private:
    AllocResult alloc_v4_4(uint64_t pages, Pfn limit);
    AllocResult alloc_v4_15(unsigned cpu, uint64_t pages, Pfn limit);
    void delete_update(IovaNode *n);
    void insert_update(IovaNode *n, Pfn limit);
    // Where a walk's counts started: visits, fetched, fetched_socket.
    struct WalkStart {
        uint64_t visits, fetched, fetched_socket;
    };
    WalkStart begin_walk(unsigned cpu);
    void account(unsigned cpu, const WalkStart &w0, bool alloc, bool updated);

    Env &env_;
    Stats &stats_;
    Walk walk_;
    Pfn start_pfn_;
    Pfn dma32_;  // inclusive, as in 4.4
    InstrumentedLock lock_;
    RbTree rb_;
    IovaNode *anchor_ = nullptr;
    IovaNode *cached32_ = nullptr;
    IovaNode *cached_ = nullptr;
    Pfn max32_;  // 5.0: exclusive dma32 limit when nothing failed
    bool exact_max32_;
};

}  // namespace viommu::iova
