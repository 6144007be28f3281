// SPDX-License-Identifier: GPL-2.0-or-later
// The trace format (reader/writer, bad input), the replay workload and the
// method check: a trace recorded from a modelled workload, replayed, gives
// that workload's figures (docs/trace-format.rst).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

#include "params.hpp"
#include "sim_test_util.hpp"
#include "simulator.hpp"
#include "trace_format.hpp"
#include "trace_record.hpp"
#include "trace_workload.hpp"

using namespace viommu::sim;
using trace::Event;
using trace::Op;
using viommu::sim::test::cycle_ns;

namespace {

std::string write_temp(const std::string &name, const std::string &text)
{
    std::string path = ::testing::TempDir() + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

std::string parse_error(const std::string &text)
{
    std::string err;
    auto t = trace::parse(text, "t.vtrace", &err);
    EXPECT_FALSE(t) << "accepted:\n" << text;
    return err;
}

const char *good = "viommu-trace 1 source=test unit=transactions\n"
                   "# a comment\n"
                   "0 0 map size=4096 dev=0000:00:03.0 mask=0xffffffff iova=0xfffff000 pa=0x1000 "
                   "dur=100\n"
                   "1100 0 unmap size=4096 dev=0000:00:03.0 iova=0xfffff000 dur=50\n"
                   "1150 0 txn\n"
                   "\n"
                   "1200 1 flush dur=10\n"
                   "end 4\n";

}  // namespace

TEST(TraceFormat, ReadsWhatItWrites)
{
    std::string err;
    auto t = trace::parse(good, "good", &err);
    ASSERT_TRUE(t) << err;
    EXPECT_EQ(t->header.source, "test");
    EXPECT_EQ(t->header.unit, "transactions");
    ASSERT_EQ(t->events.size(), 4u);
    const Event &m = t->events[0];
    EXPECT_EQ(m.op, Op::map);
    EXPECT_EQ(m.size, 4096u);
    EXPECT_EQ(m.dev, "0000:00:03.0");
    EXPECT_EQ(m.mask, 0xffffffffu);
    EXPECT_EQ(m.iova, 0xfffff000u);
    EXPECT_EQ(m.pa, 0x1000u);
    EXPECT_EQ(m.dur, 100u);
    EXPECT_EQ(m.line, 3u);
    EXPECT_EQ(t->events[3].cpu, 1);
    EXPECT_EQ(t->events[3].op, Op::flush);

    std::ostringstream out;
    trace::Writer w(out, t->header);
    for (const Event &e : t->events)
        w.write(e);
    w.finish();
    auto again = trace::parse(out.str(), "again", &err);
    ASSERT_TRUE(again) << err << "\n" << out.str();
    ASSERT_EQ(again->events.size(), t->events.size());
    for (size_t i = 0; i < t->events.size(); i++)
        EXPECT_EQ(trace::format_event(again->events[i]), trace::format_event(t->events[i]));
}

TEST(TraceFormat, BadInputNamesTheFileAndTheLine)
{
    struct Case {
        std::string text, want;
    } cases[] = {
        {"", "t.vtrace:0: empty file"},
        {"hello\n", "t.vtrace:1: not a viommu-lab trace"},
        {"viommu-trace 2\nend 0\n", "t.vtrace:1: format version 2 is not supported"},
        {"viommu-trace x\n", "t.vtrace:1: header: needs a version"},
        {"viommu-trace 1 colour=blue\nend 0\n", "t.vtrace:1: unknown header key"},
        // truncated: in a line, at a line boundary
        {"viommu-trace 1\n0 0 map size=4096 iova=0x1000\n5 0 unm", "t.vtrace:3: truncated"},
        {"viommu-trace 1\n0 0 map size=4096 iova=0x1000\n", "t.vtrace:2: truncated: no end record"},
        {"viommu-trace 1\n0 0 map size=4096 iova=0x1000\nend 2\n",
         "t.vtrace:3: end record counts 2"},
        {"viommu-trace 1\nend 0\n0 0 txn\n", "t.vtrace:3: record after the end"},
        // corrupt records
        {"viommu-trace 1\n0 0 map iova=0x1000\nend 1\n", "t.vtrace:2: map without size="},
        {"viommu-trace 1\n0 0 unmap iova=0x1000\nend 1\n", "t.vtrace:2: unmap without size="},
        {"viommu-trace 1\n0 0 map size=0 iova=0x1000\nend 1\n", "t.vtrace:2: size='0'"},
        {"viommu-trace 1\n0 0 frob\nend 1\n", "t.vtrace:2: unknown operation 'frob'"},
        {"viommu-trace 1\n0 0 txn colour=1\nend 1\n", "t.vtrace:2: unknown key 'colour'"},
        {"viommu-trace 1\n0 0 map size=1 size=2\nend 1\n", "t.vtrace:2: key size given twice"},
        {"viommu-trace 1\n0 0 map size=4096 iova=1000\nend 1\n", "t.vtrace:2: iova='1000'"},
        // a DMA mask is DMA_BIT_MASK(n), n from 32 to 64
        {"viommu-trace 1\n0 0 map size=4096 mask=0x0 iova=0x1000\nend 1\n",
         "t.vtrace:2: mask='0x0': needs a DMA mask of 32 to 64 bits"},
        {"viommu-trace 1\n0 0 map size=4096 mask=0xffffff iova=0x1000\nend 1\n",
         "t.vtrace:2: mask='0xffffff': needs a DMA mask"},
        {"viommu-trace 1\n0 0 map size=4096 mask=0x1ffffeffff iova=0x1000\nend 1\n",
         "t.vtrace:2: mask='0x1ffffeffff': needs a DMA mask"},
        {"viommu-trace 1\nx 0 txn\nend 1\n", "t.vtrace:2: timestamp 'x'"},
        {"viommu-trace 1\n0 99999 txn\nend 1\n", "t.vtrace:2: CPU '99999'"},
        {"viommu-trace 1\n0 - txn\nend 1\n", "t.vtrace:2: CPU '-' (device side)"},
        {"viommu-trace 1\n0 0\nend 1\n", "t.vtrace:2: an event needs"},
        {"viommu-trace 1\n0 0 txn\0x\nend 1\n", "t.vtrace:2: NUL byte"},
        {"viommu-trace 1 side=device\n0 - map size=1\nend 1\n", "t.vtrace:2: map in a device-side"},
        {"viommu-trace 1\n0 0 xlate\nend 1\n", "t.vtrace:2: xlate in a trace of side=cpu"},
        {"viommu-trace 1\n18446744073709551615 0 txn dur=1\nend 1\n",
         "t.vtrace:2: timestamp 18446744073709551615 + dur: ends after 4398046511104 ns"},
        {"viommu-trace 1\n4398046511105 0 txn\nend 1\n",
         "t.vtrace:2: timestamp 4398046511105: ends after 4398046511104 ns"},
        {"viommu-trace 1\n4398046511100 0 txn dur=5\nend 1\n", "t.vtrace:2: timestamp"},
        // the replay's warm-up, bounded as --warmup is
        {"viommu-trace 1 window=16777217\nend 0\n",
         "t.vtrace:1: header window='16777217': needs a whole number from 0 to 16777216"},
        {"viommu-trace 1 window=4294967296\nend 0\n", "t.vtrace:1: header window="},
        // out of order within one CPU (other CPUs may interleave)
        {"viommu-trace 1\n10 0 txn\n5 1 txn\n9 0 txn\nend 3\n",
         "t.vtrace:4: out of order: timestamp 9 before the previous event of CPU 0 at 10"},
    };
    for (const Case &c : cases) {
        std::string text = c.text;
        if (c.want.find("NUL") != std::string::npos)
            text = std::string("viommu-trace 1\n0 0 txn\0x\nend 1\n", 31);
        std::string err = parse_error(text);
        EXPECT_EQ(err.rfind(c.want, 0), 0u) << "got: " << err << "\nwant: " << c.want;
    }
    std::string err;
    EXPECT_FALSE(trace::read_file(::testing::TempDir() + "/no-such.vtrace", &err));
    EXPECT_NE(err.find("no-such.vtrace: cannot open"), std::string::npos) << err;
    std::string long_line = "viommu-trace 1\n0 0 txn " + std::string(5000, 'x') + "\nend 1\n";
    EXPECT_EQ(parse_error(long_line).rfind("t.vtrace:2: line longer", 0), 0u);
    // a file that is not a trace is refused on its first line, not read whole
    EXPECT_FALSE(trace::read_file("/dev/zero", &err));
    EXPECT_EQ(err, "/dev/zero:1: line longer than 4096 bytes");
}

namespace {

Params trace_params(const std::string &path, unsigned cpus)
{
    Params p;
    std::string err;
    EXPECT_TRUE(p.set("workload", "trace", &err)) << err;
    EXPECT_TRUE(p.set("trace", path, &err)) << err;
    EXPECT_TRUE(p.set("cpus", std::to_string(cpus), &err)) << err;
    return p;
}

// The trace at `path` replayed on 2 CPUs through linux-5.13's allocator.
std::optional<SimResult> replay_on_two_cpus(const std::string &path, std::string *err)
{
    Params p = trace_params(path, 2);
    if (!p.set("allocator", "linux-5.13", err))
        return std::nullopt;
    return simulate(p, CostModel::standard(), err);
}

std::string replay_error(const std::string &text)
{
    std::string path = write_temp("bad.vtrace", text);
    std::string err;
    EXPECT_FALSE(create_trace_workload(trace_params(path, 1), &err)) << text;
    return err;
}

std::string steps_text(Workload &w, unsigned cpu, unsigned txns)
{
    std::string s;
    for (unsigned i = 0; i < txns; i++) {
        std::vector<Step> out;
        w.next(cpu, out);
        for (const Step &st : out) {
            static const char *k[] = {"W", "M", "U", "MP", "UMB", "UP"};
            s += std::string(k[st.kind]) + ":" + std::to_string(st.arg) + ":" +
                 std::to_string(st.value) + " ";
        }
        s += "| ";
    }
    return s;
}

}  // namespace

TEST(TraceReplay, RefusesWhatItCannotReplayAndSaysWhere)
{
    EXPECT_NE(replay_error("viommu-trace 1\n0 0 map size=4096\nend 1\n")
                  .find("bad.vtrace:2: map without iova="),
              std::string::npos);
    EXPECT_NE(replay_error("viommu-trace 1\n0 0 map size=8192 iova=0x1000\n"
                           "5 1 map size=4096 iova=0x2000\nend 2\n")
                  .find("bad.vtrace:3: map overlaps a live mapping (line 2"),
              std::string::npos);
    EXPECT_NE(replay_error("viommu-trace 1\n0 0 map size=8192 iova=0x1000\n"
                           "5 1 unmap size=4096 iova=0x2000\nend 2\n")
                  .find("bad.vtrace:3: unmap cuts a mapping (line 2)"),
              std::string::npos);
    EXPECT_NE(replay_error("viommu-trace 1 side=device\n0 - inv g=global\nend 1\n")
                  .find("bad.vtrace: a device-side trace"),
              std::string::npos);
    EXPECT_NE(replay_error("viommu-trace 1\n0 0 txn\nend 1\n").find("no map or unmap records"),
              std::string::npos);
    EXPECT_NE(replay_error("viommu-trace 1\n0 0 unmap size=4096 iova=0x1000\nend 1\n")
                  .find("bad.vtrace: no map records"),
              std::string::npos);
    std::string err;
    Params d = trace_params(write_temp("still.vtrace", "viommu-trace 1\n0 0 map size=4096 "
                                                       "iova=0x1000\n0 0 txn\nend 2\n"),
                            1);
    ASSERT_TRUE(d.set("duration", "1ms", &err));
    EXPECT_FALSE(create_trace_workload(d, &err));
    EXPECT_NE(err.find("still.vtrace: no time passes"), std::string::npos) << err;
    // a transaction of 2^41 ns run 2^24 times would wrap the virtual clock
    Params w = trace_params(write_temp("long.vtrace", "viommu-trace 1 window=16777216\n"
                                                      "0 0 map size=4096 iova=0x1000\n"
                                                      "2199023255552 0 unmap size=4096 "
                                                      "iova=0x1000\nend 2\n"),
                            1);
    EXPECT_FALSE(create_trace_workload(w, &err));
    EXPECT_NE(err.find("long.vtrace: a transaction of 2199023255552 ns"), std::string::npos) << err;
    ASSERT_TRUE(w.set("warmup", "0", &err));
    EXPECT_TRUE(create_trace_workload(w, &err)) << err;
    Params p;
    ASSERT_TRUE(p.set("workload", "trace", &err));
    EXPECT_FALSE(p.validate(&err));
    EXPECT_EQ(err, "--workload trace: needs --trace FILE");
    Params q;
    ASSERT_TRUE(q.set("trace", "x.vtrace", &err));
    EXPECT_FALSE(q.validate(&err));
    EXPECT_EQ(err, "--trace x.vtrace: needs --workload trace");
}

// The work between operations is the recording's time outside them: the
// durations of maps, unmaps and flushes are taken out.
TEST(TraceReplay, WorkIsTheTimeOutsideTheIommu)
{
    std::string path = write_temp("work.vtrace", "viommu-trace 1 unit=transactions\n"
                                                 "0 0 map size=4096 iova=0x1000 dur=100\n"
                                                 "1100 0 unmap size=4096 iova=0x1000 dur=50\n"
                                                 "1200 0 flush dur=300\n"
                                                 "1600 0 txn\n"
                                                 "2000 0 map size=8192 iova=0x4000 dur=100\n"
                                                 "2100 0 txn\n"
                                                 "end 6\n");
    std::string err;
    auto w = create_trace_workload(trace_params(path, 1), &err);
    ASSERT_TRUE(w) << err;
    EXPECT_EQ(w->info().unit, "transactions");
    EXPECT_EQ(w->info().slots_per_cpu, 1u);
    // 1000 ns of work before the unmap, 50 after it, 100 after the flush,
    // 400 before the second map; the first transaction runs once, the rest
    // over and over, and a slot still mapped where the stream starts over
    // is completed before it is mapped again
    EXPECT_EQ(steps_text(*w, 0, 3), "M:0:4096 W:0:1000 U:0:0 W:0:50 W:0:100 | "
                                    "W:0:400 M:0:8192 | W:0:400 U:0:0 M:0:8192 | ");
}

// A mapping completed by another CPU is posted to it; with fewer CPUs
// than recorded, or in a partial replica, the mapping CPU unmaps it itself
// at the recorded time.
TEST(TraceReplay, CpusScaleByReplicasKeepingEachStreamsOrder)
{
    std::string path = write_temp("two.vtrace", "viommu-trace 1 unit=packets\n"
                                                "0 0 map size=2048 iova=0x1000 dur=10\n"
                                                "100 0 txn\n"
                                                "150 1 unmap size=2048 iova=0x1000 dur=10\n"
                                                "300 0 map size=2048 iova=0x2000 dur=10\n"
                                                "400 0 txn\n"
                                                "450 1 unmap size=2048 iova=0x2000 dur=10\n"
                                                "460 1 txn\n"
                                                "end 7\n");
    std::string err;
    auto two = create_trace_workload(trace_params(path, 2), &err);
    ASSERT_TRUE(two) << err;
    EXPECT_EQ(steps_text(*two, 0, 2), "MP:1:2048 W:0:90 | W:0:200 MP:1:2048 W:0:90 | ");
    EXPECT_EQ(steps_text(*two, 1, 1), "UMB:0:1 W:0:290 UMB:0:1 | ");
    auto one = create_trace_workload(trace_params(path, 1), &err);
    ASSERT_TRUE(one) << err;
    EXPECT_EQ(steps_text(*one, 0, 2), "M:0:2048 W:0:90 | U:0:0 W:0:200 M:0:2048 W:0:90 U:0:0 | ");
    // 5 CPUs: replicas 0 and 1 whole (CPUs 0-3), CPU 4 replays stream 0 alone
    auto five = create_trace_workload(trace_params(path, 5), &err);
    ASSERT_TRUE(five) << err;
    EXPECT_EQ(steps_text(*five, 2, 1), "MP:3:2048 W:0:90 | ");  // replica 1 posts to CPU 3
    // CPU 4 (replica 2, stream 0 alone) unmaps its own mappings at the
    // recorded times of their unmaps
    EXPECT_EQ(steps_text(*five, 4, 2), "M:0:2048 W:0:90 | U:0:0 W:0:200 M:0:2048 W:0:90 U:0:0 | ");
}

namespace {

struct Figures {
    double throughput, relative, spin_share;
};

Figures run(Params p)
{
    std::string err;
    auto r = simulate(p, CostModel::standard(), &err);
    EXPECT_TRUE(r) << err;
    if (!r)
        return {};
    return {r->throughput, r->relative, r->spin_share};
}

}  // namespace

// The method check (issue 18, item 5): the trace of the memcached case
// replayed on the same and on other CPU counts gives what the modelled
// workload gives there, within a few percent.
TEST(TraceReplay, RecordedMemcachedReplaysToTheModelsFigures)
{
    Params model;
    std::string err;
    ASSERT_TRUE(load_case("memcached-16cpu-xl710", "magazines", model, &err)) << err;
    TraceRecorder rec;
    auto recorded = simulate(model, CostModel::standard(), &err, &rec);
    ASSERT_TRUE(recorded) << err;
    std::string path = ::testing::TempDir() + "/memcached.vtrace";
    ASSERT_TRUE(rec.write(path, &err)) << err;
    EXPECT_EQ(rec.trace().header.window, 601u);  // the ring fill and 600 warm-up transactions

    for (unsigned cpus : {16u, 4u, 64u}) {
        // A window of at least the 16-CPU one's transactions: in a shorter
        // one a 4.7 deferred-flush batch more or less (250 frees) moves
        // the figures by several percent.
        const std::string ops = std::to_string(std::max(400u, 16 * 400 / cpus));
        Params m = model;
        ASSERT_TRUE(m.set("cpus", std::to_string(cpus), &err));
        ASSERT_TRUE(m.set("ops-per-cpu", ops, &err));
        Figures want = run(m);
        Params p = trace_params(path, cpus);
        ASSERT_TRUE(p.set("ops-per-cpu", ops, &err));
        ASSERT_TRUE(p.set("allocator", model.allocator, &err));
        ASSERT_TRUE(p.set("flush", model.flush, &err));
        ASSERT_TRUE(p.set("sockets", std::to_string(model.sockets), &err));  // the machine's
        ASSERT_TRUE(p.set("llc", model.llc, &err));
        Figures got = run(p);
        SCOPED_TRACE("cpus " + std::to_string(cpus));
        // 64 CPUs convoy on iova_rbtree_lock (~40% of cycles), where which
        // CPU wrote each tree node last and which read it since, so the
        // line transfers of a walk, follow the replicas' order, not the
        // model's: ~7% apart
        const double tol = cpus > 16 ? 0.08 : 0.03;
        EXPECT_NEAR(got.throughput / want.throughput, 1.0, tol);
        EXPECT_NEAR(got.relative / want.relative, 1.0, tol);
        EXPECT_NEAR(got.spin_share, want.spin_share, tol);
    }
}

// A guest recording replayed at its own CPU count is not slower than the
// guest: each CPU replays its stream once, so the window takes the span less
// that CPU's recorded IOMMU time plus the model's.  The trace has what a
// guest's has: an idle lead-in on both CPUs, one CPU spending far longer in
// the IOMMU than the other, maps unmapped on the other CPU, and flush, sync
// and inv records.  (With one count of transactions shared by all CPUs, the
// CPU whose stream ended first started it over, lead-in and all.)
TEST(TraceReplay, ReplayAtTheRecordedCpusIsNotSlowerThanTheRecording)
{
    struct Line {
        uint64_t ts;
        int cpu;
        std::string rest;
    };
    std::vector<Line> lines;
    uint64_t dur[2] = {0, 0}, first[2] = {~uint64_t{0}, ~uint64_t{0}}, last[2] = {0, 0};
    auto add = [&](uint64_t ts, int cpu, std::string rest, uint64_t d) {
        if (d)
            rest += " dur=" + std::to_string(d);
        dur[cpu] += d;
        first[cpu] = std::min(first[cpu], ts);
        last[cpu] = std::max(last[cpu], ts + d);
        lines.push_back({ts, cpu, std::move(rest)});
    };
    auto iova = [](uint64_t a) {
        std::ostringstream o;
        o << " size=4096 dev=d iova=0x" << std::hex << a;
        return o.str();
    };
    // set-up: a map on CPU 0 unmapped on CPU 1 and the other way round
    add(0, 0, "map" + iova(0x1000), 1000);
    add(500, 1, "unmap" + iova(0x1000), 100);
    add(700, 1, "flush", 200);
    add(950, 1, "sync", 50);
    add(1000, 1, "inv g=domain", 0);
    add(2000, 1, "map" + iova(0x2000), 100);
    add(3000, 0, "unmap" + iova(0x2000), 100);
    // idle until 500 us, then 20 rounds of 25 us
    const unsigned rounds = 20;
    for (unsigned i = 0; i < rounds; i++) {
        uint64_t t = 500000 + i * 25000, a = 0x10000 + i * 0x1000, b = 0x100000 + i * 0x1000;
        add(t, 0, "map" + iova(a), 5000);
        add(t + 10000, 1, "unmap" + iova(a), 100);
        add(t + 12000, 1, "map" + iova(b), 100);
        if (i % 5 == 4) {
            add(t + 15000, 1, "flush", 1000);
            add(t + 16000, 1, "sync", 500);
            add(t + 16500, 1, "inv g=domain", 0);
        }
        add(t + 20000, 0, "unmap" + iova(b), 2000);
    }
    std::stable_sort(lines.begin(), lines.end(),
                     [](const Line &x, const Line &y) { return x.ts < y.ts; });
    std::string text = "viommu-trace 1 source=test side=cpu\n";
    for (const Line &l : lines)
        text += std::to_string(l.ts) + " " + std::to_string(l.cpu) + " " + l.rest + "\n";
    text += "end " + std::to_string(lines.size()) + "\n";
    const double span = double(std::max(last[0], last[1]));  // the first record is at 0
    const uint64_t maps = 2 + 2 * rounds;
    ASSERT_GT(dur[0], dur[1] + 50000);  // CPU 0's stream has less time outside the IOMMU
    std::string path = write_temp("guest.vtrace", text);

    std::string err;
    auto r = replay_on_two_cpus(path, &err);
    ASSERT_TRUE(r) << err;
    EXPECT_EQ(r->maps, maps);
    EXPECT_EQ(r->transactions, maps);
    // every CPU replays its recorded time outside the IOMMU once, from its
    // first record to its last one's end
    const Nanos work = cycle_ns(*r, "work");
    double recorded_outside = 0;
    for (int c : {0, 1})
        recorded_outside += double(last[c] - first[c] - dur[c]);
    EXPECT_EQ(double(work), recorded_outside);
    // the window lasts until the last CPU's pass ends: at least the longest
    // per-CPU time outside the IOMMU, at most that plus all the model's costs
    const double longest =
        double(std::max(last[0] - first[0] - dur[0], last[1] - first[1] - dur[1]));
    const double model = double(r->cpu_time_ns) - double(work) - double(cycle_ns(*r, "idle"));
    EXPECT_GE(r->elapsed_ns, longest);
    EXPECT_LE(r->elapsed_ns, longest + model);
    EXPECT_EQ(r->cpu_time_ns, Nanos(2 * r->elapsed_ns));
    EXPECT_LT(model, 0.05 * span);  // the model's costs are small beside the recorded gaps
    // so the replay maps at least as fast as the guest did
    EXPECT_GE(double(maps) / (r->elapsed_ns / 1e9), double(maps) / (span / 1e9));
    EXPECT_DOUBLE_EQ(r->throughput, double(maps) * 1e9 / r->elapsed_ns);
}

// A CPU that starts late in the recording (a guest CPU that took its first
// connection a second after the other) has less time outside the IOMMU than
// the span.  The replay's window still lasts the longest CPU's time, so its
// rate never exceeds what the recording could reach without its IOMMU time.
TEST(TraceReplay, ACpuThatStartsLateDoesNotShortenTheWindow)
{
    std::string text = "viommu-trace 1 source=test side=cpu\n";
    unsigned records = 0;
    uint64_t outside[2] = {0, 0}, maps = 0;
    for (uint64_t t = 0; t < 1000000; t += 10000) {
        for (int cpu : {0, 1}) {
            if (cpu == 1 && t < 600000)
                continue;  // CPU 1's first record is at 600 us
            std::ostringstream o;
            uint64_t a = 0x100000 * (cpu + 1) + t / 10000 * 0x1000;
            o << t + cpu << " " << cpu << " map size=4096 dev=d iova=0x" << std::hex << a
              << std::dec << " dur=1000\n"
              << t + cpu + 5000 << " " << cpu << " unmap size=4096 dev=d iova=0x" << std::hex << a
              << std::dec << " dur=500\n";
            text += o.str();
            records += 2;
            maps++;
        }
    }
    // sorted by time (CPU 1's records are 1 ns after CPU 0's)
    std::istringstream in(text);
    std::vector<std::pair<uint64_t, std::string>> lines;
    std::string header, line;
    std::getline(in, header);
    while (std::getline(in, line))
        lines.emplace_back(std::stoull(line), line);
    std::stable_sort(lines.begin(), lines.end());
    text = header + "\n";
    for (auto &[ts, l] : lines)
        text += l + "\n";
    text += "end " + std::to_string(records) + "\n";
    // per CPU: first record to last record's end, less 1.5 us per map
    outside[0] = (990000 + 5000 + 500) - 100 * 1500;
    outside[1] = (990001 + 5000 + 500) - (600000 + 1) - 40 * 1500;
    const double span = 990001 + 5000 + 500;
    std::string path = write_temp("late.vtrace", text);

    std::string err;
    auto r = replay_on_two_cpus(path, &err);
    ASSERT_TRUE(r) << err;
    EXPECT_EQ(r->maps, maps);
    EXPECT_EQ(cycle_ns(*r, "work"), Nanos(outside[0] + outside[1]));
    const double model =
        double(r->cpu_time_ns) - double(outside[0] + outside[1]) - double(cycle_ns(*r, "idle"));
    // the window is CPU 0's pass: its time outside the IOMMU plus the model's
    EXPECT_GE(r->elapsed_ns, double(outside[0]));
    EXPECT_LE(r->elapsed_ns, double(outside[0]) + model);
    // CPU 1 waits for it; the mean of the two clocks would be ~255 us shorter
    EXPECT_GE(double(cycle_ns(*r, "idle")), double(outside[0] - outside[1]) - model);
    const double bound = double(maps) * 1e9 / double(outside[0]);
    EXPECT_LE(r->throughput, bound);
    EXPECT_GE(r->throughput, double(maps) * 1e9 / span);
    // the no-IOMMU replay has the same window
    EXPECT_LE(r->baseline_throughput, bound);
}
