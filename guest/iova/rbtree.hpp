// SPDX-License-Identifier: GPL-2.0-or-later
// A red-black tree of IOVA ranges keyed by pfn_lo, with parent pointers so
// that prev()/next() step like the kernel's rb_prev()/rb_next().
//
// Every node the tree code touches while searching or stepping is counted
// in visits(), once per walk (begin_walk()): the levels of a descent and the
// nodes prev()/next() step to.  A node the walk touched before is not counted
// again: it is still in L1, as are the ancestors that rb_prev()'s climbs
// return through, each passed on the descent into the subtree just left.
// A node counts in fetched() or fetched_socket() instead where another CPU
// wrote it (inserted it, relinked or recoloured it) since the walking CPU
// last had its line: the line comes from that CPU's cache.  CPUs are told
// apart modulo 64.  Rebalancing itself is not counted (the kernel's walk
// cost is what the figures compare).  Nodes come from a pool (like a kmem_cache)
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
    mutable uint64_t walk = 0;     // the last walk that touched this node
    mutable uint64_t sharers = 0;  // CPUs (bit cpu % 64) holding its line
    mutable uint16_t socket = 0;   // the socket of the CPU that last wrote it
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
    uint64_t fetched() const { return fetched_; }
    uint64_t fetched_socket() const { return fetched_socket_; }
    // Starts a walk (one operation under the lock) by @cpu on @socket.
    void begin_walk(unsigned cpu = 0, unsigned socket = 0) const
    {
        ++walk_;
        cpu_bit_ = uint64_t{1} << (cpu % 64);
        socket_ = static_cast<uint16_t>(socket);
    }
    // Checks red-black and ordering invariants; for tests.
    bool valid() const;

private:
    // A side of a node, &IovaNode::left or &IovaNode::right: each
    // mirror-image pair of operations is one function given the side.
    using Side = IovaNode *IovaNode::*;
    static Side other(Side s) { return s == &IovaNode::left ? &IovaNode::right : &IovaNode::left; }
    IovaNode *outermost(Side s) const;
    IovaNode *step(const IovaNode *n, Side s) const;
    void touch(const IovaNode *n) const
    {
        if (n->walk == walk_)
            return;
        n->walk = walk_;
        visits_++;
        if (!(n->sharers & cpu_bit_)) {
            (n->socket == socket_ ? fetched_ : fetched_socket_)++;
            n->sharers |= cpu_bit_;
        }
    }
    void dirty(const IovaNode *n) const
    {
        n->sharers = cpu_bit_;
        n->socket = socket_;
    }
    void rotate(IovaNode *x, Side s);
    void insert_fixup(IovaNode *z);
    void erase_fixup(IovaNode *x, IovaNode *xparent);
    void replace(IovaNode *u, IovaNode *v);
    int check(const IovaNode *n, uint64_t lo, uint64_t hi) const;

    IovaNode *root_ = nullptr;
    size_t size_ = 0;
    mutable uint64_t visits_ = 0, fetched_ = 0, fetched_socket_ = 0;
    mutable uint64_t walk_ = 1, cpu_bit_ = 1;
    mutable uint16_t socket_ = 0;
    std::deque<IovaNode> pool_;
    std::vector<IovaNode *> free_nodes_;
};

}  // namespace viommu::iova
