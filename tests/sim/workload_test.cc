// SPDX-License-Identifier: GPL-2.0-or-later
// Workload generators: well-formed step streams, per-CPU determinism, C API.
#include <cstddef>
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include <viommu/sim.h>

#include "params.hpp"
#include "workload.hpp"

using namespace viommu::sim;

namespace {

// Sets every (name, value) on @p, stopping at the first that is refused
// (@err names it).
using Settings = std::vector<std::pair<const char *, const char *>>;

bool set_all(Params &p, const Settings &values, std::string &err)
{
    for (auto [k, v] : values)
        if (!p.set(k, v, &err))
            return false;
    return true;
}

bool same(const Step &a, const Step &b)
{
    return a.kind == b.kind && a.device == b.device && a.arg == b.arg && a.value == b.value;
}

// Replays a workload's steps and checks every map goes to a free slot,
// every unmap to a live one, and counts what one CPU does.
struct Replay {
    std::vector<std::vector<bool>> live;
    std::vector<uint64_t> mailbox;
    uint64_t maps = 0, unmaps = 0, work_ns = 0, errors = 0;

    explicit Replay(const WorkloadInfo &i)
        : live(i.cpus, std::vector<bool>(i.slots_per_cpu)), mailbox(i.cpus)
    {
    }
    void run(unsigned cpu, const std::vector<Step> &steps, const WorkloadInfo &info)
    {
        for (const Step &s : steps) {
            switch (s.kind) {
            case VIOMMU_SIM_WORK:
                work_ns += s.value;
                break;
            case VIOMMU_SIM_MAP:
                errors += s.arg >= info.slots_per_cpu || live[cpu][s.arg] ||
                          s.device >= info.devices.size();
                if (s.arg < info.slots_per_cpu)
                    live[cpu][s.arg] = true;
                maps++;
                break;
            case VIOMMU_SIM_UNMAP:
                errors += s.arg >= info.slots_per_cpu || !live[cpu][s.arg];
                if (s.arg < info.slots_per_cpu)
                    live[cpu][s.arg] = false;
                unmaps++;
                break;
            case VIOMMU_SIM_MAP_POST:
                errors += s.arg >= info.cpus;
                mailbox[s.arg % info.cpus]++;
                maps++;
                break;
            case VIOMMU_SIM_UNMAP_POST:
                errors += s.arg >= info.slots_per_cpu || !live[cpu][s.arg] || s.value >= info.cpus;
                if (s.arg < info.slots_per_cpu)
                    live[cpu][s.arg] = false;
                mailbox[s.value % info.cpus]++;
                break;
            case VIOMMU_SIM_UNMAP_MAILBOX:
                unmaps += mailbox[cpu];
                mailbox[cpu] = 0;
                break;
            default:
                errors++;
            }
        }
    }
};

// Every case file's setup and every workload kind at its defaults, plus
// setups that exercise cross-CPU completions and several queues and domains.
std::vector<std::string> setups()
{
    std::vector<std::string> v = {"case:memcached-16cpu-xl710",   "case:ovs-forward-64b",
                                  "case:nginx-rbtree-regression", "case:nvme-smmuv3-cmdq",
                                  "case:cx4-64k-32bit-exhausted", "case:hns-dsaf-probe"};
    for (std::string_view n : Workload::names())
        v.push_back("kind:" + std::string(n));
    v.push_back("block-spread");
    v.push_back("nic-single-irq");
    return v;
}

std::unique_ptr<Workload> make(const std::string &setup, unsigned cpus = 0)
{
    Params p;
    std::string err;
    p.seed = 7;
    if (setup.rfind("case:", 0) == 0) {
        EXPECT_TRUE(load_case(setup.substr(5), "", p, &err)) << err;
    } else if (setup.rfind("kind:", 0) == 0) {
        EXPECT_TRUE(p.set("workload", setup.substr(5), &err)) << err;
        EXPECT_TRUE(p.set("cpus", "4", &err)) << err;
        if (setup == "kind:forward") {
            EXPECT_TRUE(p.set("devices", "2", &err)) << err;
        }
    } else if (setup == "block-spread") {
        for (auto [k, v] : {std::pair{"workload", "block"},
                            {"cpus", "8"},
                            {"devices", "3"},
                            {"queues-per-device", "2"},
                            {"iodepth", "16"},
                            {"block-size", "4096:3,65536:1"},
                            {"irq-affinity", "spread"},
                            {"irq-cpus", "0-1"},
                            {"domains-per-device", "2"}})
            EXPECT_TRUE(p.set(k, v, &err)) << err;
    } else {
        for (auto [k, v] : {std::pair{"workload", "nic"},
                            {"cpus", "6"},
                            {"tx-window", "16"},
                            {"irq-affinity", "single"},
                            {"irq-cpus", "5-5"}})
            EXPECT_TRUE(p.set(k, v, &err)) << err;
    }
    if (cpus)
        p.cpus = cpus;
    auto w = Workload::create(p, &err);
    EXPECT_NE(w, nullptr) << setup << ": " << err;
    return w;
}

class EveryWorkload : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryWorkload, StepsAreWellFormedAndMapsAreBalanced)
{
    auto w = make(GetParam());
    ASSERT_NE(w, nullptr);
    const WorkloadInfo &info = w->info();
    EXPECT_GT(info.work_ns, 0u);
    EXPECT_FALSE(info.devices.empty());
    Replay r(info);
    std::vector<Step> steps;
    for (unsigned c = 0; c < info.cpus; c++) {
        w->setup(c, steps);
        r.run(c, steps, info);
        steps.clear();
    }
    uint64_t setup_maps = r.maps;
    unsigned rounds = 2 * info.slots_per_cpu + 10;
    for (unsigned i = 0; i < rounds; i++)
        for (unsigned c = 0; c < info.cpus; c++) {
            w->next(c, steps);
            r.run(c, steps, info);
            steps.clear();
        }
    EXPECT_EQ(r.errors, 0u);
    // per-transaction work varies around the given mean
    double mean = double(r.work_ns) / (double(rounds) * info.cpus);
    EXPECT_NEAR(mean, double(info.work_ns), 0.05 * double(info.work_ns));
    // in steady state what is mapped is bounded by the rings (+ mailboxes)
    uint64_t outstanding = r.maps - r.unmaps;
    EXPECT_LE(outstanding, uint64_t{info.slots_per_cpu} * info.cpus + 4 * info.cpus);
    EXPECT_GT(r.maps, setup_maps);
}

