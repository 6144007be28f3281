// SPDX-License-Identifier: GPL-2.0-or-later
// Parameters, case files and the JSON reader: every error names what is wrong.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>

#include "json.hpp"
#include "params.hpp"

using namespace viommu::sim;

namespace {

TEST(Json, ParsesStrictJson)
{
    std::string err;
    auto v = json::parse(R"({"a": [1, -2.5e3, true, null], "b": "x\u00e9\"\n", "c": {}})", &err);
    ASSERT_TRUE(v) << err;
    EXPECT_EQ(v->find("a")->array().size(), 4u);
    EXPECT_EQ(v->find("a")->array()[1].number(), -2500.0);
    EXPECT_EQ(v->find("a")->array()[0].text(), "1");
    EXPECT_EQ(v->find("b")->str(), "x\xc3\xa9\"\n");
    EXPECT_TRUE(v->find("c")->is(json::Value::Type::object));
}

TEST(Json, RejectsWhatIsNotJsonWithItsPosition)
{
    for (const char *bad : {"{\"a\": 1,}", "[1, 2,]", "{\"a\": 1, \"a\": 2}", "{a: 1}", "// c\n{}",
                            "{\"a\": 01}", "{\"a\": 1} x", "{\"a\": \"\\q\"}", "{\"a\": tru}",
                            "[\"\\ud800\"]", "", "{\"a\": \"\n\"}"}) {
        std::string err;
        EXPECT_FALSE(json::parse(bad, &err)) << bad;
        EXPECT_EQ(err.rfind("line ", 0), 0u) << bad << ": " << err;
    }
    std::string err;
    EXPECT_FALSE(json::parse("{\n  \"a\": 1,\n  \"a\": 2\n}", &err));
    EXPECT_NE(err.find("line 3"), std::string::npos) << err;
    EXPECT_NE(err.find("duplicate key \"a\""), std::string::npos) << err;
}

TEST(Params, ParsesUnitsMixesAndCpuLists)
{
    Params p;
    std::string err;
    ASSERT_TRUE(p.set("duration", "10ms", &err)) << err;
    EXPECT_EQ(p.duration_ns, 10'000'000u);
    ASSERT_TRUE(p.set("cpu-ns-per-op", "4us", &err)) << err;
    EXPECT_EQ(p.cpu_ns_per_op, 4000u);
    ASSERT_TRUE(p.set("page-size", "64K", &err)) << err;
    EXPECT_EQ(p.page_size, 65536u);
    ASSERT_TRUE(p.set("block-size", "4096:70,64K:30", &err)) << err;
    EXPECT_EQ(p.block_size.alts.size(), 2u);
    EXPECT_EQ(p.block_size.alts[1].bytes[0], 65536u);
    EXPECT_EQ(p.block_size.total_weight(), 100u);
    ASSERT_TRUE(p.set("workload", "block", &err));
    ASSERT_TRUE(p.set("cpus", "16", &err));
    ASSERT_TRUE(p.set("irq-affinity", "spread", &err));
    ASSERT_TRUE(p.set("irq-cpus", "0-2,8", &err));
    EXPECT_EQ(p.irq_cpu_list(), (std::vector<unsigned>{0, 1, 2, 8}));
    ASSERT_TRUE(p.set("irq-cpus", "4", &err));
    EXPECT_EQ(p.irq_cpu_list(), (std::vector<unsigned>{0, 1, 2, 3}));
    ASSERT_TRUE(p.set("irq-cpus", "25%", &err));
    EXPECT_EQ(p.irq_cpu_list().size(), 4u);
    EXPECT_TRUE(p.validate(&err)) << err;
}

