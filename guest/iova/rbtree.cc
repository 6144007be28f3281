// SPDX-License-Identifier: GPL-2.0-or-later
// Red-black tree of IOVA ranges; see rbtree.hpp.
#include "rbtree.hpp"

#include <algorithm>

namespace viommu::iova {

namespace {
bool is_red(const IovaNode *n)
{
    return n && n->red;
}
}  // namespace

void RbTree::begin_marks() const
{
    if (cpu_marks_.size() <= cpu_)
        cpu_marks_.resize(cpu_ + 1);
    marks_ = &cpu_marks_[cpu_];
    marks_->resize(pool_.size());
    mark_ = static_cast<uint32_t>(walk_);
    if (mark_ == 0) {  // wrapped: forget every CPU's marks
        for (auto &m : cpu_marks_)
            std::fill(m.begin(), m.end(), 0);
        mark_ = static_cast<uint32_t>(++walk_);
    }
}

IovaNode *RbTree::make(uint64_t lo, uint64_t hi)
{
    IovaNode *n;
    if (!free_nodes_.empty()) {
        n = free_nodes_.back();
        free_nodes_.pop_back();
        const uint32_t id = n->id;
        *n = IovaNode{};
        n->id = id;
    } else {
        n = &pool_.emplace_back();
        n->id = static_cast<uint32_t>(pool_.size() - 1);
        if (marks_)
            marks_->resize(pool_.size());
    }
    n->pfn_lo = lo;
    n->pfn_hi = hi;
    return n;
}

// The node furthest down side @s (first(): left, last(): right).
IovaNode *RbTree::outermost(Side s) const
{
    IovaNode *n = root_;
    while (n && n->*s) {
        n = n->*s;
        touch(n);
    }
    return n;
}

IovaNode *RbTree::first() const
{
    return outermost(&IovaNode::left);
}

IovaNode *RbTree::last() const
{
    return outermost(&IovaNode::right);
}

// The in-order neighbour of @n towards side @s (prev(): left, next(): right).
IovaNode *RbTree::step(const IovaNode *n, Side s) const
{
    const Side back = other(s);
    if (n->*s) {
        IovaNode *p = n->*s;
        touch(p);
        while (p->*back) {
            p = p->*back;
            touch(p);
        }
        return p;
    }
    const IovaNode *c = n;
    IovaNode *p = n->parent;
    while (p && c == p->*s) {
        touch(p);
        c = p;
        p = p->parent;
    }
    if (p)
        touch(p);
    return p;
}

IovaNode *RbTree::prev(const IovaNode *n) const
{
    return step(n, &IovaNode::left);
}

IovaNode *RbTree::next(const IovaNode *n) const
{
    return step(n, &IovaNode::right);
}

IovaNode *RbTree::find(uint64_t pfn) const
{
    IovaNode *n = root_;
    while (n) {
        touch(n);
        if (pfn < n->pfn_lo)
            n = n->left;
        else if (pfn > n->pfn_hi)
            n = n->right;
        else
            return n;
    }
    return nullptr;
}

IovaNode *RbTree::lower_bound(uint64_t pfn) const
{
    IovaNode *n = root_, *best = nullptr;
    while (n) {
        touch(n);
        if (n->pfn_lo >= pfn) {
            best = n;
            n = n->left;
        } else {
            n = n->right;
        }
    }
    return best;
}

// Rotate @x down towards side @s: its child on the other side takes its
// place (rotate left: s is left).
void RbTree::rotate(IovaNode *x, Side s)
{
    const Side o = other(s);
    IovaNode *y = x->*o;
    dirty(x);
    dirty(y);
    x->*o = y->*s;
    if (y->*s) {
        (y->*s)->parent = x;
        dirty(y->*s);
    }
    y->parent = x->parent;
    replace(x, y);
    y->*s = x;
    x->parent = y;
}

// Make @u's parent point at @v instead (v->parent is the caller's job).
void RbTree::replace(IovaNode *u, IovaNode *v)
{
    if (!u->parent) {
        root_ = v;
        return;
    }
    dirty(u->parent);
    if (u == u->parent->left)
        u->parent->left = v;
    else
        u->parent->right = v;
}

void RbTree::insert(IovaNode *n, IovaNode *start)
{
    // The kernel starts at a hint only as an optimisation; restart from the
    // root unless the hint's subtree can hold the key.
    IovaNode *cur = root_;
    if (start) {
        bool ok = true;
        for (const IovaNode *c = start, *p = start->parent; p; c = p, p = p->parent) {
            if ((c == p->left && n->pfn_lo > p->pfn_lo) ||
                (c == p->right && n->pfn_lo < p->pfn_lo)) {
                ok = false;
                break;
            }
        }
        if (ok)
            cur = start;
    }
    IovaNode *parent = cur ? cur->parent : nullptr;
    bool left = false;
    while (cur) {
        touch(cur);
        parent = cur;
        left = n->pfn_lo < cur->pfn_lo;
        cur = left ? cur->left : cur->right;
    }
    n->parent = parent;
    n->left = n->right = nullptr;
    n->red = true;
    dirty(n);
    if (parent)
        dirty(parent);
    if (!parent)
        root_ = n;
    else if (left)
        parent->left = n;
    else
        parent->right = n;
    size_++;
    insert_fixup(n);
}

void RbTree::insert_fixup(IovaNode *z)
{
    while (is_red(z->parent)) {
        IovaNode *p = z->parent, *g = p->parent;
        // near: the side of g that p is on; the uncle is on the far side
        const Side near = p == g->left ? &IovaNode::left : &IovaNode::right;
        const Side far = other(near);
        IovaNode *u = g->*far;
        if (is_red(u)) {
            p->red = u->red = false;
            g->red = true;
            dirty(p);
            dirty(u);
            dirty(g);
            z = g;
            continue;
        }
        if (z == p->*far) {
            rotate(p, near);
            z = p;
            p = z->parent;
        }
        p->red = false;
        g->red = true;
        rotate(g, far);
    }
    if (root_->red) {
        root_->red = false;
        dirty(root_);
    }
}

void RbTree::erase(IovaNode *z)
{
    IovaNode *x, *xparent;
    bool removed_red;

    if (!z->left || !z->right) {
        x = z->left ? z->left : z->right;
        xparent = z->parent;
        removed_red = z->red;
        if (x) {
            x->parent = z->parent;
            dirty(x);
        }
        replace(z, x);
    } else {
        IovaNode *y = z->right;
        while (y->left)
            y = y->left;
        removed_red = y->red;
        x = y->right;
        if (y->parent == z) {
            xparent = y;
        } else {
            xparent = y->parent;
            if (x) {
                x->parent = y->parent;
                dirty(x);
            }
            y->parent->left = x;
            dirty(y->parent);
            y->right = z->right;
            z->right->parent = y;
            dirty(z->right);
        }
        y->parent = z->parent;
        replace(z, y);
        y->left = z->left;
        z->left->parent = y;
        dirty(z->left);
        y->red = z->red;
        dirty(y);
    }
    if (!removed_red)
        erase_fixup(x, xparent);
    size_--;
    free_nodes_.push_back(z);
}

void RbTree::erase_fixup(IovaNode *x, IovaNode *xp)
{
    while (x != root_ && !is_red(x)) {
        // s: the side of xp that x is on; its sibling w is on the other
        const Side s = x == xp->left ? &IovaNode::left : &IovaNode::right;
        const Side o = other(s);
        IovaNode *w = xp->*o;
        if (is_red(w)) {
            w->red = false;
            xp->red = true;
            rotate(xp, s);  // dirties both
            w = xp->*o;
        }
        if (!is_red(w->left) && !is_red(w->right)) {
            w->red = true;
            dirty(w);
            x = xp;
            xp = x->parent;
        } else {
            if (!is_red(w->*o)) {
                (w->*s)->red = false;
                w->red = true;
                rotate(w, o);  // dirties both
                w = xp->*o;
            }
            w->red = xp->red;
            xp->red = false;
            (w->*o)->red = false;
            dirty(w->*o);
            rotate(xp, s);
            x = root_;
        }
    }
    if (x && x->red) {
        x->red = false;
        dirty(x);
    }
}

// Black height of the subtree, or -1 if an invariant is broken.
int RbTree::check(const IovaNode *n, uint64_t lo, uint64_t hi) const
{
    if (!n)
        return 1;
    if (n->pfn_lo < lo || n->pfn_lo > hi || n->pfn_lo > n->pfn_hi)
        return -1;
    if (n->red && (is_red(n->left) || is_red(n->right)))
        return -1;
    if ((n->left && n->left->parent != n) || (n->right && n->right->parent != n))
        return -1;
    int l = check(n->left, lo, n->pfn_lo);
    int r = check(n->right, n->pfn_lo, hi);
    if (l < 0 || r < 0 || l != r)
        return -1;
    return l + !n->red;
}

bool RbTree::valid() const
{
    if (root_ && (root_->red || root_->parent))
        return false;
    if (check(root_, 0, ~uint64_t{0}) < 0)
        return false;
    size_t n = 0;
    uint64_t saved = visits_;
    for (const IovaNode *i = first(); i; i = next(i)) {
        const IovaNode *nx = next(i);
        if (nx && nx->pfn_lo <= i->pfn_hi)
            return false;
        n++;
    }
    visits_ = saved;
    return n == size_;
}

}  // namespace viommu::iova
