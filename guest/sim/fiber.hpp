// SPDX-License-Identifier: GPL-2.0-or-later
// A virtual CPU's coroutine: a function running on its own stack that
// switches to and from the scheduler (simulator.cc).  It is entered once
// through makecontext()/swapcontext() and switched afterwards with
// _setjmp()/_longjmp(), which stay in user space: glibc's swapcontext()
// saves and restores the signal mask, a system call each way.  Under a
// sanitizer, which follows swapcontext() but not a longjmp() to another
// stack, every switch is a swapcontext().
#pragma once

#include <csetjmp>
#include <cstddef>
#include <memory>
#include <ucontext.h>

namespace viommu::sim {

class Fiber {
public:
    using Entry = void (*)(void *arg);

    Fiber() = default;
    Fiber(const Fiber &) = delete;
    Fiber &operator=(const Fiber &) = delete;

    // Prepares @entry(@arg) on a fresh stack of @stack_size bytes; it runs
    // at the first resume().  @entry must end with finish(), not return.
    void start(Entry entry, void *arg, size_t stack_size);
    // From the scheduler: runs the fiber until it yields or finishes.
    void resume();
    // From the fiber: back to the scheduler until the next resume().
    void yield();
    // From the fiber: back to the scheduler for good.
    [[noreturn]] void finish();
    // Frees the stack of a fiber that finished or never ran.
    void release() { stack_.reset(); }

private:
    static void trampoline(unsigned hi, unsigned lo);

    Entry entry_ = nullptr;
    void *arg_ = nullptr;
    ucontext_t ctx_{}, sched_{};
    std::jmp_buf jb_{}, sched_jb_{};
    std::unique_ptr<char[]> stack_;
    bool started_ = false;
};

}  // namespace viommu::sim