INSTANTIATE_TEST_SUITE_P(Sim, EveryWorkload, ::testing::ValuesIn(setups()), [](const auto &p) {
    std::string n;
    for (char c : p.param)
        n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return n;
});

TEST(Workload, OneCpusStreamDoesNotDependOnOtherCpus)
{
    auto a = Workload::create("memcached", 4, 42);
    auto b = Workload::create("memcached", 4, 42);
    std::vector<Step> sa, sb, scratch;
    for (int i = 0; i < 500; i++) {
        a->next(2, sa);
        b->next(0, scratch);  // b interleaves another CPU
        b->next(2, sb);
    }
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t i = 0; i < sa.size(); i++)
        EXPECT_TRUE(same(sa[i], sb[i])) << i;
}

TEST(Workload, MemcachedMixIsTenPercentSets)
{
    auto w = Workload::create("memcached", 1, 3);
    std::vector<Step> s;
    unsigned sets = 0, n = 20000;
    for (unsigned i = 0; i < n; i++) {
        s.clear();
        w->next(0, s);
        unsigned tx_maps = 0;
        for (const Step &st : s)
            tx_maps += st.kind == VIOMMU_SIM_MAP && st.value < 2048;
        sets += tx_maps == 1;
    }
    EXPECT_NEAR(double(sets) / n, 0.10, 0.01);
}

TEST(Workload, Cx4RingsOverflowTheThirtyTwoBitSpaceAtInterfaceUp)
{
    auto w = make("case:cx4-64k-32bit-exhausted");
    const WorkloadInfo &i = w->info();
    std::vector<Step> s;
    uint64_t pages = 0;
    for (unsigned c = 0; c < i.cpus; c++)
        w->setup(c, s);
    for (const Step &st : s)
        pages += (st.value + (1u << i.granule_shift) - 1) >> i.granule_shift;
    EXPECT_GE(pages, (uint64_t{1} << (32 - i.granule_shift)));
}

