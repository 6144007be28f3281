// SPDX-License-Identifier: GPL-2.0-or-later
// A red-black tree of IOVA ranges keyed by pfn_lo, with parent pointers so
// that prev()/next() step like the kernel's rb_prev()/rb_next().
//
// Every node the tree code touches while searching or stepping is counted
// in visits(), once per walk (begin_walk()): the levels of a descent and the
// nodes prev()/next() step to.  A node the walk touched before is not counted
// again: it is still in L1, as are the ancestors that rb_prev()'s climbs
// return through, each passed on the descent into the subtree just left.
// A node counts in fetched() or fetched_socket() instead where the walking
// CPU has not held its line since it was last written (inserted, relinked
// or recoloured): the first CPU to read it after the write takes it from
// the writer's cache; after that the line is clean and shared, and a CPU
// on a socket that already has a copy reads it from that socket's
// (inclusive) last-level cache as any L3 hit, while a CPU on a socket
// without one fetches it across.  CPUs are told apart up to 256 (the
// simulator's limit; beyond it modulo 256), sockets modulo 32.
// Rebalancing itself is not counted (the kernel's walk cost is what the
// figures compare).  That line bookkeeping writes to every node a walk
// reads; a tree built without it (real threads, where nothing charges the
// lines) leaves walked nodes untouched, as the kernel's walks do, and
// marks the nodes a walk touched in an array of the walking CPU's own.
// Nodes come from a pool (like a kmem_cache) and keep their address while
// in use.  Not thread-safe: the owner holds iova_rbtree_lock.
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace viommu::iova {

struct IovaNode {
    uint64_t pfn_lo = 0, pfn_hi = 0;
    IovaNode *parent = nullptr, *left = nullptr, *right = nullptr;
    bool red = false;
    uint32_t id = 0;  // its slot in the pool, for the walking CPU's marks
    // line bookkeeping (RbTree built with @track_lines)
    mutable bool modified = false;     // written, and not read by another CPU since
    mutable uint16_t socket = 0;       // the socket of the CPU that last wrote it
    mutable uint32_t sockets = 0;      // sockets (bit socket % 32) holding its line
    mutable uint64_t walk = 0;         // the last walk that touched this node
    mutable std::bitset<256> sharers;  // CPUs holding its line (viommu-sim: up to 256)
};

class RbTree {
public:
    // @inclusive_llc: a socket's last-level cache serves the clean lines
    // its cores read (otherwise every CPU new to a line fetches it).
    // @track_lines: keep the line bookkeeping behind fetched() and
    // fetched_socket() (otherwise both stay 0 and walks write nothing).
    explicit RbTree(bool inclusive_llc = false, bool track_lines = true)
        : inclusive_llc_(inclusive_llc), track_lines_(track_lines)
    {
    }
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
        cpu_ = cpu % 256;
        if (!track_lines_)
            begin_marks();
        socket_bit_ = uint32_t{1} << (socket % 32);
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
        if (!track_lines_) {
            uint32_t &mark = (*marks_)[n->id];
            visits_ += mark != mark_;
            mark = mark_;
            return;
        }
        if (n->walk == walk_)
            return;
        n->walk = walk_;
        visits_++;
        if (n->sharers[cpu_])
            return;
        if (n->modified || !inclusive_llc_)  // from the core that holds it
            (n->socket == socket_ ? fetched_ : fetched_socket_)++;
        else if (!(n->sockets & socket_bit_))  // clean, from the other socket's L3
            fetched_socket_++;
        n->modified = false;
        n->sharers.set(cpu_);
        n->sockets |= socket_bit_;
    }
    void dirty(const IovaNode *n) const
    {
        if (!track_lines_)
            return;
        n->sharers.reset();
        n->sharers.set(cpu_);
        n->sockets = socket_bit_;
        n->socket = socket_;
        n->modified = true;
    }
    void rotate(IovaNode *x, Side s);
    void insert_fixup(IovaNode *z);
    void erase_fixup(IovaNode *x, IovaNode *xparent);
    void replace(IovaNode *u, IovaNode *v);
    int check(const IovaNode *n, uint64_t lo, uint64_t hi) const;

    IovaNode *root_ = nullptr;
    size_t size_ = 0;
    mutable uint64_t visits_ = 0, fetched_ = 0, fetched_socket_ = 0;
    mutable uint64_t walk_ = 1;
    mutable unsigned cpu_ = 0;
    mutable uint32_t socket_bit_ = 1;
    const bool inclusive_llc_;
    const bool track_lines_;
    // Without track_lines_: per CPU, per node id, the walk that last
    // touched it (mark_, the walk's number modulo 2^32; 0 never is one).
    mutable std::vector<std::vector<uint32_t>> cpu_marks_;
    mutable std::vector<uint32_t> *marks_ = nullptr;
    mutable uint32_t mark_ = 0;
    void begin_marks() const;
    mutable uint16_t socket_ = 0;
    std::deque<IovaNode> pool_;
    std::vector<IovaNode *> free_nodes_;
};

}  // namespace viommu::iova
