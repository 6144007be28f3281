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
    // Three kinds of epochs: the IOTLB's two of 32 bits (256 KiB each for
    // all domain-ids), the context cache's of 64 bits (512 KiB).
    const size_t named = vtd_engine_domain_state_bytes(h.e);
    const size_t bound = (size_t{1} << 20) + (size_t{64} << 10);
    EXPECT_LT(named - fresh, bound);
    EXPECT_LT(heap_in_use() - heap0, bound) << "the process grew";
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

// The report's bytes for a fixed activity: every counter, every fault
// reason, descriptor type and latency bucket used, domains and sources in
// several blocks; then after a reset, with a little activity again.  The
// expected texts are the report as docs/statistics.rst describes it (schema
// viommu-vtd-stats/1); consumers (tests/guest/stats_check.py, the QMP
// command) parse these bytes, so a change of the writer must not change
// them.
namespace {

std::string report_after_fixed_activity(viommu::vtd::Stats &stats)
{
    using namespace viommu::vtd;
    for (size_t i = 0; i < std::size(COUNTER_NAMES); i++)
        stats.add(COUNTER_NAMES[i].counter, 1000 + i);
    for (unsigned r = 1; r <= VTD_FR_INTERRUPT_ADDR; r++)
        for (unsigned k = 0; k < r % 4 + 1; k++)
            stats.fault(static_cast<VtdFaultReason>(r));
    for (unsigned r = VTD_FR_IR_REQ_RSVD; r <= VTD_FR_IR_PID_INV; r++)
        for (unsigned k = 0; k < r % 3 + 1; k++)
            stats.fault(static_cast<VtdFaultReason>(r));
    for (size_t i = 0; i < std::size(SM_FAULT_REASONS); i++)
        for (unsigned k = 0; k < i % 5 + 1; k++)
            stats.fault(SM_FAULT_REASONS[i]);
    for (unsigned t = 0; t < Stats::DESC_TYPES; t++)
        for (unsigned k = 0; k < t; k++)
            stats.descriptor(t);
    for (uint64_t ns : {0ull, 1ull, 3ull, 700ull, 123456ull, 1ull << 40, ~0ull})
        stats.latency(ns);
    for (uint16_t did : {uint16_t{7}, uint16_t{0}, uint16_t{300}, uint16_t{65535}}) {
        DomainStats &d = stats.domain(did);
        for (unsigned c = 0; c < DomainStats::Hot::N; c++)
            for (unsigned k = 0; k <= c + did % 3; k++)
                d.hot[0].bump(c, 0);
        d.faults += did % 5 + 1;
        d.inv_domain += 2;
        d.inv_page += 3;
        d.pages_mapped += did;
        d.pages_unmapped += 1;
    }
    for (uint16_t sid : {uint16_t{256}, uint16_t{1}, uint16_t{65535}}) {
        SourceStats &s = stats.source(sid);
        s.remapped += sid % 7;
        s.passed += 1;
        s.blocked += 2;
    }
    Stats::Gauges g{48, true, 4096, 17, 1024, 3, 8, true, true, 256, 5};
    return stats.to_json(g);
}

constexpr const char *EXPECTED_FULL =
    R"json({"schema":"viommu-vtd-stats/1","config":{"aw_bits":48,"caching_mode":true,"iotlb_capacity":4096,"context_cache_capacity":1024,"fault_records":8,"intremap":true,"eim":true},"translate":{"requests":1000,"translation_disabled":1001,"pass_through":1002,"page_walks":1010,"paging_entries_read":1011,"context_entries_read":1012},"iotlb":{"entries":17,"hits":1003,"misses":1004,"inserts":1005,"evictions":1006,"pasid_spaces_recycled":1103},"iova":{"walks_below_4g":1018,"walks_above_4g":1019,"pages_invalidated_below_4g":1020,"pages_invalidated_above_4g":1021},"context_cache":{"entries":3,"hits":1007,"misses":1008,"evictions":1009},"faults":{"recorded":1013,"suppressed_fpd":1014,"not_recorded":1015,"overflowed":1016,"collapsed":1017,"events":1022,"by_reason":{"root_entry_not_present":2,"context_entry_not_present":3,"context_entry_invalid":4,"address_beyond_mgaw":1,"write":2,"read":3,"paging_entry_invalid":4,"root_table_invalid":1,"context_table_invalid":2,"root_entry_reserved":3,"context_entry_reserved":4,"paging_entry_reserved":1,"context_entry_tt":2,"interrupt_address":3,"ir_request_reserved":3,"ir_index_beyond_table":1,"ir_entry_not_present":2,"ir_table_invalid":3,"ir_entry_reserved":1,"ir_compatibility_blocked":2,"ir_source_id":3,"ir_posted_descriptor_invalid":1,"sm_root_table_address_invalid":1,"sm_ttm_legacy_request_with_pasid":2,"sm_ttm_legacy_page_request":3,"sm_root_entry_access":4,"sm_root_entry_not_present":5,"sm_root_entry_reserved":1,"sm_context_entry_access":2,"sm_context_entry_not_present":3,"sm_context_entry_reserved":4,"sm_context_entry_invalid":5,"sm_context_dte_clear":1,"sm_context_paside_clear":2,"sm_pasid_beyond_pdts":3,"sm_context_pre_clear":4,"sm_rid_pasid_invalid":5,"sm_pasid_directory_access":1,"sm_pasid_directory_not_present":2,"sm_pasid_directory_reserved":3,"sm_pasid_entry_access":4,"sm_pasid_entry_not_present":5,"sm_pasid_entry_reserved":1,"sm_pasid_entry_invalid":2,"sm_pasid_entry_ere_clear":3,"sm_pasid_entry_sre_clear":4,"sm_first_stage_entry_access":5,"sm_first_stage_entry_not_present":1,"sm_first_stage_entry_reserved":2,"sm_first_stage_top_access":3,"sm_nested_first_stage_beyond_aw":4,"sm_nested_first_stage_top_read":5,"sm_nested_first_stage_read":1,"sm_nested_first_stage_write":2,"sm_second_stage_entry_access":3,"sm_second_stage_entry_not_present":4,"sm_second_stage_entry_reserved":5,"sm_second_stage_top_access":1,"sm_second_stage_ad_no_snoop":2,"sm_first_stage_non_canonical":3,"sm_first_stage_user":4,"sm_execute":5,"sm_address_beyond_aw":1,"sm_second_stage_output_beyond_aw":2,"sm_write":3,"sm_read":4,"sm_interrupt_address":5,"sm_first_stage_ad_no_snoop":1}},"invalidations":{"context":{"global":1023,"domain":1024,"device":1025,"entries_dropped":1032},"iotlb":{"global":1026,"domain":1027,"page":1028,"pages":1029,"entries_dropped":1030,"page_as_domain":1031},"pasid_iotlb":{"pasid":1089,"page":1090,"pages":1091,"page_as_pasid":1092,"entries_dropped":1093},"pasid_cache":{"domain":1094,"pasid":1095,"global":1096},"device_iotlb":1033,"interrupt_entry_cache":1034,"pasid_device_iotlb":1097,"register_based":{"context":1035,"iotlb":1036,"ignored_qi_enabled":1037,"invalid":1038}},"queue":{"descriptors":{"type_0":0,"context_cache":1,"iotlb":2,"device_iotlb":3,"interrupt_entry_cache":4,"wait":5,"pasid_iotlb":6,"pasid_cache":7,"pasid_device_iotlb":8,"type_9":9,"type_10":10,"type_11":11,"type_12":12,"type_13":13,"type_14":14,"type_15":15},"invalid_descriptors":1045,"tail_errors":1046,"slices_deferred":1047,"width_errors":1088,"waits":{"total":1039,"status_write":1040,"interrupt":1041,"fence":1042,"status_write_failed":1043,"events":1044},"latency_ns":{"count":7,"sum":1099511751935,"max":18446744073709551615,"log2_histogram":[2,1,0,0,0,0,0,0,0,1,0,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,2]}},"scalable":{"requests_without_pasid":1075,"requests_with_pasid":1076,"context_and_pasid_entries_read":1087,"pgtt":{"first_stage":1077,"second_stage":1078,"nested":1079,"pass_through":1080},"first_stage":{"walks":1081,"entries_read":1082,"nested_second_stage_walks":1083,"accessed_set":1084,"dirty_set":1085,"ad_update_retries":1086}},"replay":{"walks":1048,"leaves":1049,"truncated":1050},"pages":{"mapped":1051,"unmapped":1052},"device_tlb":{"page":1053,"range":1054,"all":1055,"pages":1056,"pasid_global":1098},"notifications":{"unmap":1057,"map":1058,"deviotlb_unmap":1059},"pasid_cache":{"hits":1099,"misses":1100,"inserts":1101,"evictions":1102},"interrupt_remapping":{"requests":1060,"not_interrupt":1061,"disabled_pass_through":1062,"remappable":{"remapped":1063,"blocked":1064},"compatibility":{"passed_through":1065,"blocked":1066},"blocked_by_reason":{"ir_request_reserved":3,"ir_index_beyond_table":1,"ir_entry_not_present":2,"ir_table_invalid":3,"ir_entry_reserved":1,"ir_compatibility_blocked":2,"ir_source_id":3,"ir_posted_descriptor_invalid":1},"iec":{"capacity":256,"entries":5,"hits":1067,"misses":1068,"inserts":1069,"evictions":1070,"invalidations_global":1071,"invalidations_index":1072,"invalidations_sirtp":1073,"entries_dropped":1074},"sources":[{"sid":1,"remapped":1,"passed_through":1,"blocked":2},{"sid":256,"remapped":4,"passed_through":1,"blocked":2},{"sid":65535,"remapped":1,"passed_through":1,"blocked":2}]},"domains":[{"id":0,"translations":1,"iotlb_hits":2,"iotlb_misses":3,"page_walks":4,"faults":1,"domain_invalidations":2,"page_invalidations":3,"pages_mapped":0,"pages_unmapped":1},{"id":7,"translations":2,"iotlb_hits":3,"iotlb_misses":4,"page_walks":5,"faults":3,"domain_invalidations":2,"page_invalidations":3,"pages_mapped":7,"pages_unmapped":1},{"id":300,"translations":1,"iotlb_hits":2,"iotlb_misses":3,"page_walks":4,"faults":1,"domain_invalidations":2,"page_invalidations":3,"pages_mapped":300,"pages_unmapped":1},{"id":65535,"translations":1,"iotlb_hits":2,"iotlb_misses":3,"page_walks":4,"faults":1,"domain_invalidations":2,"page_invalidations":3,"pages_mapped":65535,"pages_unmapped":1}]})json";
constexpr const char *EXPECTED_AFTER_RESET =
    R"json({"schema":"viommu-vtd-stats/1","config":{"aw_bits":39,"caching_mode":false,"iotlb_capacity":1,"context_cache_capacity":1,"fault_records":0,"intremap":false,"eim":false},"translate":{"requests":0,"translation_disabled":0,"pass_through":0,"page_walks":0,"paging_entries_read":0,"context_entries_read":0},"iotlb":{"entries":0,"hits":5,"misses":0,"inserts":0,"evictions":0,"pasid_spaces_recycled":0},"iova":{"walks_below_4g":0,"walks_above_4g":0,"pages_invalidated_below_4g":0,"pages_invalidated_above_4g":0},"context_cache":{"entries":0,"hits":0,"misses":0,"evictions":0},"faults":{"recorded":0,"suppressed_fpd":0,"not_recorded":0,"overflowed":0,"collapsed":0,"events":0,"by_reason":{"root_entry_not_present":0,"context_entry_not_present":0,"context_entry_invalid":0,"address_beyond_mgaw":0,"write":1,"read":0,"paging_entry_invalid":0,"root_table_invalid":0,"context_table_invalid":0,"root_entry_reserved":0,"context_entry_reserved":0,"paging_entry_reserved":0,"context_entry_tt":0,"interrupt_address":0,"ir_request_reserved":0,"ir_index_beyond_table":0,"ir_entry_not_present":0,"ir_table_invalid":0,"ir_entry_reserved":0,"ir_compatibility_blocked":0,"ir_source_id":0,"ir_posted_descriptor_invalid":0,"sm_root_table_address_invalid":0,"sm_ttm_legacy_request_with_pasid":0,"sm_ttm_legacy_page_request":0,"sm_root_entry_access":0,"sm_root_entry_not_present":0,"sm_root_entry_reserved":0,"sm_context_entry_access":0,"sm_context_entry_not_present":0,"sm_context_entry_reserved":0,"sm_context_entry_invalid":0,"sm_context_dte_clear":0,"sm_context_paside_clear":0,"sm_pasid_beyond_pdts":0,"sm_context_pre_clear":0,"sm_rid_pasid_invalid":0,"sm_pasid_directory_access":0,"sm_pasid_directory_not_present":0,"sm_pasid_directory_reserved":0,"sm_pasid_entry_access":0,"sm_pasid_entry_not_present":0,"sm_pasid_entry_reserved":0,"sm_pasid_entry_invalid":0,"sm_pasid_entry_ere_clear":0,"sm_pasid_entry_sre_clear":0,"sm_first_stage_entry_access":0,"sm_first_stage_entry_not_present":0,"sm_first_stage_entry_reserved":0,"sm_first_stage_top_access":0,"sm_nested_first_stage_beyond_aw":0,"sm_nested_first_stage_top_read":0,"sm_nested_first_stage_read":0,"sm_nested_first_stage_write":0,"sm_second_stage_entry_access":0,"sm_second_stage_entry_not_present":0,"sm_second_stage_entry_reserved":0,"sm_second_stage_top_access":0,"sm_second_stage_ad_no_snoop":0,"sm_first_stage_non_canonical":0,"sm_first_stage_user":0,"sm_execute":0,"sm_address_beyond_aw":0,"sm_second_stage_output_beyond_aw":0,"sm_write":0,"sm_read":0,"sm_interrupt_address":0,"sm_first_stage_ad_no_snoop":0}},"invalidations":{"context":{"global":0,"domain":0,"device":0,"entries_dropped":0},"iotlb":{"global":0,"domain":0,"page":0,"pages":0,"entries_dropped":0,"page_as_domain":0},"pasid_iotlb":{"pasid":0,"page":0,"pages":0,"page_as_pasid":0,"entries_dropped":0},"pasid_cache":{"domain":0,"pasid":0,"global":0},"device_iotlb":0,"interrupt_entry_cache":0,"pasid_device_iotlb":0,"register_based":{"context":0,"iotlb":0,"ignored_qi_enabled":0,"invalid":0}},"queue":{"descriptors":{"type_0":0,"context_cache":0,"iotlb":0,"device_iotlb":0,"interrupt_entry_cache":0,"wait":0,"pasid_iotlb":0,"pasid_cache":0,"pasid_device_iotlb":0,"type_9":0,"type_10":0,"type_11":0,"type_12":0,"type_13":0,"type_14":0,"type_15":0},"invalid_descriptors":0,"tail_errors":0,"slices_deferred":0,"width_errors":0,"waits":{"total":0,"status_write":0,"interrupt":0,"fence":0,"status_write_failed":0,"events":0},"latency_ns":{"count":0,"sum":0,"max":0,"log2_histogram":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}},"scalable":{"requests_without_pasid":0,"requests_with_pasid":0,"context_and_pasid_entries_read":0,"pgtt":{"first_stage":0,"second_stage":0,"nested":0,"pass_through":0},"first_stage":{"walks":0,"entries_read":0,"nested_second_stage_walks":0,"accessed_set":0,"dirty_set":0,"ad_update_retries":0}},"replay":{"walks":0,"leaves":0,"truncated":0},"pages":{"mapped":0,"unmapped":0},"device_tlb":{"page":0,"range":0,"all":0,"pages":0,"pasid_global":0},"notifications":{"unmap":0,"map":0,"deviotlb_unmap":0},"pasid_cache":{"hits":0,"misses":0,"inserts":0,"evictions":0},"interrupt_remapping":{"requests":0,"not_interrupt":0,"disabled_pass_through":0,"remappable":{"remapped":0,"blocked":0},"compatibility":{"passed_through":0,"blocked":0},"blocked_by_reason":{"ir_request_reserved":0,"ir_index_beyond_table":0,"ir_entry_not_present":0,"ir_table_invalid":0,"ir_entry_reserved":0,"ir_compatibility_blocked":0,"ir_source_id":0,"ir_posted_descriptor_invalid":0},"iec":{"capacity":0,"entries":0,"hits":0,"misses":0,"inserts":0,"evictions":0,"invalidations_global":0,"invalidations_index":0,"invalidations_sirtp":0,"entries_dropped":0},"sources":[]},"domains":[{"id":9,"translations":0,"iotlb_hits":0,"iotlb_misses":0,"page_walks":0,"faults":1,"domain_invalidations":0,"page_invalidations":0,"pages_mapped":0,"pages_unmapped":0}]})json";

}  // namespace