TEST(Workload, WarmUpCoversOneRevolutionOfEveryRing)
{
    // docs/workloads.rst: the measured window starts in the steady state,
    // every buffer mapped at interface up recycled once.  The probe is
    // the exception: it measures the mapping at probe time itself.
    for (const std::string &s : setups()) {
        auto w = make(s);
        ASSERT_NE(w, nullptr);
        if (s == "case:hns-dsaf-probe") {
            EXPECT_EQ(w->info().warmup_per_cpu, 0u);
            continue;
        }
        if (s == "kind:map-bench")
            continue;  // no ring
        EXPECT_GT(w->info().largest_ring, 0u) << s;
        EXPECT_GE(w->info().warmup_per_cpu, w->info().largest_ring) << s;
    }
}

TEST(Workload, BlockKeepsDevicesTimesQueuesTimesIodepthOutstanding)
{
    Params p;
    std::string err;
    for (auto [k, v] :
         {std::pair{"workload", "block"}, {"cpus", "16"}, {"devices", "12"}, {"iodepth", "128"}})
        ASSERT_TRUE(p.set(k, v, &err)) << err;
    auto w = Workload::create(p, &err);
    ASSERT_NE(w, nullptr) << err;
    Replay r(w->info());
    std::vector<Step> steps;
    uint64_t maps = 0;
    for (unsigned c = 0; c < 16; c++) {
        w->setup(c, steps);
        r.run(c, steps, w->info());
        steps.clear();
    }
    maps = r.maps;
    // one queue per CPU per device, 128 deep
    EXPECT_EQ(maps, uint64_t{12} * 16 * 128);
    // one mapping per I/O, round robin over the CPU's 12 queues (12 domains)
    for (int i = 0; i < 24; i++)
        w->next(3, steps);
    std::set<uint8_t> devs;
    for (const Step &s : steps)
        if (s.kind == VIOMMU_SIM_MAP)
            devs.insert(s.device);
    EXPECT_EQ(devs.size(), 12u);
    EXPECT_EQ(w->info().devices.size(), 12u);
}

// A device has no more queues than CPUs (nvme_max_io_queues() and the
// network drivers cap them): more requested is one per CPU.
TEST(Workload, BlockQueuesAreCappedAtOnePerCpu)
{
    auto setup_maps = [](const char *queues) {
        Params p;
        std::string err;
        for (auto [k, v] : {std::pair{"workload", "block"},
                            {"cpus", "4"},
                            {"devices", "3"},
                            {"iodepth", "8"},
                            {"queues-per-device", queues}})
            EXPECT_TRUE(p.set(k, v, &err)) << err;
        auto w = Workload::create(p, &err);
        EXPECT_NE(w, nullptr) << err;
        Replay r(w->info());
        std::vector<Step> steps;
        for (unsigned c = 0; c < 4; c++) {
            w->setup(c, steps);
            r.run(c, steps, w->info());
            steps.clear();
        }
        return r.maps;
    };
    EXPECT_EQ(setup_maps("11"), uint64_t{3} * 4 * 8);
    EXPECT_EQ(setup_maps("11"), setup_maps("0"));
    EXPECT_EQ(setup_maps("2"), uint64_t{3} * 2 * 8);
}

TEST(Workload, SpreadCompletionsRunOnTheInterruptCpus)
{
    Params p;
    std::string err;
    ASSERT_TRUE(set_all(p,
                        {{"workload", "nginx"},
                         {"cpus", "16"},
                         {"tx-window", "0"},
                         {"irq-affinity", "spread"},
                         {"irq-cpus", "25%"}},
                        err))
        << err;
    auto w = Workload::create(p, &err);
    ASSERT_NE(w, nullptr) << err;
    std::vector<Step> steps;
    for (unsigned c = 0; c < 16; c++) {
        steps.clear();
        w->next(c, steps);
        for (const Step &s : steps) {
            if (s.kind == VIOMMU_SIM_MAP_POST) {
                EXPECT_EQ(s.arg, c % 4) << c;
            }
        }
    }
}

// One CPU forwarding from port 0 to port 1; its 8 RX slots come first.
const Settings kOneForwardingCpu = {
    {"workload", "forward"}, {"cpus", "1"}, {"devices", "2"}, {"ring-entries", "8"}};

