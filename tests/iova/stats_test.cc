// SPDX-License-Identifier: GPL-2.0-or-later
// Lock instrumentation and the JSON export (docs/iova-stats.rst).
#include <cstddef>
#include <gtest/gtest.h>

#include <cctype>

#include "helpers.hpp"

namespace viommu::iova::test {
namespace {

// A strict JSON syntax check, enough to catch a broken export.
class JsonChecker {
public:
    explicit JsonChecker(std::string_view s) : s_(s) {}
    bool ok() { return value() && (ws(), i_ == s_.size()); }

private:
    void ws()
    {
        while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])))
            i_++;
    }
    bool eat(char c)
    {
        ws();
        if (i_ < s_.size() && s_[i_] == c) {
            i_++;
            return true;
        }
        return false;
    }
    bool string()
    {
        if (!eat('"'))
            return false;
        while (i_ < s_.size() && s_[i_] != '"')
            if (s_[i_++] == '\\')
                i_++;
        return eat('"');
    }
    bool number()
    {
        ws();
        size_t start = i_;
        while (i_ < s_.size() &&
               (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-'))
            i_++;
        return i_ > start;
    }
    bool value()
    {
        ws();
        if (i_ >= s_.size())
            return false;
        if (s_[i_] == '{') {
            i_++;
            if (eat('}'))
                return true;
            do {
                if (!string() || !eat(':') || !value())
                    return false;
            } while (eat(','));
            return eat('}');
        }
        if (s_[i_] == '[') {
            i_++;
            if (eat(']'))
                return true;
            do {
                if (!value())
                    return false;
            } while (eat(','));
            return eat(']');
        }
        if (s_[i_] == '"')
            return string();
        return number();
    }
    std::string_view s_;
    size_t i_ = 0;
};

TEST(Stats, JsonIsValidForEveryVariant)
{
    for (auto v : Allocator::variants()) {
        ManualEnv env(2);
        auto a = Allocator::create(v, env);
        std::vector<Pfn> p;
        for (int i = 0; i < 300; i++)
            p.push_back(a->alloc(1, a->end_pfn() - 1).pfn);
        for (Pfn x : p)
            a->free(x, 1);
        a->free(p[0], 1);
        std::string j = a->stats_json();
        EXPECT_TRUE(JsonChecker(j).ok()) << j;
        EXPECT_NE(j.find("\"variant\":\"" + std::string(v) + "\""), std::string::npos);
        EXPECT_NE(j.find("\"bad_free\":1,"), std::string::npos) << j;
        EXPECT_NE(j.find("\"iova_rbtree_lock\""), std::string::npos) << j;
    }
    EXPECT_FALSE(JsonChecker("{\"a\":1,}").ok());
    EXPECT_FALSE(JsonChecker("{\"a\":[1,2}").ok());
}

// stats_json(out) writes the same text as stats_json(), whatever @out held;
// a lock never taken has no sites, and is still counted as an instance.
TEST(Stats, JsonIntoAReusedBufferIsTheSameText)
{
    std::string buf = "left over from before";
    for (auto v : Allocator::variants()) {
        ManualEnv env(3);
        auto a = Allocator::create(v, env);
        a->stats_json(buf);
        EXPECT_EQ(buf, a->stats_json());
        EXPECT_NE(buf.find("\"iova_rbtree_lock\":{\"instances\":1,\"sites\":{}}"),
                  std::string::npos)
            << buf;
        for (unsigned c = 0; c < 3; c++) {
            env.set_cpu(c);
            Pfn p = a->alloc(1, a->end_pfn() - 1).pfn;
            a->free(p, 1);
        }
        a->flush_caches();
        a->stats_json(buf);
        EXPECT_EQ(buf, a->stats_json());
        EXPECT_TRUE(JsonChecker(buf).ok()) << buf;
    }
}

TEST(Stats, LockNeverTakenReadsZero)
{
    ManualEnv env(1);
    InstrumentedLock l(env, "test_lock", 0, true);
    for (const SiteLockStats &s : l.stats())
        EXPECT_EQ(s.acquisitions + s.wait_ns.count + s.hold_ns.count, 0u);
    EXPECT_EQ(l.snapshot()[static_cast<unsigned>(Site::alloc)].acquisitions, 0u);
    l.reset_stats();
    {
        LockGuard g(l, Site::free);
    }
    EXPECT_EQ(l.stats()[static_cast<unsigned>(Site::free)].acquisitions, 1u);
    EXPECT_EQ(l.stats()[static_cast<unsigned>(Site::free)].hold_ns.count, 1u);
    EXPECT_EQ(l.stats()[static_cast<unsigned>(Site::alloc)].acquisitions, 0u);
    l.reset_stats();
    EXPECT_EQ(l.stats()[static_cast<unsigned>(Site::free)].acquisitions, 0u);
}

// A virtual clock that makes every lock attempt wait 100 ns and every
// hold last 10 ns per node visited: the lock records exactly that.
class CostEnv final : public ManualEnv {
public:
    CostEnv() : ManualEnv(1) {}
    bool lock_attempt(const InstrumentedLock &, Site) override
    {
        advance(100);
        attempts++;
        return true;
    }
    void lock_released(const InstrumentedLock &, Site) override { released++; }
    void charge(Work w, uint64_t n) override
    {
        if (w == Work::node_visit)
            advance(10 * n);
    }
    unsigned attempts = 0, released = 0;
};

TEST(Stats, LocksRecordVirtualWaitAndHold)
{
    CostEnv env;
    auto a = Allocator::create("linux-4.4", env);
    for (int i = 0; i < 10; i++)
        ASSERT_TRUE(a->alloc(1, a->end_pfn() - 1, false).ok());
    SiteLockStats s;
    site_stats(*a, "iova_rbtree_lock", Site::alloc, s);
    EXPECT_EQ(s.acquisitions, 10u);
    EXPECT_EQ(s.contended, 10u);
    EXPECT_EQ(s.wait_ns.sum, 1000u);
    EXPECT_EQ(s.wait_ns.max, 100u);
    EXPECT_EQ(s.hold_ns.sum, 10 * counter(*a, Counter::nodes_visited));
    EXPECT_EQ(env.attempts, 10u);
    EXPECT_EQ(env.released, 10u);
    EXPECT_EQ(s.wait_ns.buckets[TimeHistogram::bucket_of(100)], 10u);
}

TEST(Stats, CountersAndHistogramsCanBeSwitchedOff)
{
    ManualEnv env(1);
    Config c;
    c.stats = false;
    c.lock_timing = false;
    auto a = Allocator::create("linux-4.15", env, c);
    for (int i = 0; i < 10; i++)
        ASSERT_TRUE(a->alloc(1, a->end_pfn() - 1).ok());
    EXPECT_EQ(counter(*a, Counter::alloc_calls), 0u);
    EXPECT_EQ(a->stats().merged_hist().alloc_addr.count, 0u);
    // Bad input is counted regardless.
    EXPECT_EQ(a->free(7, 1), Status::not_allocated);
    EXPECT_EQ(counter(*a, Counter::bad_free), 1u);
    SiteLockStats s;
    EXPECT_EQ(site_stats(*a, "iova_rbtree_lock", Site::alloc, s).acquisitions, 10u);
    EXPECT_EQ(s.hold_ns.count, 0u);
}

TEST(Stats, AddressHistogramAndReset)
{
    ManualEnv env(1);
    auto a = Allocator::create("linux-5.13", env);
    ASSERT_TRUE(a->alloc(1, a->dma_32bit_pfn()).ok());
    ASSERT_TRUE(a->alloc(1, a->end_pfn() - 1).ok());
    auto h = a->stats().merged_hist().alloc_addr;
    EXPECT_EQ(h.count, 2u);
    EXPECT_EQ(h.buckets[32], 1u);  // just below 4 GiB
    EXPECT_EQ(h.buckets[48], 1u);  // just below 2^48
    a->reset_stats();
    EXPECT_EQ(a->stats().merged_hist().alloc_addr.count, 0u);
    EXPECT_EQ(counter(*a, Counter::alloc_calls), 0u);
}

}  // namespace
}  // namespace viommu::iova::test
