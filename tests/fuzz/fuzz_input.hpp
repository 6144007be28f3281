// SPDX-License-Identifier: GPL-2.0-or-later
// A byte consumer for the fuzz harnesses (libFuzzer's FuzzedDataProvider is
// a clang header; this one also builds with g++ for the replay tests).
// Past the end of the input every read yields zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace fuzz {

class Input {
public:
    Input(const uint8_t *data, size_t size) : p_(data), left_(size) {}

    bool empty() const { return left_ == 0; }
    size_t left() const { return left_; }

    uint8_t u8()
    {
        if (!left_)
            return 0;
        left_--;
        return *p_++;
    }
    // Operands are read in separate statements: the replay tests must see
    // the same values as the clang-built fuzzer.
    uint16_t u16()
    {
        uint16_t lo = u8();
        return lo | uint16_t(u8() << 8);
    }
    uint32_t u32()
    {
        uint32_t lo = u16();
        return lo | uint32_t{u16()} << 16;
    }
    uint64_t u64()
    {
        uint64_t lo = u32();
        return lo | uint64_t{u32()} << 32;
    }
    bool flag() { return u8() & 1; }
    // The next `n` bytes (fewer at the end); advances past them.
    const uint8_t *bytes(size_t &n)
    {
        if (n > left_)
            n = left_;
        const uint8_t *r = p_;
        p_ += n;
        left_ -= n;
        return r;
    }

private:
    const uint8_t *p_;
    size_t left_;
};

// An oracle failed: report and abort, so libFuzzer saves the input and the
// replay test fails.
[[noreturn]] inline void fail(const char *what, uint64_t a = 0, uint64_t b = 0)
{
    std::fprintf(stderr, "fuzz oracle failed: %s (0x%llx, 0x%llx)\n", what,
                 static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
    std::abort();
}

}  // namespace fuzz

#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ::fuzz::fail(#cond __VA_OPT__(, ) __VA_ARGS__);                                        \
    } while (0)
