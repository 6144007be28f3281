// SPDX-License-Identifier: GPL-2.0-or-later
// Allocation failures on the guest-driven paths stay inside the engine: the
// statistics a new domain or source-id would get are what a translation or
// an interrupt request allocates, and a failure there must neither throw
// across the C ABI (which would terminate QEMU) nor fail the request.  This
// executable replaces the global operator new so that a test can make every
// allocation fail.
#include <cstdlib>
#include <new>

#include "fake_host.hpp"

using namespace vtdtest;

namespace {
bool fail_allocations = false;

// Every allocation fails while it is in scope.
struct NoMemory {
    NoMemory() { fail_allocations = true; }
    ~NoMemory() { fail_allocations = false; }
    NoMemory(const NoMemory &) = delete;
    NoMemory &operator=(const NoMemory &) = delete;
};
}  // namespace

void *operator new(std::size_t n)
{
    if (fail_allocations)
        throw std::bad_alloc();
    if (void *p = std::malloc(n ? n : 1))
        return p;
    throw std::bad_alloc();
}

void operator delete(void *p) noexcept
{
    std::free(p);
}

void operator delete(void *p, std::size_t) noexcept
{
    std::free(p);
}

TEST(AllocationFailure, TranslationOfANewDomainSucceeds)
{
    FakeHost h;
    uint64_t pt = h.alloc_page();
    h.set_context(0x0310, pt, 77, 4);
    h.enable_translation();
    h.map(pt, 4, 0x1000, 0xa000, 3);
    VtdTranslation t{};
    VtdFaultReason r;
    {
        NoMemory none;
        r = vtd_engine_translate(h.e, 0x0310, 0x1000, VTD_PERM_READ, true, &t);
    }
    EXPECT_EQ(r, VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0xa000u);
    // With memory again the domain gets its statistics once its context
    // is looked up again (the translation above remembered the sink).
    h.w64(CCMD, 1ull << 63 | 1ull << 61);
    EXPECT_EQ(h.translate(0x0310, 0x2000, VTD_PERM_READ), VTD_FR_READ);
    EXPECT_NE(h.stats().find("\"id\":77"), std::string::npos);
}

TEST(AllocationFailure, InterruptOfANewSourceIsRemapped)
{
    VtdConfig c = FakeHost::default_config();
    c.intremap = true;
    FakeHost h(8 << 20, c);
    VtdInterrupt out{};
    VtdIrResult r;
    {
        NoMemory none;
        // Remapping disabled: a compatibility-format request passes.
        r = vtd_engine_remap_interrupt(h.e, 0x0310, 0xfee00000, 0x41, true, &out);
    }
    EXPECT_EQ(r, VTD_IR_PASS_THROUGH);
    EXPECT_EQ(out.data, 0x41u);
}
