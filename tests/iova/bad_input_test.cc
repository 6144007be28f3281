// SPDX-License-Identifier: GPL-2.0-or-later
// Bad input gets a defined error and a counter, never corruption.
#include <gtest/gtest.h>

#include "helpers.hpp"

namespace viommu::iova::test {
namespace {

class BadInput : public ::testing::TestWithParam<std::string_view> {};

TEST_P(BadInput, RefusedCountedAndHarmless)
{
    ManualEnv env(2);
    Config c;
    c.start_pfn = 16;
    c.end_pfn = 1 << 16;
    auto a = Allocator::create(GetParam(), env, c);
    EXPECT_EQ(a->alloc(0, 1000).status, Status::bad_size);
    EXPECT_EQ(a->alloc(c.end_pfn, c.end_pfn).status, Status::bad_size);
    EXPECT_EQ(a->alloc(~0ull, ~0ull).status, Status::bad_size);
    EXPECT_EQ(counter(*a, Counter::bad_size), 3u);
    EXPECT_EQ(a->alloc(1, 15).status, Status::bad_limit);
    EXPECT_EQ(counter(*a, Counter::bad_limit), 1u);

    AllocResult r = a->alloc(4, c.end_pfn - 1);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(a->free(r.pfn + 1, 4), Status::not_allocated);  // inside, not the start
    EXPECT_EQ(a->free(r.pfn, 2), Status::not_allocated);      // wrong size
    EXPECT_EQ(a->free(12345, 1), Status::not_allocated);      // never allocated
    EXPECT_EQ(a->free(0, 1), Status::not_allocated);          // below start_pfn
    EXPECT_EQ(a->free(r.pfn, 4), Status::ok);
    EXPECT_EQ(a->free(r.pfn, 4), Status::not_allocated);  // twice
    EXPECT_EQ(a->free(r.pfn, 0), Status::not_allocated);
    EXPECT_EQ(counter(*a, Counter::bad_free), 6u);

    // Still consistent: fill, empty, flush, tree empty.
    Model m;
    for (int i = 0; i < 2000; i++) {
        AllocResult x = a->alloc(1 + i % 8, c.end_pfn - 1);
        ASSERT_TRUE(x.ok()) << "i " << i << " " << status_name(x.status);
        ASSERT_EQ(m.add(x.pfn, 1 + i % 8), "");
    }
    while (!m.empty()) {
        Range x = m.take(0);
        ASSERT_EQ(a->free(x.pfn, x.pages), Status::ok);
    }
    a->flush_caches();
    EXPECT_EQ(a->tree_nodes(), 0u);
    // A limit too low for the size is no_space, not an error.
    EXPECT_EQ(a->alloc(8, 17).status, Status::no_space);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, BadInput, ::testing::ValuesIn(Allocator::variants()),
                         [](const auto &info) {
                             std::string s(info.param);
                             std::erase_if(s, [](char c) { return !std::isalnum(c); });
                             return s;
                         });

TEST(BadInput, UnknownVariantAndPolicy)
{
    ManualEnv env(1);
    EXPECT_EQ(Allocator::create("linux-2.6", env), nullptr);
    auto a = Allocator::create("linux-4.4", env);
    CountingFlusher f;
    EXPECT_EQ(FlushPolicy::create("lazy", *a, f), nullptr);
}

}  // namespace
}  // namespace viommu::iova::test
