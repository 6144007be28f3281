// SPDX-License-Identifier: GPL-2.0-or-later
// The rbtree allocation walks of each kernel generation; see tree.hpp and
// docs/iova.rst.  Written from the descriptions in the reference notes.
#include "tree.hpp"

#include <algorithm>
#include <bit>

namespace viommu::iova {

namespace {
constexpr Pfn anchor_pfn = ~Pfn{0};
}

IovaTree::IovaTree(Env &env, Stats &stats, Walk walk, Pfn start_pfn, Pfn dma32_pfn, bool timed,
                   bool exact_max32)
    : env_(env), stats_(stats), walk_(walk), start_pfn_(start_pfn), dma32_(dma32_pfn),
      lock_(env, "iova_rbtree_lock", 0, timed), rb_(env.inclusive_llc(), env.tracks_lines()),
      max32_(dma32_pfn + 1), exact_max32_(exact_max32)
{
    if (walk_ != Walk::v4_4) {
        anchor_ = rb_.make(anchor_pfn, anchor_pfn);
        rb_.insert(anchor_);
        cached_ = cached32_ = anchor_;
    }
}

IovaTree::WalkStart IovaTree::begin_walk(unsigned cpu)
{
    rb_.begin_walk(cpu, env_.socket_of(cpu));
    return {rb_.visits(), rb_.fetched(), rb_.fetched_socket()};
}

void IovaTree::account(unsigned cpu, const WalkStart &w0, bool alloc, bool updated)
{
    uint64_t n = rb_.visits() - w0.visits;
    uint64_t fetched = rb_.fetched() - w0.fetched;
    uint64_t fetched_socket = rb_.fetched_socket() - w0.fetched_socket;
    env_.charge(Work::node_visit, n - fetched - fetched_socket);
    env_.charge(Work::node_fetch, fetched);
    env_.charge(Work::node_fetch_socket, fetched_socket);
    // Only an insert or erase rebalances; a failed walk or lookup does
    // not (alloc_iova() allocates and frees its struct iova outside the
    // lock).
    if (updated)
        env_.charge(Work::tree_update, 1);
    if (!stats_.enabled())
        return;
    stats_.add(cpu, Counter::nodes_visited, n);
    auto &h = stats_.hist(cpu);
    (alloc ? h.nodes_per_alloc : h.nodes_per_free).add(n);
}

AllocResult IovaTree::alloc(unsigned cpu, uint64_t pages, Pfn limit, Site site)
{
    LockGuard g(lock_, site);
    return alloc_locked(cpu, pages, limit);
}

AllocResult IovaTree::alloc_locked(unsigned cpu, uint64_t pages, Pfn limit)
{
    // 5.0: a 32-bit request at least as large as one that failed fails
    // before any walk (a lock hold, but no tree allocation).
    if (walk_ >= Walk::v5_0 && limit <= dma32_ && pages >= max32_) {
        stats_.add(cpu, Counter::fast_fail_32bit);
        return {Status::no_space, 0};
    }
    WalkStart v0 = begin_walk(cpu);
    AllocResult r = walk_ == Walk::v4_4 ? alloc_v4_4(pages, limit) : alloc_v4_15(cpu, pages, limit);
    account(cpu, v0, true, r.ok());
    stats_.add(cpu, Counter::rbtree_allocs);
    return r;
}

// 4.4: walk down from the highest node (or from below cached32_node for
// 32-bit requests), lowering @limit past each node until the hole above a
// node holds the padded size.
AllocResult IovaTree::alloc_v4_4(uint64_t size, Pfn limit)
{
    const Pfn saved_limit = limit;
    const Pfn align = std::bit_ceil(size) - 1;
    auto pad_for = [&](Pfn lim) { return lim + 1 < size ? 0 : (lim + 1 - size) & align; };
    IovaNode *curr, *prev;
    Pfn pad = 0;

    if (limit > dma32_ || !cached32_) {
        curr = rb_.last();
    } else {
        curr = rb_.prev(cached32_);
        // 4.4 takes cached32->pfn_lo - 1 as is; clamp so a limit below
        // dma32 is never raised.
        limit = std::min(limit, cached32_->pfn_lo - 1);
    }
    prev = curr;
    while (curr) {
        if (limit < curr->pfn_lo) {
            // move left
        } else if (limit < curr->pfn_hi) {
            limit = curr->pfn_lo - 1;
        } else {
            pad = pad_for(limit);
            if (curr->pfn_hi + size + pad <= limit)
                break;
            limit = curr->pfn_lo - 1;
        }
        prev = curr;
        curr = rb_.prev(curr);
    }
    if (!curr) {
        pad = pad_for(limit);
        if (limit + 1 < size + pad || start_pfn_ + size + pad > limit)
            return {Status::no_space, 0};
    }
    IovaNode *n = rb_.make(limit - (size + pad) + 1, limit - pad);
    rb_.insert(n, prev);
    insert_update(n, saved_limit);
    return {Status::ok, n->pfn_lo};
}

// 4.15 onwards: start at the cached node for the limit's side of 4 GiB and
// step down while the aligned candidate overlaps the node below.  Limits
// are exclusive inside this function, as in the kernel.
AllocResult IovaTree::alloc_v4_15(unsigned cpu, uint64_t size, Pfn limit_incl)
{
    const Pfn limit = limit_incl + 1;
    const Pfn dma32 = dma32_ + 1;
    const Pfn mask = ~Pfn{0} << std::bit_width(size - 1);
    const bool has_fail_fast = walk_ >= Walk::v5_0;
    const bool has_retry = walk_ >= Walk::v5_11;

    IovaNode *curr = limit <= dma32 ? cached32_ : cached_;
    IovaNode *prev = curr;
    Pfn high = limit, low = start_pfn_, new_pfn = 0;
    // The kernel's cached.hi + 1 wraps to 0 at the anchor; no second pass then.
    const Pfn retry_pfn = curr == anchor_ ? limit : std::max(curr->pfn_hi + 1, start_pfn_);

    for (;;) {
        do {
            high = std::min(high, curr->pfn_lo);
            new_pfn = (high - size) & mask;
            prev = curr;
            curr = rb_.prev(curr);
        } while (curr && new_pfn <= curr->pfn_hi && (!has_retry || new_pfn >= low));

        if (high >= size && new_pfn >= low)
            break;
        if (has_retry && low == start_pfn_ && retry_pfn < limit) {
            high = limit;
            low = retry_pfn;
            if (walk_ >= Walk::v5_13) {
                // iova_find_limit(): anchor above 32 bits, else the lowest
                // node at or above the limit.
                curr = limit > dma32 ? anchor_ : rb_.lower_bound(limit);
                stats_.add(cpu, Counter::restart_walks);
            } else {
                curr = anchor_;
            }
            stats_.add(cpu, Counter::retry_from_last);
            continue;
        }
        if (has_fail_fast && (!exact_max32_ || limit == dma32))
            max32_ = size;
        return {Status::no_space, 0};
    }

    IovaNode *n = rb_.make(new_pfn, new_pfn + size - 1);
    rb_.insert(n, prev);
    insert_update(n, limit_incl);
    return {Status::ok, n->pfn_lo};
}

void IovaTree::insert_update(IovaNode *n, Pfn limit)
{
    if (walk_ == Walk::v4_4) {
        if (limit == dma32_)
            cached32_ = n;
        return;
    }
    if (n->pfn_hi <= dma32_)
        cached32_ = n;
    else
        cached_ = n;
}

void IovaTree::delete_update(IovaNode *n)
{
    if (walk_ == Walk::v4_4) {
        if (!cached32_ || n->pfn_lo < cached32_->pfn_lo)
            return;
        IovaNode *next = rb_.next(n);
        cached32_ = next && next->pfn_lo <= dma32_ ? next : nullptr;
        return;
    }
    const bool moves32 = n == cached32_ || (n->pfn_hi <= dma32_ && n->pfn_lo >= cached32_->pfn_lo);
    if (moves32)
        cached32_ = rb_.next(n);
    if (n->pfn_lo >= cached_->pfn_lo)
        cached_ = rb_.next(n);
    // Until 5b61343b5059 only a free that moved cached32_node reset
    // max32_alloc_size; a free below that node left 32-bit requests failing
    // fast with space free.
    if (walk_ >= Walk::v5_18 ? n->pfn_lo <= dma32_ : walk_ >= Walk::v5_0 && moves32)
        max32_ = dma32_ + 1;
}

bool IovaTree::free_locked(unsigned cpu, Pfn pfn)
{
    WalkStart v0 = begin_walk(cpu);
    IovaNode *n = rb_.find(pfn);
    bool found = n && n != anchor_ && n->pfn_lo == pfn;
    if (found) {
        delete_update(n);
        rb_.erase(n);
    }
    account(cpu, v0, false, found);
    stats_.add(cpu, Counter::rbtree_frees);
    return found;
}

void IovaTree::shrink_locked(unsigned cpu, Pfn pfn, Pfn new_hi)
{
    WalkStart v0 = begin_walk(cpu);
    IovaNode *n = rb_.find(pfn);
    if (n && n != anchor_ && n->pfn_lo == pfn && new_hi >= pfn && new_hi < n->pfn_hi) {
        // As a free followed by a smaller insert that leaves the cached
        // nodes above it, so the next walk sees the freed top.
        delete_update(n);
        rb_.erase(n);
        rb_.insert(rb_.make(pfn, new_hi));
    }
    account(cpu, v0, false, true);
}

bool IovaTree::lookup(unsigned cpu, Pfn pfn, Site site)
{
    LockGuard g(lock_, site);
    WalkStart v0 = begin_walk(cpu);
    IovaNode *n = rb_.find(pfn);
    account(cpu, v0, false, false);
    return n && n != anchor_ && n->pfn_lo == pfn;
}

bool IovaTree::erase_found(unsigned cpu, Pfn pfn, Site site)
{
    LockGuard g(lock_, site);
    // The caller holds the struct iova: the search below stands for that
    // pointer and is not charged.
    IovaNode *n = rb_.find(pfn);
    if (!n || n == anchor_ || n->pfn_lo != pfn)
        return false;
    WalkStart v0 = begin_walk(cpu);
    delete_update(n);
    rb_.erase(n);
    account(cpu, v0, false, true);
    stats_.add(cpu, Counter::rbtree_frees);
    return true;
}

bool IovaTree::free(unsigned cpu, Pfn pfn)
{
    if (walk_ == Walk::v4_4)
        return lookup(cpu, pfn) && erase_found(cpu, pfn);
    LockGuard g(lock_, Site::free);
    return free_locked(cpu, pfn);
}

bool IovaTree::reserve(unsigned cpu, Pfn lo, Pfn hi)
{
    LockGuard g(lock_, Site::insert);
    WalkStart v0 = begin_walk(cpu);
    IovaNode *above = rb_.lower_bound(lo);
    IovaNode *below = above ? rb_.prev(above) : rb_.last();
    bool overlaps = (above && above->pfn_lo <= hi) || (below && below->pfn_hi >= lo);
    if (!overlaps)
        rb_.insert(rb_.make(lo, hi));
    account(cpu, v0, true, !overlaps);
    return !overlaps;
}

void IovaTree::free_batch(unsigned cpu, std::span<const Pfn> pfns, Site site, bool lock_if_empty)
{
    if (pfns.empty() && !lock_if_empty)
        return;
    LockGuard g(lock_, site);
    for (Pfn p : pfns)
        free_locked(cpu, p);
}

}  // namespace viommu::iova
