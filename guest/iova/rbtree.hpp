// SPDX-License-Identifier: GPL-2.0-or-later
// A red-black tree of IOVA ranges keyed by pfn_lo, with parent pointers so
// that prev()/next() step like the kernel's rb_prev()/rb_next().
//
// Every node the tree code touches while searching or stepping is counted
// in visits(): one per level of a descent, one per pointer followed by
// prev()/next().  Rebalancing is not counted (the kernel's walk cost is
// what the figures compare).  Nodes come from a pool (like a kmem_cache)
// and keep their address while in use.  Not thread-safe: the owner holds
// iova_rbtree_lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace viommu::iova {

struct IovaNode {
    uint64_t pfn_lo = 0, pfn_hi = 0;
    IovaNode *parent = nullptr, *left = nullptr, *right = nullptr;
    bool red = false;
};

class RbTree {
public:
    RbTree() = default;
    RbTree(const RbTree &) = delete;
    RbTree &operator=(const RbTree &) = delete;

    IovaNode *make(uint64_t lo, uint64_t hi);
    // Insert by pfn_lo, descending from @start (or the root if null or
    // @start is not an ancestor of the insertion point).
    void insert(IovaNode *n, IovaNode *start = nullptr);
    // Unlink and give back to the pool.
    void erase(IovaNode *n);

    IovaNode *root() const { return root_; }
    IovaNode *first() const;
    IovaNode *last() const;
    IovaNode *prev(const IovaNode *n) const;
    IovaNode *next(const IovaNode *n) const;
    // The node whose range contains @pfn (private_find_iova).
    IovaNode *find(uint64_t pfn) const;
    // The lowest node with pfn_lo >= @pfn, or null.
    IovaNode *lower_bound(uint64_t pfn) const;

    size_t size() const { return size_; }
    uint64_t visits() const { return visits_; }
    void count(uint64_t n) const { visits_ += n; }
    // Checks red-black and ordering invariants; for tests.
    bool valid() const;

private:
    // A side of a node, &IovaNode::left or &IovaNode::right: each
    // mirror-image pair of operations is one function given the side.
    using Side = IovaNode *IovaNode::*;
    static Side other(Side s) { return s == &IovaNode::left ? &IovaNode::right : &IovaNode::left; }
    IovaNode *outermost(Side s) const;
    IovaNode *step(const IovaNode *n, Side s) const;
    void rotate(IovaNode *x, Side s);
    void insert_fixup(IovaNode *z);
    void erase_fixup(IovaNode *x, IovaNode *xparent);
    void replace(IovaNode *u, IovaNode *v);
    int check(const IovaNode *n, uint64_t lo, uint64_t hi) const;

    IovaNode *root_ = nullptr;
    size_t size_ = 0;
    mutable uint64_t visits_ = 0;
    std::deque<IovaNode> pool_;
    std::vector<IovaNode *> free_nodes_;
};

}  // namespace viommu::iova
