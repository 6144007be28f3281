// SPDX-License-Identifier: GPL-2.0-or-later
// viommu-sim: run one contention simulation (or a sweep of CPU counts) of
// a setup given by a case file and/or command-line parameters, and print
// the result as text or JSON.  --help lists every parameter.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../iova/allocator.hpp"
#include "../iova/flush.hpp"
#include "calibrate.hpp"
#include "json.hpp"
#include "params.hpp"
#include "realthreads.hpp"
#include "simulator.hpp"
#include "trace_record.hpp"
#include "workload.hpp"

using namespace viommu::sim;

namespace {

void usage(FILE *f)
{
    std::fprintf(
        f, "usage: viommu-sim [--case FILE|NAME [--config NAME]] [--PARAMETER VALUE]...\n"
           "                  [--json] [--real-threads] [--record FILE]\n"
           "                  [--cost-from CALIBRATION.json] [--cost FIELD=VALUE]...\n"
           "       viommu-sim --list | --list-configs --case FILE | --cost-model | "
           "--calibrate | --help\n"
           "\n"
           "A setup comes from a case file (cases/NAME.json: its \"parameters\", then those\n"
           "of configuration --config), then from the command line, which overrides the\n"
           "file.  --cpus 4,16,32 runs a sweep over CPU counts.  Output: throughput (and\n"
           "against the same setup without an IOMMU), latency per operation, where every\n"
           "CPU cycle went (spinning by lock and call site, polling, work, ...), allocator\n"
           "retries, command-queue owner share and polling time.  --json prints one object\n"
           "per run (an array for a sweep).  --record FILE writes the run's DMA trace;\n"
           "--workload trace --trace FILE replays one (docs/trace-format.rst).\n"
           "--cost FIELD=VALUE (a field of --cost-model, whole ns) and --cost-from FILE (the\n"
           "atomic_ns, lock_local_ns and line_transfer_ns of a --calibrate run) time a\n"
           "what-if run with other costs than the cited ones; the case files and the report\n"
           "never do.\n"
           "\n"
           "Parameters (--NAME VALUE or --NAME=VALUE; unit and default after each):\n");
    std::fputs(Params::help().c_str(), f);
}

void list()
{
    auto show = [](const char *what, auto names) {
        std::printf("%s:", what);
        for (std::string_view n : names)
            std::printf(" %.*s", int(n.size()), n.data());
        std::printf("\n");
    };
    show("workloads", Workload::names());
    std::printf("  (and \"trace\": replay --trace FILE)\n");
    show("allocators", viommu::iova::Allocator::variants());
    std::printf("  (and \"none\": no IOMMU)\n");
    show("flush policies", viommu::iova::FlushPolicy::policies());
    show("dma modes", dma_modes());
    std::printf("iommus: vtd smmuv3\ncmdq (smmuv3): spinlock cmpxchg fetch-add\n");
    // the cases (cases/published.json is the reports' figures, not a case)
    std::vector<std::string> cases;
    std::error_code ec;
    for (const auto &e : std::filesystem::directory_iterator(cases_dir(), ec))
        if (e.path().extension() == ".json" && e.path().stem() != "published")
            cases.push_back(e.path().stem().string());
    std::sort(cases.begin(), cases.end());
    std::printf("cases (--case NAME, in %s):", cases_dir().c_str());
    for (const std::string &c : cases)
        std::printf(" %s", c.c_str());
    std::printf("\n");
}

// A rate as text: whole numbers, or three significant digits below 100.
std::string rate(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, v >= 100 || v == 0 ? "%.0f" : "%.3g", v);
    return buf;
}

