// SPDX-License-Identifier: GPL-2.0-or-later
// Red-black tree of IOVA ranges; see rbtree.hpp.
#include "rbtree.hpp"

namespace viommu::iova {

namespace {
bool is_red(const IovaNode *n)
{
    return n && n->red;
}
}  // namespace

IovaNode *RbTree::make(uint64_t lo, uint64_t hi)
{
    IovaNode *n;
    if (!free_nodes_.empty()) {
        n = free_nodes_.back();
        free_nodes_.pop_back();
        *n = IovaNode{};
    } else {
        n = &pool_.emplace_back();
    }
    n->pfn_lo = lo;
    n->pfn_hi = hi;
    return n;
}

IovaNode *RbTree::first() const
{
    IovaNode *n = root_;
    while (n && n->left) {
        n = n->left;
        visits_++;
    }
    return n;
}

IovaNode *RbTree::last() const
{
    IovaNode *n = root_;
    while (n && n->right) {
        n = n->right;
        visits_++;
    }
    return n;
}

IovaNode *RbTree::prev(const IovaNode *n) const
{
    if (n->left) {
        IovaNode *p = n->left;
        visits_++;
        while (p->right) {
            p = p->right;
            visits_++;
        }
        return p;
    }
    const IovaNode *c = n;
    IovaNode *p = n->parent;
    while (p && c == p->left) {
        c = p;
        p = p->parent;
        visits_++;
    }
    if (p)
        visits_++;
    return p;
}

IovaNode *RbTree::next(const IovaNode *n) const
{
    if (n->right) {
        IovaNode *p = n->right;
        visits_++;
        while (p->left) {
            p = p->left;
            visits_++;
        }
        return p;
    }
    const IovaNode *c = n;
    IovaNode *p = n->parent;
    while (p && c == p->right) {
        c = p;
        p = p->parent;
        visits_++;
    }
    if (p)
        visits_++;
    return p;
}

IovaNode *RbTree::find(uint64_t pfn) const
{
    IovaNode *n = root_;
    while (n) {
        visits_++;
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
        visits_++;
        if (n->pfn_lo >= pfn) {
            best = n;
            n = n->left;
        } else {
            n = n->right;
        }
    }
    return best;
}

void RbTree::rotate_left(IovaNode *x)
{
    IovaNode *y = x->right;
    x->right = y->left;
    if (y->left)
        y->left->parent = x;
    y->parent = x->parent;
    replace(x, y);
    y->left = x;
    x->parent = y;
}

void RbTree::rotate_right(IovaNode *x)
{
    IovaNode *y = x->left;
    x->left = y->right;
    if (y->right)
        y->right->parent = x;
    y->parent = x->parent;
    replace(x, y);
    y->right = x;
    x->parent = y;
}

// Make @u's parent point at @v instead (v->parent is the caller's job).
void RbTree::replace(IovaNode *u, IovaNode *v)
{
    if (!u->parent)
        root_ = v;
    else if (u == u->parent->left)
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
        visits_++;
        parent = cur;
        left = n->pfn_lo < cur->pfn_lo;
        cur = left ? cur->left : cur->right;
    }
    n->parent = parent;
    n->left = n->right = nullptr;
    n->red = true;
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
        if (p == g->left) {
            IovaNode *u = g->right;
            if (is_red(u)) {
                p->red = u->red = false;
                g->red = true;
                z = g;
                continue;
            }
            if (z == p->right) {
                rotate_left(p);
                z = p;
                p = z->parent;
            }
            p->red = false;
            g->red = true;
            rotate_right(g);
        } else {
            IovaNode *u = g->left;
            if (is_red(u)) {
                p->red = u->red = false;
                g->red = true;
                z = g;
                continue;
            }
            if (z == p->left) {
                rotate_right(p);
                z = p;
                p = z->parent;
            }
            p->red = false;
            g->red = true;
            rotate_left(g);
        }
    }
    root_->red = false;
}

void RbTree::erase(IovaNode *z)
{
    IovaNode *x, *xparent;
    bool removed_red;

    if (!z->left || !z->right) {
        x = z->left ? z->left : z->right;
        xparent = z->parent;
        removed_red = z->red;
        if (x)
            x->parent = z->parent;
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
            if (x)
                x->parent = y->parent;
            y->parent->left = x;
            y->right = z->right;
            z->right->parent = y;
        }
        y->parent = z->parent;
        replace(z, y);
        y->left = z->left;
        z->left->parent = y;
        y->red = z->red;
    }
    if (!removed_red)
        erase_fixup(x, xparent);
    size_--;
    free_nodes_.push_back(z);
}

void RbTree::erase_fixup(IovaNode *x, IovaNode *xp)
{
    while (x != root_ && !is_red(x)) {
        if (x == xp->left) {
            IovaNode *w = xp->right;
            if (is_red(w)) {
                w->red = false;
                xp->red = true;
                rotate_left(xp);
                w = xp->right;
            }
            if (!is_red(w->left) && !is_red(w->right)) {
                w->red = true;
                x = xp;
                xp = x->parent;
            } else {
                if (!is_red(w->right)) {
                    w->left->red = false;
                    w->red = true;
                    rotate_right(w);
                    w = xp->right;
                }
                w->red = xp->red;
                xp->red = false;
                w->right->red = false;
                rotate_left(xp);
                x = root_;
            }
        } else {
            IovaNode *w = xp->left;
            if (is_red(w)) {
                w->red = false;
                xp->red = true;
                rotate_right(xp);
                w = xp->left;
            }
            if (!is_red(w->left) && !is_red(w->right)) {
                w->red = true;
                x = xp;
                xp = x->parent;
            } else {
                if (!is_red(w->left)) {
                    w->right->red = false;
                    w->red = true;
                    rotate_left(w);
                    w = xp->left;
                }
                w->red = xp->red;
                xp->red = false;
                w->left->red = false;
                rotate_right(xp);
                x = root_;
            }
        }
    }
    if (x)
        x->red = false;
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
