// SPDX-License-Identifier: GPL-2.0-or-later
// Statistics JSON: counters follow the activity described in
// docs/statistics.rst.
#if defined(__linux__)
#include <malloc.h>
#endif

#include "fake_host.hpp"
#include "stats.hpp"

using namespace vtdtest;

TEST(Stats, CountersFollowActivity)
{
    FakeHost h;
    uint64_t pt = h.alloc_page();
    h.set_context(0x8, pt, 4, 4);
    h.set_context(0x10, 0, 5, 4, 2);
    h.map(pt, 4, 0x1000, 0xa000, 3);
    h.enable_translation();
    h.enable_qi();
    for (int i = 0; i < 3; i++)
        h.translate(0x8, 0x1000, VTD_PERM_READ);
    h.translate(0x8, 0x2000, VTD_PERM_READ);
    h.translate(0x10, 0x2000, VTD_PERM_READ);
    h.submit(FakeHost::iotlb_desc(3, 4), FakeHost::iotlb_addr(0x1000, 0));
    h.submit(FakeHost::iotlb_desc(2, 4), 0);
    h.submit(FakeHost::iotlb_desc(1), 0);
    h.submit(FakeHost::cc_desc(1), 0);
    h.submit(FakeHost::wait_desc(true, false, false, 1), h.alloc_page());

    std::string s = h.stats();
    EXPECT_EQ(s.front(), '{');
    EXPECT_EQ(s.back(), '}');
    EXPECT_NE(s.find("\"schema\":\"viommu-vtd-stats/1\""), std::string::npos);
    EXPECT_EQ(json_counter(s, "translate", "requests"), 5u);
    EXPECT_EQ(json_counter(s, "translate", "pass_through"), 1u);
    EXPECT_EQ(json_counter(s, "translate", "page_walks"), 2u);
    // 4 for the first walk; the second reuses its cached level-1 table.
    EXPECT_EQ(json_counter(s, "translate", "paging_entries_read"), 5u);
    EXPECT_EQ(json_counter(s, "iotlb", "hits"), 2u);
    EXPECT_EQ(json_counter(s, "iotlb", "misses"), 2u);
    EXPECT_EQ(json_counter(s, "context_cache", "misses"), 2u);
    EXPECT_EQ(json_counter(s, "context_cache", "hits"), 3u);
    EXPECT_EQ(json_counter(s, "by_reason", "read"), 1u);
    EXPECT_EQ(json_counter(s, "invalidations", "page"), 1u);
    std::string inv = s.substr(s.find("\"invalidations\":"));
    EXPECT_EQ(json_counter(inv, "iotlb", "pages"), 1u);
    EXPECT_EQ(json_counter(inv, "iotlb", "domain"), 1u);
    EXPECT_EQ(json_counter(inv, "iotlb", "global"), 1u);
    EXPECT_EQ(json_counter(s, "context", "global"), 1u);
    EXPECT_EQ(json_counter(s, "waits", "status_write"), 1u);
    EXPECT_EQ(json_counter(s, "descriptors", "wait"), 1u);
    EXPECT_EQ(json_counter(s, "latency_ns", "count"), 5u);
    EXPECT_EQ(json_counter(s, "pages", "unmapped"), 0u);
    EXPECT_EQ(json_counter(s, "pages", "mapped"), 1u) << "0x1000 is still mapped";
    EXPECT_EQ(json_counter(s, "iova", "walks_below_4g"), 2u);
    EXPECT_EQ(json_counter(s, "iova", "walks_above_4g"), 0u);
    EXPECT_EQ(json_counter(s, "iova", "pages_invalidated_below_4g"), 1u);
    // Per-domain section.
    size_t d4 = s.find("{\"id\":4,");
    ASSERT_NE(d4, std::string::npos);
    EXPECT_EQ(json_counter(s.substr(d4), "", "translations"), 4u);
    EXPECT_EQ(json_counter(s.substr(d4), "", "iotlb_hits"), 2u);
    EXPECT_EQ(json_counter(s.substr(d4), "", "faults"), 1u);
    EXPECT_EQ(json_counter(s.substr(d4), "", "page_invalidations"), 1u);
    EXPECT_EQ(json_counter(s.substr(d4), "", "domain_invalidations"), 1u);
    EXPECT_NE(s.find("{\"id\":5,"), std::string::npos);
}

TEST(Stats, IovaPlacementAboveAndBelow4G)
{
    FakeHost h;
    uint64_t pt = h.alloc_page();
    h.set_context(0x8, pt, 4, 4);
    h.map(pt, 4, 0x1234000, 0xa000, 3);
    h.map(pt, 4, 0x500000000, 0xb000, 3);
    h.enable_translation();
    h.enable_qi();
    h.translate(0x8, 0x1234000, VTD_PERM_READ);
    h.translate(0x8, 0x500000000, VTD_PERM_READ);
    h.translate(0x8, 0x500000008, VTD_PERM_READ);  // IOTLB hit: no walk
    h.submit(FakeHost::iotlb_desc(3, 4), FakeHost::iotlb_addr(0x500000000, 1));
    std::string s = h.stats();
    EXPECT_EQ(json_counter(s, "iova", "walks_below_4g"), 1u);
    EXPECT_EQ(json_counter(s, "iova", "walks_above_4g"), 1u);
    EXPECT_EQ(json_counter(s, "iova", "pages_invalidated_below_4g"), 0u);
    EXPECT_EQ(json_counter(s, "iova", "pages_invalidated_above_4g"), 2u);
}