// A size or a time takes the first unit it ends with; a unit alone, a
// unit of the other kind or a product beyond 64 bits is no value.
TEST(Params, SizesAndTimesTakeOneUnit)
{
    for (auto [v, ns] : std::initializer_list<std::pair<const char *, uint64_t>>{
             {"7", 7},
             {"7ns", 7},
             {"7us", 7'000},
             {"7ms", 7'000'000},
             {"7s", 7'000'000'000},
             {"1000s", 1'000'000'000'000},
             {"1000000000000", 1'000'000'000'000},
             {"999999999us", 999'999'999'000}}) {
        Params p;
        std::string err;
        ASSERT_TRUE(p.set("duration", v, &err)) << v << ": " << err;
        EXPECT_EQ(p.duration_ns, ns) << v;
    }
    for (const char *v :
         {"ns", "s", "", "7 ns", "7sec", "7K", "18446744073709552us", "18446744073709551616",
          // beyond what 64-bit virtual clocks hold over a long window
          "1001s", "1000000000001", "18446744073709551615", "18446744073709551615ns"}) {
        Params p;
        std::string err;
        EXPECT_FALSE(p.set("duration", v, &err)) << v;
    }
    // a time per operation: at most 100 s, so 2^24 of them fit the clocks
    for (const char *k : {"cpu-ns-per-op", "device-ns-per-op"}) {
        Params p;
        std::string err;
        EXPECT_TRUE(p.set(k, "100s", &err)) << k << ": " << err;
        EXPECT_FALSE(p.set(k, "100000000001", &err)) << k;
        EXPECT_NE(err.find("from 0 to 100s"), std::string::npos) << err;
    }
    for (auto [v, bytes] :
         std::initializer_list<std::pair<const char *, uint64_t>>{{"2048", 2048},
                                                                  {"2048B", 2048},
                                                                  {"2K", 2048},
                                                                  {"2KiB", 2048},
                                                                  {"1M", 1 << 20},
                                                                  {"1MiB", 1 << 20},
                                                                  {"1024M", 1 << 30}}) {
        Params p;
        std::string err;
        ASSERT_TRUE(p.set("rx-buffer-bytes", v, &err)) << v << ": " << err;
        EXPECT_EQ(p.rx_buffer_bytes, bytes) << v;
    }
    for (const char *v : {"B", "K", "KiB", "2KB", "2k", "2us", "1G", "2 K"}) {
        Params p;
        std::string err;
        EXPECT_FALSE(p.set("rx-buffer-bytes", v, &err)) << v;
    }
}

TEST(Params, BadValuesNameTheParameter)
{
    for (auto [k, v] : {std::pair{"cpus", "0"},
                        {"cpus", "x"},
                        {"page-size", "8192"},
                        {"dma-mask-bits", "16"},
                        {"block-size", "4096:0"},
                        {"block-size", ""},
                        {"duration", "5 minutes"},
                        {"workload", "fio"},
                        {"cmdq", "ticket"},
                        {"setup-fill", "maybe"},
                        {"iodepth", "-1"}}) {
        Params p;
        std::string err;
        EXPECT_FALSE(p.set(k, v, &err)) << k << " " << v;
        EXPECT_EQ(err.rfind("--" + std::string(k), 0), 0u) << err;
        EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    }
    Params p;
    std::string err;
    EXPECT_FALSE(p.set("colour", "blue", &err));
    EXPECT_NE(err.find("colour"), std::string::npos);
}

// A window of --duration needs operations that take time without the
// IOMMU: the no-IOMMU baseline of free operations would never end it.
TEST(Params, ADurationNeedsOperationsThatTakeTime)
{
    Params p;
    std::string err;
    ASSERT_TRUE(p.set("workload", "map-bench", &err)) << err;
    ASSERT_TRUE(p.set("duration", "1ms", &err)) << err;
    ASSERT_TRUE(p.set("cpu-ns-per-op", "0", &err)) << err;
    EXPECT_FALSE(p.validate(&err));
    EXPECT_EQ(err.rfind("--duration", 0), 0u) << err;
    ASSERT_TRUE(p.set("device-ns-per-op", "100", &err)) << err;
    EXPECT_TRUE(p.validate(&err)) << err;
    ASSERT_TRUE(p.set("device-ns-per-op", "0", &err)) << err;
    ASSERT_TRUE(p.set("cpu-ns-per-op", "1", &err)) << err;
    EXPECT_TRUE(p.validate(&err)) << err;
}

// A --duration window holds at most 2^24 operations per CPU: a duration
// whose no-IOMMU baseline would run more is refused, naming the longest.
TEST(Params, ADurationLongerThanAWindowHoldsIsRefused)
{
    Params p;
    std::string err;
    ASSERT_TRUE(p.set("cpu-ns-per-op", "2us", &err)) << err;
    ASSERT_TRUE(p.set("duration", "33554432us", &err)) << err;  // 2 us x 2^24
    EXPECT_TRUE(p.validate(&err)) << err;
    ASSERT_TRUE(p.set("duration", "101s", &err)) << err;
    EXPECT_FALSE(p.validate(&err));
    EXPECT_EQ(err.rfind("--duration", 0), 0u) << err;
    EXPECT_NE(err.find("at most 33554432000ns"), std::string::npos) << err;
}

TEST(Params, HelpDocumentsEveryParameterWithUnitAndDefault)
{
    std::string h = Params::help();
    for (std::string_view n : Params::names()) {
        size_t at = h.find("  --" + std::string(n) + "\n");
        if (at == std::string::npos)
            at = h.find("  --" + std::string(n) + " (");
        ASSERT_NE(at, std::string::npos) << n;
        size_t next = h.find("\n  --", at + 1);
        EXPECT_NE(h.substr(at, next - at).find("default: "), std::string::npos) << n;
    }
}

std::string write_temp(const std::string &name, const std::string &text)
{
    std::string path = ::testing::TempDir() + "/" + name;
    std::ofstream(path) << text;
    return path;
}

TEST(CaseFile, ErrorsNameTheFileAndTheKey)
{
    struct Bad {
        const char *text, *key;
    };
    for (const Bad &b : std::initializer_list<Bad>{
             {R"({"parameters": {"iodepht": 4}})", "parameters.iodepht"},
             {R"({"parameters": {"cpus": {"value": 0}}})", "parameters.cpus"},
             {R"({"parameters": {"cpus": {"cite": "x"}}})", "parameters.cpus"},
             {R"({"parameters": {"cpus": [4]}})", "parameters.cpus"},
             {R"({"parameters": {"cpus": {"value": 4, "citation": "x"}}})", "cpus.citation"},
             {R"({"parameters": {}, "configurations": {"a": {"parameters": {"dma": "dac"}}}})",
              "configurations.a.parameters.dma"},
             {R"({"parameters": {}, "extra": 1})", "\"extra\""},
             {R"({"parameters": {"cpus": 4,}})", "line 1"},
         }) {
        std::string path = write_temp("bad.json", b.text);
        Params p;
        std::string err;
        EXPECT_FALSE(load_case(path, "a", p, &err)) << b.text;
        EXPECT_EQ(err.rfind(path + ": ", 0), 0u) << err;
        EXPECT_NE(err.find(b.key), std::string::npos) << err;
    }
    Params p;
    std::string err;
    EXPECT_FALSE(load_case(write_temp("ok.json", R"({"parameters": {}})"), "nope", p, &err));
    EXPECT_NE(err.find("configurations.nope"), std::string::npos) << err;
    EXPECT_FALSE(load_case("no-such-case", "", p, &err));
    EXPECT_NE(err.find("no-such-case.json"), std::string::npos) << err;
}

TEST(CaseFile, ConfigurationsOverrideTheParametersAndLaterSetsOverrideBoth)
{
    std::string path = write_temp("layers.json", R"({
      "parameters": {"workload": "block", "cpus": 8, "iodepth": {"value": 16, "cite": "x"}},
      "configurations": {"deep": {"about": "y", "parameters": {"iodepth": 64}}}
    })");
    Params p;
    std::string err;
    std::vector<std::string> names;
    ASSERT_TRUE(load_case(path, "deep", p, &err, &names)) << err;
    EXPECT_EQ(p.iodepth, 64u);
    EXPECT_EQ(p.cpus, 8u);
    EXPECT_EQ(names, std::vector<std::string>{"deep"});
    ASSERT_TRUE(p.set("iodepth", "2", &err));
    EXPECT_EQ(p.iodepth, 2u);
}

// The case files of the reported setups: every parameter and every
// configuration's parameter cites where its value comes from.
TEST(CaseFile, EveryShippedCaseCitesEveryParameter)
{
    for (const char *name : {"memcached-16cpu-xl710", "ovs-forward-64b", "nginx-rbtree-regression",
                             "nvme-smmuv3-cmdq", "cx4-64k-32bit-exhausted", "hns-dsaf-probe"}) {
        std::ifstream f(case_path(name));
        ASSERT_TRUE(f) << name;
        std::string text((std::istreambuf_iterator<char>(f)), {});
        std::string err;
        auto doc = json::parse(text, &err);
        ASSERT_TRUE(doc) << name << ": " << err;
        const json::Value *sources = doc->find("sources");
        ASSERT_TRUE(sources) << name;
        auto check = [&](const json::Value &params, const std::string &where) {
            for (const auto &[k, v] : params.members()) {
                ASSERT_TRUE(v.is(json::Value::Type::object)) << name << " " << where << k;
                const json::Value *cite = v.find("cite");
                const json::Value *src = v.find("source");
                EXPECT_TRUE(cite && !cite->str().empty()) << name << " " << where << k;
                ASSERT_TRUE(src) << name << " " << where << k;
                EXPECT_TRUE(sources->find(src->str())) << name << " " << where << k;
            }
        };
        check(*doc->find("parameters"), "parameters.");
        std::vector<std::string> configs;
        Params p;
        ASSERT_TRUE(load_case(name, "", p, &err, &configs)) << err;
        EXPECT_TRUE(p.validate(&err)) << name << ": " << err;
        for (const auto &[c, v] : doc->find("configurations")->members()) {
            check(*v.find("parameters"), "configurations." + c + ".");
            Params q;
            ASSERT_TRUE(load_case(name, c, q, &err)) << err;
            EXPECT_TRUE(q.validate(&err)) << name << " " << c << ": " << err;
        }
    }
}

}  // namespace
