// SPDX-License-Identifier: GPL-2.0-or-later
// Workload generators: well-formed step streams, per-CPU determinism, C API.
#include <cstddef>
#include <gtest/gtest.h>

#include <cstring>

#include <viommu/sim.h>

#include "workload.hpp"

using namespace viommu::sim;

namespace {

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

class EveryWorkload : public ::testing::TestWithParam<std::string_view> {};

TEST_P(EveryWorkload, StepsAreWellFormedAndMapsAreBalanced)
{
    auto w = Workload::create(GetParam(), 0, 7);
    ASSERT_NE(w, nullptr);
    const WorkloadInfo &info = w->info();
    EXPECT_EQ(info.cpus, info.default_cpus);
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
    // per-transaction work varies around the calibrated mean
    double mean = double(r.work_ns) / (double(rounds) * info.cpus);
    EXPECT_NEAR(mean, double(info.work_ns), 0.03 * double(info.work_ns));
    // in steady state what is mapped is bounded by the rings (+ mailboxes)
    uint64_t outstanding = r.maps - r.unmaps;
    EXPECT_LE(outstanding, uint64_t{info.slots_per_cpu} * info.cpus + 4 * info.cpus);
    EXPECT_GT(r.maps, setup_maps);
}

INSTANTIATE_TEST_SUITE_P(Sim, EveryWorkload, ::testing::ValuesIn(Workload::names()),
                         [](const auto &p) { return std::string(p.param); });

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

TEST(Workload, Nic64kRingsOverflowTheThirtyTwoBitSpaceAtInterfaceUp)
{
    auto w = Workload::create("nic64k", 0, 1);
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
    for (std::string_view name : Workload::names()) {
        auto w = Workload::create(name, 0, 1);
        ASSERT_NE(w, nullptr);
        if (name == "probe") {
            EXPECT_EQ(w->info().warmup_per_cpu, 0u);
            continue;
        }
        EXPECT_GT(w->info().largest_ring, 0u) << name;
        EXPECT_GE(w->info().warmup_per_cpu, w->info().largest_ring) << name;
    }
}

TEST(Workload, RejectsUnknownNamesAndTooManyCpus)
{
    EXPECT_EQ(Workload::create("bogus", 4, 1), nullptr);
    EXPECT_EQ(Workload::create("memcached", 257, 1), nullptr);
    EXPECT_NE(Workload::create("memcached", 256, 1), nullptr);
}

TEST(WorkloadCApi, ReplaysTheSameStepsAsCpp)
{
    ASSERT_EQ(viommu_sim_workload_count(), Workload::names().size());
    EXPECT_EQ(viommu_sim_workload_name(viommu_sim_workload_count()), nullptr);
    ViommuSimWorkload *w = viommu_sim_workload_new("forwarding", 2, 9);
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(viommu_sim_workload_cpus(w), 2u);
    EXPECT_EQ(viommu_sim_workload_device_count(w), 2u);
    EXPECT_EQ(viommu_sim_workload_device_mask(w, 5), 0u);
    // two ports, two PCI functions, two domains
    EXPECT_EQ(viommu_sim_workload_device_domain(w, 0), 0u);
    EXPECT_EQ(viommu_sim_workload_device_domain(w, 1), 1u);
    EXPECT_EQ(viommu_sim_workload_device_domain(w, 5), 0u);
    auto cpp = Workload::create("forwarding", 2, 9);
    std::vector<Step> expect;
    ViommuSimStep buf[8];
    for (int i = 0; i < 100; i++) {
        expect.clear();
        cpp->next(1, expect);
        int n = viommu_sim_workload_next(w, 1, buf, 8);
        ASSERT_EQ(n, int(expect.size()));
        for (int k = 0; k < n; k++)
            EXPECT_TRUE(same(buf[k], expect[k]));
    }
    EXPECT_EQ(viommu_sim_workload_next(w, 2, buf, 8), -1);
    EXPECT_EQ(viommu_sim_workload_next(nullptr, 0, buf, 8), -1);
    EXPECT_EQ(viommu_sim_workload_new("bogus", 1, 1), nullptr);
    EXPECT_EQ(viommu_sim_workload_new(nullptr, 1, 1), nullptr);
    viommu_sim_workload_free(w);
}

}  // namespace