// The object at `path` ("a/b") of a JSON text, braces included; empty if absent.
static std::string json_object(const std::string &json, const std::string &path)
{
    std::string obj = json;
    size_t from = 0;
    while (from <= path.size()) {
        size_t slash = path.find('/', from);
        std::string name = path.substr(from, slash == std::string::npos ? slash : slash - from);
        // Only a key at depth 1 of the current object counts.
        int depth = 0;
        size_t start = std::string::npos;
        for (size_t i = 0; i < obj.size() && start == std::string::npos; i++) {
            char ch = obj[i];
            if (ch == '{' || ch == '[')
                depth++;
            else if (ch == '}' || ch == ']')
                depth--;
            else if (depth == 1 && obj.compare(i, name.size() + 4, "\"" + name + "\":{") == 0)
                start = i + name.size() + 3;
        }
        if (start == std::string::npos)
            return {};
        depth = 0;
        size_t end = start;
        for (; end < obj.size(); end++) {
            if (obj[end] == '{')
                depth++;
            else if (obj[end] == '}' && --depth == 0)
                break;
        }
        obj = obj.substr(start, end - start + 1);
        if (slash == std::string::npos)
            break;
        from = slash + 1;
    }
    return obj;
}

// Every counter of the enum is in the report, once, at the place
// COUNTER_NAMES gives: bump each by a value of its own and find that value
// under its key in its object.
TEST(Stats, EveryCounterReportedWhereTheTableSays)
{
    viommu::vtd::Stats stats;
    for (size_t i = 0; i < std::size(viommu::vtd::COUNTER_NAMES); i++)
        stats.add(viommu::vtd::COUNTER_NAMES[i].counter, 1000 + i);
    std::string json = stats.to_json({});
    for (size_t i = 0; i < std::size(viommu::vtd::COUNTER_NAMES); i++) {
        const auto &n = viommu::vtd::COUNTER_NAMES[i];
        std::string obj = json_object(json, n.section);
        ASSERT_FALSE(obj.empty()) << "no object " << n.section << " in " << json;
        std::string field = "\"" + std::string(n.key) + "\":" + std::to_string(1000 + i);
        size_t at = obj.find(field);
        EXPECT_NE(at, std::string::npos) << n.section << "/" << n.key;
        EXPECT_EQ(json.find(field), json.rfind(field)) << n.key << " reported twice";
    }
}

// Per-domain state costs what the guest uses.  Naming every domain-id once
// in invalidation descriptors (IOTLB domain- and page-selective, context
// domain-selective) grows it, and the process, by under 1 MiB; a fresh
// engine holds next to nothing; a domain a device translates in costs its
// statistics, and only those domains are listed in the report.
namespace {

// Bytes the C library's allocator has handed out (glibc; 0 elsewhere and
// under sanitizers, which bring their own allocator).
size_t heap_in_use()
{
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#else
    return 0;
#endif
}

}  // namespace

TEST(DomainState, CostsWhatTheGuestUses)
{
    FakeHost h(16 << 20);
    h.enable_translation();
    h.enable_qi(3);
    const size_t fresh = vtd_engine_domain_state_bytes(h.e);
    EXPECT_LT(fresh, size_t{64} << 10) << "nothing allocated up front";
    const size_t heap0 = heap_in_use();
    for (uint32_t did = 0; did < 65536; did++) {
        h.push(FakeHost::iotlb_desc(2, did), 0);
        h.push(FakeHost::iotlb_desc(3, did), FakeHost::iotlb_addr(0x1000 * (did % 512), 0, false));
        h.push(FakeHost::cc_desc(2, did), 0);
        if (did % 32 == 31) {
            h.kick();
            ASSERT_EQ(h.mmio64(IQH), h.mmio64(IQT));
            h.invals.clear();  // the fake host's logs are not the engine's memory
            h.ctx_invals.clear();
        }
    }
    const size_t named = vtd_engine_domain_state_bytes(h.e);
    EXPECT_LT(named - fresh, size_t{1} << 20);
    EXPECT_LT(heap_in_use() - heap0, size_t{1} << 20) << "the process grew";
    EXPECT_EQ(json_counter(h.stats(), "iotlb", "domain"), 65536u);
    EXPECT_EQ(h.stats().find("{\"id\":"), std::string::npos) << "no domain translated yet";

    // Devices in four domains, each in another block of 256 domain-ids.
    uint64_t pt = h.alloc_page();
    h.map(pt, 4, 0x1000, 0xa000, 3);
    for (uint16_t i = 0; i < 4; i++) {
        h.set_context(0x100 * (i + 1), pt, 1000 * i + 7, 4);
        EXPECT_EQ(h.translate(0x100 * (i + 1), 0x1000, VTD_PERM_READ), VTD_FR_NONE);
    }
    const size_t used = vtd_engine_domain_state_bytes(h.e);
    EXPECT_GT(used, named) << "translated domains have statistics";
    EXPECT_LT(used - named, 4 * (size_t{8} << 10)) << "and those cost little each";
    std::string s = h.stats();
    for (uint16_t i = 0; i < 4; i++) {
        size_t d = s.find("{\"id\":" + std::to_string(1000 * i + 7) + ",");
        ASSERT_NE(d, std::string::npos) << i;
        EXPECT_EQ(json_counter(s.substr(d), "", "translations"), 1u);
    }
    size_t listed = 0;
    for (size_t p = s.find("{\"id\":"); p != std::string::npos; p = s.find("{\"id\":", p + 1))
        listed++;
    EXPECT_EQ(listed, 4u);
}
