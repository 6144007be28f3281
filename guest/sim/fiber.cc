// SPDX-License-Identifier: GPL-2.0-or-later
// Fiber switches; see fiber.hpp.  _FORTIFY_SOURCE would turn _longjmp()
// into __longjmp_chk(), which refuses a jump to a frame below the current
// stack pointer unless on the signal stack: every jump between two
// fibers' stacks may be one.
#undef _FORTIFY_SOURCE
#include "fiber.hpp"

#include <cstdint>
#include <cstdlib>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define VIOMMU_FIBER_SWAPCONTEXT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define VIOMMU_FIBER_SWAPCONTEXT 1
#endif
#endif

namespace viommu::sim {

void Fiber::start(Entry entry, void *arg, size_t stack_size)
{
    entry_ = entry;
    arg_ = arg;
    started_ = false;
    stack_.reset(new char[stack_size]);
    getcontext(&ctx_);
    ctx_.uc_stack.ss_sp = stack_.get();
    ctx_.uc_stack.ss_size = stack_size;
    ctx_.uc_link = nullptr;
    auto self = reinterpret_cast<uintptr_t>(this);
    makecontext(&ctx_, reinterpret_cast<void (*)()>(&Fiber::trampoline), 2, unsigned(self >> 32),
                unsigned(self & 0xffffffffu));
}

void Fiber::trampoline(unsigned hi, unsigned lo)
{
    auto *self = reinterpret_cast<Fiber *>((uintptr_t{hi} << 32) | lo);
    self->entry_(self->arg_);
    std::abort();  // an entry must finish()
}

#ifdef VIOMMU_FIBER_SWAPCONTEXT

void Fiber::resume()
{
    swapcontext(&sched_, &ctx_);
}

void Fiber::yield()
{
    swapcontext(&ctx_, &sched_);
}

void Fiber::finish()
{
    swapcontext(&ctx_, &sched_);
    std::abort();  // a finished fiber is never resumed
}

#else

void Fiber::resume()
{
    if (_setjmp(sched_jb_))
        return;
    if (started_)
        _longjmp(jb_, 1);
    started_ = true;
    swapcontext(&sched_, &ctx_);  // the first entry; it comes back by _longjmp()
}

void Fiber::yield()
{
    if (!_setjmp(jb_))
        _longjmp(sched_jb_, 1);
}

void Fiber::finish()
{
    _longjmp(sched_jb_, 1);
}

#endif

}  // namespace viommu::sim