void print_text(const SimResult &r)
{
    const SimConfig &c = r.config;
    std::printf("%s on %u CPUs: allocator %s, flush %s, %s%s%s, dma %s, seed %llu\n",
                c.workload.c_str(), r.cpus, c.allocator.c_str(), c.flush.c_str(), c.iommu.c_str(),
                c.iommu == "smmuv3" ? " cmdq " : "", c.iommu == "smmuv3" ? c.cmdq.c_str() : "",
                c.dma.c_str(), (unsigned long long)c.seed);
    if (!r.cost_overrides.empty())
        std::printf("  what-if cost model: standard but %s\n", r.cost_overrides.c_str());
    if (r.window_cut)
        std::printf("  window cut short: a CPU started %llu operations before --duration ended\n",
                    (unsigned long long)kMaxOpsPerCpu);
    if (r.dropped)
        std::printf("  DROPPED %llu of %llu %s: a map failed (the IOVA space could not hold the "
                    "outstanding mappings); the throughput counts the others\n",
                    (unsigned long long)r.dropped, (unsigned long long)r.transactions,
                    r.unit.c_str());
    if (!r.untimed_baseline)
        std::printf("  throughput %s %s/s; without IOMMU %s: %.1f%%\n", rate(r.throughput).c_str(),
                    r.unit.c_str(), rate(r.baseline_throughput).c_str(), 100 * r.relative);
    else if (c.allocator != "none")
        std::printf("  throughput %s %s/s; without IOMMU n/a (an operation takes no time)\n",
                    rate(r.throughput).c_str(), r.unit.c_str());
    else
        std::printf("  throughput n/a (an operation takes no time)\n");
    if (c.workload == "map-bench" && (c.allocator != "none" || !r.untimed_baseline))
        std::printf("  per thread: %.0f map+unmap/s\n", r.throughput / r.cpus);
    if (r.dropped && r.dropped == r.transactions)
        std::printf("  latency per operation n/a (every one dropped; without IOMMU %.0f ns)\n",
                    r.baseline_latency_ns);
    else
        std::printf("  latency per operation %.0f ns (without IOMMU %.0f ns)\n", r.latency_ns,
                    r.baseline_latency_ns);
    if (c.allocator == "none")
        return;
    std::printf("  allocator: %llu maps, %.2f%% took a retry or restart path; rbtree allocs %llu "
                "(%.1f nodes each), rcache flushes %llu, failed maps %llu\n",
                (unsigned long long)r.maps, 100 * r.allocator_retries,
                (unsigned long long)r.rbtree_allocs, r.nodes_per_alloc,
                (unsigned long long)r.rcache_flushes, (unsigned long long)r.failed_maps);
    if (c.iommu == "smmuv3" && r.inv.submissions)
        std::printf("  cmdq: %llu submissions, owner share %.3f, polling %.0f ns (owner) %.0f ns "
                    "(non-owner), in issue %.0f ns (owner) %.0f ns (non-owner)\n",
                    (unsigned long long)r.inv.submissions, r.inv.owner_share(),
                    r.inv.mean_poll_ns(true), r.inv.mean_poll_ns(false), r.inv.mean_issue_ns(true),
                    r.inv.mean_issue_ns(false));
    else if (r.inv.submissions)
        std::printf("  invalidation queue: %llu submissions, polling %.0f ns each\n",
                    (unsigned long long)r.inv.submissions, r.inv.mean_poll_ns(true));
    std::printf("  cycles (%.2f%% spinning):\n", 100 * r.spin_share);
    for (const CycleShare &s : r.cycles) {
        if (!r.cpu_time_ns || (s.ns == 0 && s.what == "spin"))
            continue;
        std::string what = s.what == "spin" ? "spin " + s.lock + " @" + s.site : s.what;
        std::printf("    %7.2f%%  %s\n", 100.0 * double(s.ns) / double(r.cpu_time_ns),
                    what.c_str());
    }
    int lock_w = 28, site_w = 14;  // wide enough for every name shown
    for (const auto &p : r.profile)
        if (p.spin_ns) {
            lock_w = std::max(lock_w, int(p.lock.size()));
            site_w = std::max(site_w, int(p.site.size()));
        }
    std::printf("  %-*s %-*s %8s %10s %10s\n", lock_w, "lock", site_w, "site", "%spin", "acquired",
                "hold ns");
    for (const auto &p : r.profile) {
        if (p.spin_ns == 0)
            continue;
        std::printf("  %-*s %-*s %7.2f%% %10llu %10.0f\n", lock_w, p.lock.c_str(), site_w,
                    p.site.c_str(), 100 * r.spin_fraction_of(p.lock, p.site),
                    (unsigned long long)p.acquisitions,
                    p.acquisitions ? double(p.hold_ns) / p.acquisitions : 0);
    }
}