TEST(Stats, ReportBytesUnchanged)
{
    viommu::vtd::Stats stats;
    EXPECT_EQ(report_after_fixed_activity(stats), EXPECTED_FULL);
    stats.reset();
    stats.add(viommu::vtd::Counter::IotlbHits, 5);
    stats.fault(VTD_FR_WRITE);
    stats.domain(9).faults += 1;
    EXPECT_EQ(stats.to_json({39, false, 1, 0, 1, 0, 0}), EXPECTED_AFTER_RESET);
}

// The report lists the domains and sources seen since the last reset, in
// id order, whichever word of a block's seen mask they fall in; a reset
// zeroes the counters of each one, and only those seen again come back.
TEST(Stats, ReportListsSeenEntriesInIdOrderAcrossResets)
{
    using viommu::vtd::DomainStats;
    using viommu::vtd::Stats;
    Stats stats;
    const uint16_t ids[] = {255, 128, 64, 63, 0, 511, 256};
    for (uint16_t id : ids) {
        stats.domain(id).faults += id + 1;
        stats.source(id).blocked += id + 2;
    }
    auto listed = [](const std::string &json, const char *key) {
        std::vector<std::string> v;
        const std::string k = std::string("\"") + key + "\":";
        for (size_t p = json.find(k); p != std::string::npos; p = json.find(k, p + 1)) {
            size_t end = json.find_first_of(",}", p);
            v.push_back(json.substr(p + k.size(), end - p - k.size()));
        }
        return v;
    };
    const Stats::Gauges g{48, false, 1, 0, 1, 0, 0};
    std::string full = stats.to_json(g);
    const std::vector<std::string> order{"0", "63", "64", "128", "255", "256", "511"};
    EXPECT_EQ(listed(full, "id"), order);
    EXPECT_EQ(listed(full, "sid"), order);
    EXPECT_NE(full.find("{\"id\":64,\"translations\":0,\"iotlb_hits\":0,\"iotlb_misses\":0,"
                        "\"page_walks\":0,\"faults\":65,"),
              std::string::npos);
    EXPECT_NE(full.find("{\"sid\":63,\"remapped\":0,\"passed_through\":0,\"blocked\":65}"),
              std::string::npos);

    stats.reset();
    std::string empty = stats.to_json(g);
    EXPECT_TRUE(listed(empty, "id").empty());
    EXPECT_TRUE(listed(empty, "sid").empty());

    stats.source(64).passed += 1;
    stats.domain(128);
    DomainStats *d = stats.find_domain(63);  // allocated before: marks it seen again
    ASSERT_NE(d, nullptr);
    std::string again = stats.to_json(g);
    EXPECT_EQ(listed(again, "id"), (std::vector<std::string>{"63", "128"}));
    EXPECT_EQ(listed(again, "sid"), (std::vector<std::string>{"64"}));
    EXPECT_NE(again.find("{\"id\":63,\"translations\":0,\"iotlb_hits\":0,\"iotlb_misses\":0,"
                         "\"page_walks\":0,\"faults\":0,"),
              std::string::npos);
    EXPECT_NE(again.find("{\"sid\":64,\"remapped\":0,\"passed_through\":1,\"blocked\":0}"),
              std::string::npos);
}