TEST(Workload, ANapiPollCleansItsTxRingBeforeItsFrames)
{
    Params p;
    std::string err;
    ASSERT_TRUE(set_all(p, kOneForwardingCpu, err) &&
                set_all(p, {{"tx-window", "4"}, {"napi-budget", "4"}}, err))
        << err;
    auto w = Workload::create(p, &err);
    ASSERT_NE(w, nullptr) << err;
    std::vector<Step> steps;
    for (unsigned op = 0; op < 12; op++) {
        steps.clear();
        w->next(0, steps);
        // TX slots follow the 8 RX slots; a poll's first operation unmaps
        // the 4 the poll before it sent, oldest first, before anything else
        std::vector<uint32_t> tx_unmaps;
        for (const Step &s : steps)
            if (s.kind == VIOMMU_SIM_UNMAP && s.arg >= 8)
                tx_unmaps.push_back(s.arg);
        if (op % 4 || op == 0) {
            EXPECT_TRUE(tx_unmaps.empty()) << op;
            continue;
        }
        ASSERT_EQ(tx_unmaps, (std::vector<uint32_t>{8, 9, 10, 11})) << op;
        EXPECT_EQ(steps[0].kind, VIOMMU_SIM_UNMAP);
        EXPECT_EQ(steps[0].arg, 8u);
    }
    ASSERT_TRUE(p.set("napi-budget", "5", &err)) << err;
    EXPECT_FALSE(p.validate(&err));
    EXPECT_NE(err.find("--napi-budget 5"), std::string::npos) << err;
}

TEST(Workload, ASmallForwardedFrameLeavesItsRxBufferMapped)
{
    Params p;
    std::string err;
    ASSERT_TRUE(set_all(p, kOneForwardingCpu, err) &&
                set_all(p, {{"tx-bytes", "64:50,1514:50"}, {"rx-copy-bytes", "256"}}, err))
        << err;
    auto w = Workload::create(p, &err);
    ASSERT_NE(w, nullptr) << err;
    std::vector<Step> steps;
    unsigned small = 0, large = 0;
    for (unsigned op = 0; op < 200; op++) {
        steps.clear();
        w->next(0, steps);
        unsigned rx_maps = 0;
        uint64_t frame = 0;
        for (const Step &s : steps)
            if (s.kind == VIOMMU_SIM_MAP && s.device == 0)
                rx_maps++;
            else if (s.kind == VIOMMU_SIM_MAP)
                frame = s.value;
        ASSERT_NE(frame, 0u) << op;
        EXPECT_EQ(rx_maps, frame <= 256 ? 0u : 1u) << op;
        (frame <= 256 ? small : large)++;
    }
    EXPECT_GT(small, 0u);
    EXPECT_GT(large, 0u);
    Params nic;
    ASSERT_TRUE(nic.set("workload", "nic", &err)) << err;
    ASSERT_TRUE(nic.set("rx-copy-bytes", "256", &err)) << err;
    EXPECT_FALSE(nic.validate(&err));
    EXPECT_NE(err.find("--rx-copy-bytes 256"), std::string::npos) << err;
}

TEST(Workload, MapBenchMapsAndUnmapsEachOperation)
{
    Params p;
    std::string err;
    ASSERT_TRUE(set_all(p,
                        {{"workload", "map-bench"},
                         {"cpus", "64"},
                         {"threads", "8"},
                         {"block-size", "4096"},
                         {"cpu-ns-per-op", "0"}},
                        err))
        << err;
    auto w = Workload::create(p, &err);
    ASSERT_NE(w, nullptr) << err;
    EXPECT_EQ(w->info().cpus, 8u);
    std::vector<Step> steps;
    w->next(5, steps);
    ASSERT_EQ(steps.size(), 3u);
    EXPECT_EQ(steps[0].kind, VIOMMU_SIM_MAP);
    EXPECT_EQ(steps[1].kind, VIOMMU_SIM_WORK);
    EXPECT_EQ(steps[2].kind, VIOMMU_SIM_UNMAP);
}

TEST(Workload, RejectsUnknownNamesAndTooManyCpus)
{
    EXPECT_EQ(Workload::create("bogus", 4, 1), nullptr);
    EXPECT_EQ(Workload::create("memcached", 257, 1), nullptr);
    EXPECT_NE(Workload::create("memcached", 256, 1), nullptr);
    // old preset names are not workloads any more: their setups are case files
    for (const char *old : {"forwarding", "nvme", "nic64k", "probe"})
        EXPECT_EQ(Workload::create(old, 4, 1), nullptr) << old;
}