bool parse_cpus(const std::string &s, std::vector<std::string> &out)
{
    size_t start = 0;
    while (start <= s.size()) {
        size_t comma = s.find(',', start);
        std::string one =
            s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (one.empty())
            return false;
        out.push_back(one);
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return true;
}

int die(const std::string &msg)
{
    std::fprintf(stderr, "viommu-sim: %s\n", msg.c_str());
    return 2;
}

// --cost FIELD=VALUE
bool set_cost(CostModel &c, const std::string &arg, std::string &err)
{
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (eq == std::string::npos || value.empty() || ec != std::errc{} ||
        end != value.data() + value.size()) {
        err = "--cost " + arg +
              ": needs FIELD=VALUE, VALUE a whole number (--cost-model lists the fields)";
        return false;
    }
    if (!c.set(name, v, &err)) {
        err = "--cost " + err;
        return false;
    }
    return true;
}

// --cost-from FILE: the figures of a --calibrate run that are cost-model
// fields, rounded to whole ns (at least 1)
bool cost_from(CostModel &c, const std::string &path, std::string &err)
{
    std::string why;
    const std::optional<std::string> text = read_text_file(path, why, kMaxSmallFileBytes);
    if (!text) {
        err = "--cost-from " + path + ": cannot read it: " + why;
        return false;
    }
    auto doc = json::parse(*text, &err);
    const json::Value *prov = doc ? doc->find("provenance") : nullptr;
    const json::Value *cmd = prov ? prov->find("command") : nullptr;
    if (!doc || !cmd || !cmd->is(json::Value::Type::string) ||
        cmd->str() != "viommu-sim --calibrate") {
        err = "--cost-from " + path + ": " +
              (doc ? std::string("not the output of viommu-sim --calibrate (no "
                                 "provenance.command naming it)")
                   : err);
        return false;
    }
    for (auto [key, field] : {std::pair{"atomic_ns", "atomic"},
                              {"lock_local_ns", "lock_local"},
                              {"line_transfer_ns", "line_transfer"}}) {
        const json::Value *v = doc->find(key);
        const bool optional = std::string_view(key) == "line_transfer_ns";
        if (!v || (optional && v->is(json::Value::Type::null))) {
            if (optional)
                continue;  // one CPU: no transfer measured
            err = "--cost-from " + path + ": no " + key +
                  " (a --calibrate file has atomic_ns and lock_local_ns)";
            return false;
        }
        if (!v->is(json::Value::Type::number) || !(v->number() >= 0) || v->number() > 1e9) {
            err = "--cost-from " + path + ": " + key + " is not a time in ns";
            return false;
        }
        if (!c.set(field, std::max<uint64_t>(1, uint64_t(v->number() + 0.5)), &err)) {
            err = "--cost-from " + path + ": " + key + " " + v->text() + " -> " + err;
            return false;
        }
    }
    return true;
}

int run(int argc, char **argv)
{
    std::string case_file, config;
    std::vector<std::pair<std::string, std::string>> flags;
    std::vector<std::string> cpus;
    bool json = false, real = false, list_configs = false;
    std::string mode;  // --calibrate, --cost-model or --list: run once the line is checked
    std::string record, err;
    CostModel cost = CostModel::standard();
    std::vector<std::string> cost_args;
    std::string cost_file;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--cost" || a == "--cost-from" || a.rfind("--cost=", 0) == 0 ||
            a.rfind("--cost-from=", 0) == 0) {
            const size_t eq = a.find('=');
            if (eq == std::string::npos && i + 1 >= argc)
                return die(a + ": needs a value");
            const std::string value = eq == std::string::npos ? argv[++i] : a.substr(eq + 1);
            if (a.rfind("--cost-from", 0) != 0)
                cost_args.push_back(value);
            else if (value.empty())
                return die("--cost-from: needs a file name");
            else
                cost_file = value;
            continue;
        }
        if (a == "--record" || a.rfind("--record=", 0) == 0) {
            if (a == "--record" && i + 1 >= argc)
                return die("--record: needs a file name");
            record = a == "--record" ? argv[++i] : a.substr(9);
            if (record.empty())
                return die("--record: needs a file name");
            continue;
        }
        if (a == "--json") {
            json = true;
            continue;
        }
        if (a == "--real-threads") {
            real = true;
            continue;
        }
        if (a == "--list-configs") {
            list_configs = true;
            continue;
        }
        if (a == "--calibrate" || a == "--cost-model" || a == "--list") {
            if (!mode.empty() && mode != a)
                return die(mode + ", " + a + ": one at a time");
            mode = a;
            continue;
        }
        if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        }
        for (const char *flag : {"--json", "--real-threads", "--list-configs", "--calibrate",
                                 "--cost-model", "--list", "--help"})
            if (a.rfind(std::string(flag) + "=", 0) == 0)
                return die(std::string(flag) + ": takes no value");
        if (a.rfind("--", 0) != 0)
            return die("'" + a + "': not an option (--help lists them)");
        std::string name = a.substr(2), value;
        if (size_t eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
        } else {
            if (name != "case" && name != "config" && !Params::known(name))
                return die("--" + name + ": unknown parameter (--help lists them)");
            // no value starts with "--": that is the next option, the value missing
            if (i + 1 >= argc || std::string_view(argv[i + 1]).rfind("--", 0) == 0)
                return die(
                    "--" + name + ": needs a value" +
                    (i + 1 < argc ? " (got the option " + std::string(argv[i + 1]) + ")" : ""));
            value = argv[++i];
        }
        if ((name == "case" || name == "config") && value.empty())
            return die("--" + name + ": needs a " +
                       (name == "case" ? "case name or file" : "configuration name"));
        if (name == "case")
            case_file = value;
        else if (name == "config")
            config = value;
        else if (!Params::known(name))
            return die("--" + name + ": unknown parameter (--help lists them)");
        else if (name == "cpus") {
            cpus.clear();
            if (!parse_cpus(value, cpus))
                return die("--cpus " + value + ": needs N or a list N,N,...");
        } else
            flags.emplace_back(name, value);
    }
    if (!config.empty() && case_file.empty())
        return die("--config " + config + ": needs --case");
    // --calibrate and --list take nothing else; --cost-model prints the
    // model with any --cost and --cost-from applied
    if (mode == "--calibrate" || mode == "--list") {
        if (!case_file.empty() || !flags.empty() || !cpus.empty() || json || real || list_configs ||
            !record.empty() || !cost_args.empty() || !cost_file.empty())
            return die(mode + ": takes no other option");
        if (mode == "--list")
            list();
        else  // real threads, wall clock: the machine at hand (docs/cost-model.rst)
            std::printf("%s\n", calibrate().json().c_str());
        return 0;
    }
    if (mode == "--cost-model" && (!case_file.empty() || !flags.empty() || !cpus.empty() || json ||
                                   real || list_configs || !record.empty()))
        return die("--cost-model: takes only --cost and --cost-from");

    // the calibration first, then each --cost in order
    if (!cost_file.empty() && !cost_from(cost, cost_file, err))
        return die(err);
    for (const std::string &c : cost_args)
        if (!set_cost(cost, c, err))
            return die(err);
    if (mode == "--cost-model") {
        std::printf("%s\n", cost.json().c_str());
        return 0;
    }
    const bool what_if = cost.json() != CostModel::standard().json();
    if (what_if && real)
        return die(
            "--cost, --cost-from: time simulated runs (--real-threads measures this machine)");

    Params base;
    std::set<std::string> case_keys;  // the parameters the case file set
    if (!case_file.empty()) {
        std::vector<std::string> names;
        if (!load_case(case_file, list_configs ? "" : config, base, &err, &names, &case_keys))
            return die(err);
        if (list_configs) {
            for (const std::string &n : names)
                std::printf("%s\n", n.c_str());
            return 0;
        }
    } else if (list_configs) {
        return die("--list-configs: needs --case");
    }
    for (const auto &[name, value] : flags)
        if (!base.set(name, value, &err))
            return die(err);
    if (cpus.empty())
        cpus.emplace_back();  // the case's or the default count (real threads: the cores)

    // every run of the sweep checked before any runs
    std::vector<Params> runs;
    for (const std::string &n : cpus) {
        Params p = base;
        // a check that fails on a value the case file set says so
        auto from_case = [&](std::string e) {
            const std::string name = e.rfind("--", 0) == 0 ? e.substr(2, e.find(' ') - 2) : "";
            const bool typed = name == "cpus"
                                   ? !cpus[0].empty()
                                   : std::any_of(flags.begin(), flags.end(),
                                                 [&](auto &f) { return f.first == name; });
            if (case_keys.count(name) && !typed)
                e += " (--" + name + " from " + case_path(case_file) + ")";
            return die(e);
        };
        if ((!n.empty() && !p.set("cpus", n, &err)) || !p.validate(&err))
            return from_case(err);
        if (p.allocator != "none" &&
            !Workload::create(p, &err))  // the workload's own consistency checks
            return from_case(err);
        runs.push_back(std::move(p));
    }

    // without an IOMMU the IOMMU's parameters change nothing: one typed on
    // the command line is a mistake (a case's configuration may inherit them)
    if (runs[0].allocator == "none") {
        const bool typed =
            std::any_of(flags.begin(), flags.end(), [](auto &f) { return f.first == "allocator"; });
        for (const auto &[name, value] : flags)
            if (name == "flush" || name == "iommu" || name == "cmdq" || name == "cmdq-entries" ||
                name == "dma" || name == "rcache-drain")
                return die("--" + name + " " + value + ": applies with an IOMMU only (" +
                           (typed ? std::string("--allocator none")
                                  : "allocator none, from " + case_path(case_file)) +
                           ")");
    }
    if (real) {
        std::set<std::string> given;
        for (const auto &f : flags)
            given.insert(f.first);
        if (std::string why = real_threads_refusal(runs[0], given); !why.empty())
            return die(why);
    }
    const unsigned online = cpus_online();
    for (const Params &p : runs) {
        const unsigned threads = real_thread_config(p).active_cpus();  // map-bench: --threads
        if (real && threads > online)
            std::fprintf(stderr,
                         "viommu-sim: --real-threads: %u threads on %u CPUs online: they take "
                         "turns, a preempted lock holder stalls every waiter, and the figures "
                         "measure the scheduler (--cpus %u fits)\n",
                         threads, online, online);
    }

    if (!record.empty() && (runs.size() > 1 || real || runs[0].allocator == "none"))
        return die("--record " + record +
                   ": records one simulated run with an IOMMU (no sweep, no --real-threads, "
                   "no --allocator none)");
    if (std::error_code ec; !record.empty() && !runs[0].trace.empty() &&
                            std::filesystem::equivalent(record, runs[0].trace, ec))
        return die("--record " + record + ": is the trace replayed (--trace); record elsewhere");
    if (json && runs.size() > 1)
        std::printf("[");
    for (size_t i = 0; i < runs.size(); i++) {
        std::string out;
        if (real) {
            auto r = run_real_threads(runs[i], &err);
            if (!r)
                return die(err);
            out = json ? r->json() : r->text();
        } else {
            TraceRecorder recorder;
            // a long run says how far it got (by operations, not wall time)
            auto progress = [](uint64_t n, bool with_iommu) {
                std::fprintf(stderr, "viommu-sim: %llu operations started (%s)\n",
                             (unsigned long long)n,
                             with_iommu ? "with the IOMMU" : "the no-IOMMU baseline");
            };
            auto r = simulate(runs[i], cost, &err, record.empty() ? nullptr : &recorder, progress);
            if (!r)
                return die(err);
            if (!record.empty() && !recorder.write(record, &err))
                return die(err);
            if (!json) {
                print_text(*r);
                continue;
            }
            if (r->dropped)
                std::fprintf(stderr,
                             "viommu-sim: %llu of %llu %s dropped: a map failed (the IOVA space "
                             "could not hold the outstanding mappings)\n",
                             (unsigned long long)r->dropped, (unsigned long long)r->transactions,
                             r->unit.c_str());
            out = r->json();
        }
        std::printf("%s%s%s", json && i ? "," : "", out.c_str(),
                    json && runs.size() > 1 ? "" : "\n");
    }
    if (json && runs.size() > 1)
        std::printf("]\n");
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    const int rc = run(argc, argv);
    // a full disk or a closed pipe must not pass for a result
    const int e = std::fflush(stdout) ? errno : 0;
    if (e || std::ferror(stdout)) {
        std::fprintf(stderr, "viommu-sim: writing the output failed: %s\n",
                     std::strerror(e ? e : EIO));
        return rc ? rc : 1;
    }
    return rc;
}