TEST(WorkloadCApi, ReplaysTheSameStepsAsCpp)
{
    ASSERT_EQ(viommu_sim_workload_count(), Workload::names().size());
    EXPECT_EQ(viommu_sim_workload_name(viommu_sim_workload_count()), nullptr);
    ViommuSimParams *p = viommu_sim_params_new();
    ASSERT_NE(p, nullptr);
    char err[160];
    ASSERT_EQ(viommu_sim_params_load_case(p, "ovs-forward-64b", nullptr, err, sizeof err), 0)
        << err;
    ASSERT_EQ(viommu_sim_params_set(p, "cpus", "2", err, sizeof err), 0) << err;
    ASSERT_EQ(viommu_sim_params_set(p, "seed", "9", err, sizeof err), 0) << err;
    EXPECT_STREQ(viommu_sim_params_get(p, "cpu-ns-per-op"), "1600");
    EXPECT_STREQ(viommu_sim_params_get(p, "workload"), "forward");
    EXPECT_EQ(viommu_sim_params_get(p, "bogus"), nullptr);
    EXPECT_EQ(viommu_sim_params_set(p, "iodepth", "x", err, sizeof err), -1);
    EXPECT_NE(std::string(err).find("--iodepth x"), std::string::npos) << err;
    ViommuSimWorkload *w = viommu_sim_workload_from_params(p);
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(viommu_sim_workload_cpus(w), 2u);
    EXPECT_EQ(viommu_sim_workload_device_count(w), 2u);
    EXPECT_EQ(viommu_sim_workload_device_mask(w, 5), 0u);
    // two ports, two PCI functions, two domains
    EXPECT_EQ(viommu_sim_workload_device_domain(w, 0), 0u);
    EXPECT_EQ(viommu_sim_workload_device_domain(w, 1), 1u);
    EXPECT_EQ(viommu_sim_workload_device_domain(w, 5), 0u);
    Params cp;
    std::string e;
    ASSERT_TRUE(load_case("ovs-forward-64b", "", cp, &e)) << e;
    cp.cpus = 2;
    cp.seed = 9;
    auto cpp = Workload::create(cp);
    std::vector<Step> expect;
    std::vector<ViommuSimStep> all(1 << 16);
    for (unsigned cpu : {0u, 1u}) {
        expect.clear();
        cpp->setup(cpu, expect);
        int n = viommu_sim_workload_setup(w, cpu, all.data(), all.size());
        ASSERT_EQ(n, int(expect.size()));
        ASSERT_GT(n, 0);  // the RX rings are mapped at set-up
        ASSERT_LE(expect.size(), all.size());
        for (int k = 0; k < n; k++)
            EXPECT_TRUE(same(all[k], expect[k]));
    }
    EXPECT_EQ(viommu_sim_workload_setup(w, 2, all.data(), all.size()), -1);
    EXPECT_EQ(viommu_sim_workload_setup(w, 0, nullptr, 1), -1);
    ViommuSimStep buf[256];  // a NAPI poll's first operation also cleans its TX ring
    for (int i = 0; i < 100; i++) {
        expect.clear();
        cpp->next(1, expect);
        int n = viommu_sim_workload_next(w, 1, buf, 256);
        ASSERT_EQ(n, int(expect.size()));
        for (int k = 0; k < n; k++)
            EXPECT_TRUE(same(buf[k], expect[k]));
    }
    EXPECT_EQ(viommu_sim_workload_next(w, 2, buf, 8), -1);
    EXPECT_EQ(viommu_sim_workload_next(nullptr, 0, buf, 8), -1);
    EXPECT_EQ(viommu_sim_workload_new("bogus", 1, 1), nullptr);
    EXPECT_EQ(viommu_sim_workload_new(nullptr, 1, 1), nullptr);
    viommu_sim_workload_free(w);
    // the C API's parameters must stay consistent to make a workload
    ASSERT_EQ(viommu_sim_params_set(p, "iommu", "vtd", err, sizeof err), 0) << err;
    ASSERT_EQ(viommu_sim_params_set(p, "cmdq", "spinlock", err, sizeof err), 0) << err;
    EXPECT_EQ(viommu_sim_params_check(p, err, sizeof err), -1);
    EXPECT_NE(std::string(err).find("--cmdq"), std::string::npos) << err;
    EXPECT_EQ(viommu_sim_workload_from_params(p), nullptr);
    viommu_sim_params_free(p);
}

}  // namespace
