// SPDX-License-Identifier: GPL-2.0-or-later
#include "params.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>

#include "decimal.hpp"
#include "json.hpp"

#ifndef VIOMMU_SIM_CASES_DIR
#define VIOMMU_SIM_CASES_DIR "cases"
#endif

namespace viommu::sim {

namespace {

constexpr uint64_t max_u64 = ~uint64_t{0};

// Which workloads a parameter applies to.
enum Applies : unsigned {
    nic_like = 1,  // nic, forward, memcached, nginx
    block = 2,
    map_bench = 4,
    all = 7,
};

unsigned applies_to(std::string_view workload)
{
    if (workload == "block")
        return block;
    if (workload == "map-bench")
        return map_bench;
    if (workload == "trace")
        return all;  // a replay takes any parameter; those it uses: docs/trace-format.rst
    return nic_like;
}

using Setter = std::function<bool(Params &, std::string_view, std::string &)>;

struct Info {
    std::string_view name, unit, def;
    unsigned applies;
    std::string_view help;
    Setter set;
};

struct Unit {
    std::string_view suffix;
    uint64_t mul;
};

// A whole number, times the multiplier of the first of `units` it ends
// with (a suffix alone is no number).
bool parse_with_unit(std::string_view s, std::initializer_list<Unit> units, uint64_t &out)
{
    uint64_t mul = 1;
    for (const Unit &u : units) {
        if (s.size() > u.suffix.size() && s.ends_with(u.suffix)) {
            s.remove_suffix(u.suffix.size());
            mul = u.mul;
            break;
        }
    }
    uint64_t v;
    if (!parse_u64(s, v) || v > max_u64 / mul)
        return false;
    out = v * mul;
    return true;
}

// "4096", "4K", "4KiB", "64K", "1M"
bool parse_bytes(std::string_view s, uint64_t &out)
{
    return parse_with_unit(
        s, {{"KiB", 1024}, {"MiB", 1 << 20}, {"K", 1024}, {"M", 1 << 20}, {"B", 1}}, out);
}

// "500" (ns), "500ns", "4us", "10ms", "2s"
bool parse_ns(std::string_view s, uint64_t &out)
{
    return parse_with_unit(s, {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}}, out);
}

Setter uint_field(unsigned Params::*f, uint64_t lo, uint64_t hi)
{
    return [f, lo, hi](Params &p, std::string_view v, std::string &e) {
        uint64_t n;
        if (!parse_u64(v, n) || n < lo || n > hi) {
            e = "needs a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
            return false;
        }
        p.*f = unsigned(n);
        return true;
    };
}

// A size in bytes ("2048", "64K") from @lo to 1G.
Setter bytes_field(uint64_t Params::*f, uint64_t lo)
{
    return [f, lo](Params &p, std::string_view v, std::string &e) {
        uint64_t n;
        if (!parse_bytes(v, n) || n < lo || n > (1u << 30)) {
            e = "needs a size in bytes from " + std::to_string(lo) + " to 1G";
            return false;
        }
        p.*f = n;
        return true;
    };
}

// A time up to @max_s seconds: the virtual clocks are 64-bit ns, and a
// window of 2^24 operations per CPU at 100 s each still fits in them.
Setter ns_field(Nanos Params::*f, unsigned max_s)
{
    return [f, max_s](Params &p, std::string_view v, std::string &e) {
        uint64_t n;
        if (!parse_ns(v, n) || n > max_s * uint64_t{1000000000}) {
            e = "needs a time from 0 to " + std::to_string(max_s) +
                "s (a whole number of ns, or with a unit: 500ns, 4us, 10ms, 2s)";
            return false;
        }
        p.*f = n;
        return true;
    };
}

Setter choice_field(std::string Params::*f, std::vector<std::string_view> choices)
{
    return [f, choices](Params &p, std::string_view v, std::string &e) {
        if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
            e = "must be one of";
            for (auto c : choices)
                e += " " + std::string(c);
            return false;
        }
        p.*f = std::string(v);
        return true;
    };
}

Setter name_field(std::string Params::*f)
{
    return [f](Params &p, std::string_view v, std::string &e) {
        if (v.empty()) {
            e = "needs a name";
            return false;
        }
        p.*f = std::string(v);
        return true;
    };
}

Setter mix_field(SizeMix Params::*f)
{
    return [f](Params &p, std::string_view v, std::string &e) {
        auto m = SizeMix::parse(v, &e);
        if (!m)
            return false;
        p.*f = *m;
        return true;
    };
}

const std::vector<Info> &table()
{
    static const std::vector<Info> t = {
        // --- setup ---
        {"workload", "", "nic", all,
         "block (fio-like random I/O: devices x queues x iodepth outstanding, one mapping per "
         "I/O), nic (a NIC stream: RX refill + TX per packet), forward (receive on one port, "
         "transmit on the next), map-bench (map+unmap loops, as dma_map_benchmark), memcached "
         "and nginx (request/response over a NIC), trace (replay --trace FILE)",
         choice_field(&Params::workload,
                      {"block", "nic", "forward", "map-bench", "memcached", "nginx", "trace"})},
        {"trace", "file", "none", all,
         "--workload trace: the recorded DMA stream to replay (docs/trace-format.rst)",
         [](Params &p, std::string_view v, std::string &e) {
             if (v.empty()) {
                 e = "needs a file name";
                 return false;
             }
             p.trace = std::string(v);
             return true;
         }},
        {"cpus", "CPUs", "16", all,
         "CPUs of the machine (a list 4,16,32 on the command line "
         "runs a sweep)",
         uint_field(&Params::cpus, 1, 256)},
        {"sockets", "sockets", "1", all,
         "sockets the CPUs are spread over, numbered socket by socket (a cache line moved "
         "between sockets costs line_transfer_socket)",
         uint_field(&Params::sockets, 1, 16)},
        {"spinlock", "", "queued", all,
         "the kernel's spinlock: queued (qspinlock: x86 from 4.2, arm64 from 4.19; a handoff "
         "moves the lock line once) or ticket (before those: every waiter spins on the lock "
         "word, a handoff costs more the more CPUs wait)",
         choice_field(&Params::spinlock, {"queued", "ticket"})},
        {"llc", "", "non-inclusive", all,
         "each socket's last-level cache: inclusive (Intel Xeons up to Broadwell: a clean line "
         "one core read is served by its socket's L3, another core of that socket reads it "
         "as an L3 hit) or non-inclusive (Skylake-SP on: a line this CPU does not hold comes "
         "from a core that holds it, a line transfer)",
         choice_field(&Params::llc, {"non-inclusive", "inclusive"})},
        {"devices", "devices", "1", all, "devices (NVMe drives, NIC ports) doing DMA",
         uint_field(&Params::devices, 1, 255)},
        {"queues-per-device", "queues", "0 (one per CPU)", block | nic_like,
         "hardware queues per device, at most one per CPU (as the NVMe and network drivers "
         "set them up); CPU c submits to queue c mod N",
         uint_field(&Params::queues_per_device, 0, 4096)},
        {"iodepth", "I/Os", "32", block, "outstanding I/Os per queue",
         uint_field(&Params::iodepth, 1, 65536)},
        {"block-size", "bytes", "4096", block | map_bench,
         "bytes mapped per I/O or per map; a mix: 4096:70,65536:30 (size:weight)",
         mix_field(&Params::block_size)},
        {"cpu-ns-per-op", "ns", "2000", all,
         "non-IOMMU CPU time per operation (mean; each op draws uniformly from [w/2, 3w/2))",
         ns_field(&Params::cpu_ns_per_op, 100)},
        {"cpu-ns-once", "ns", "0", all,
         "non-IOMMU CPU time each CPU spends once, at the start of the measured window, "
         "outside every lock (a driver probe's mdelay()s between its mappings)",
         ns_field(&Params::cpu_ns_once, 1000)},
        {"device-ns-per-op", "ns", "0 (no limit)", all,
         "a device's own service time per mapping it serves (1e9 / its rated IOPS); a CPU "
         "completing the mapping first waits for it, idle",
         ns_field(&Params::device_ns_per_op, 100)},
        {"dma-mask-bits", "bits", "64", all, "the devices' DMA mask",
         uint_field(&Params::dma_mask_bits, 32, 64)},
        {"bus", "", "pci", all, "pci or platform (a platform device makes no 32-bit first attempt)",
         choice_field(&Params::bus, {"pci", "platform"})},
        {"irq-affinity", "", "same", block | nic_like,
         "where completions run: same (the submitting CPU), spread (queue q's interrupt on the "
         "q-th --irq-cpus CPU, round robin), single (all on the first --irq-cpus CPU)",
         choice_field(&Params::irq_affinity, {"same", "spread", "single"})},
        {"irq-cpus", "CPUs", "all", block | nic_like,
         "CPUs taking completion interrupts: N (CPUs 0..N-1), P% (the first P% of the CPUs, at "
         "least one) or a CPU list with ',' or '-' (0-3,8; one CPU: 5-5)",
         name_field(&Params::irq_cpus)},
        {"threads", "threads", "--cpus", map_bench,
         "map-bench threads, one per CPU (the other CPUs stay idle and are not simulated)",
         uint_field(&Params::threads, 1, 256)},
        {"page-size", "bytes", "4096", all, "IOMMU granule: 4096, 16384 or 65536",
         [](Params &p, std::string_view v, std::string &e) {
             uint64_t n;
             if (!parse_bytes(v, n) || (n != 4096 && n != 16384 && n != 65536)) {
                 e = "must be 4096, 16384 or 65536 (4K, 16K, 64K)";
                 return false;
             }
             p.page_size = n;
             return true;
         }},
        {"ring-entries", "buffers", "512", nic_like,
         "RX ring per CPU: buffers mapped at interface up, one refilled per operation (0: none)",
         uint_field(&Params::ring_entries, 0, 1 << 20)},
        {"rx-buffer-bytes", "bytes", "2048", nic_like, "bytes of one RX buffer",
         bytes_field(&Params::rx_buffer_bytes, 1)},
        {"tx-bytes", "bytes", "nic 1514, forward 64, memcached 64:10,128+1024:90, nginx 256+1024",
         nic_like, "buffers mapped for transmission per operation, a mix as --block-size",
         mix_field(&Params::tx_bytes)},
        {"tx-window", "mappings", "64", nic_like,
         "TX mappings a CPU keeps before its clean-up unmaps the oldest (0: unmapped at the "
         "completion CPU's next operation)",
         uint_field(&Params::tx_window, 0, 1 << 20)},
        {"napi-budget", "operations", "0", nic_like,
         "operations per NAPI poll: a poll first unmaps every TX mapping of the polls before "
         "it, then runs this many operations (0: each operation cleans the oldest TX slot)",
         uint_field(&Params::napi_budget, 0, 1 << 20)},
        {"clients-per-cpu", "requests", "0 (a request always waiting)", nic_like,
         "a closed-loop load: the requests a CPU's clients keep outstanding; a client sends "
         "its next one --client-rtt after the CPU's reply, and a CPU with none waiting idles",
         uint_field(&Params::clients_per_cpu, 0, 1 << 14)},
        {"client-rtt", "ns", "0", nic_like,
         "with --clients-per-cpu: from a reply to that client's next request (the network "
         "round trip and the client's own time)",
         ns_field(&Params::client_rtt_ns, 100)},
        {"rx-copy-bytes", "bytes", "0", nic_like,
         "forward: a frame of at most this many bytes is copied out of its RX buffer, which "
         "stays mapped for the next frame (0: every RX buffer is unmapped and refilled)",
         bytes_field(&Params::rx_copy_bytes, 0)},
        {"domains-per-device", "domains", "1", all,
         "IOMMU domains (own IOVA space, tree and lock) per device; queue q of a device uses "
         "domain q mod N",
         uint_field(&Params::domains_per_device, 1, 255)},
        {"setup-fill", "", "yes", block | nic_like,
         "yes: rings and queues are full before the run (interface up, queues busy); no: start "
         "empty (a driver mapping at probe)",
         [](Params &p, std::string_view v, std::string &e) {
             if (v == "yes" || v == "true")
                 p.setup_fill = true;
             else if (v == "no" || v == "false")
                 p.setup_fill = false;
             else {
                 e = "must be yes or no";
                 return false;
             }
             return true;
         }},
        // --- the IOMMU side ---
        {"allocator", "", "viommu-lab", all, "IOVA allocator variant (--list), or none: no IOMMU",
         name_field(&Params::allocator)},
        {"flush", "", "flush-queue", all,
         "unmap/flush policy: strict, global-list, percpu-defer, flush-queue",
         name_field(&Params::flush)},
        {"iommu", "", "vtd", all, "vtd (queued invalidation) or smmuv3 (command queue)",
         choice_field(&Params::iommu, {"vtd", "smmuv3"})},
        {"cmdq", "", "cmpxchg", all,
         "SMMUv3 command-queue slot reservation: spinlock (one lock, CMD_SYNC polled under "
         "it), cmpxchg (5.5-6.1: a cmpxchg loop on the shared prod word, retried for every "
         "reservation that lands between its read and its cmpxchg; the owner gathers and "
         "publishes), fetch-add (the same queue, reserving with one atomic add)",
         choice_field(&Params::cmdq, {"spinlock", "cmpxchg", "fetch-add"})},
        {"cmdq-entries", "commands", "65536", all,
         "SMMUv3 command-queue size (a power of two): the smaller of the driver's maximum "
         "(65536 with 4 KiB pages) and the hardware's IDR1.CMDQS",
         [](Params &p, std::string_view v, std::string &e) {
             uint64_t n = 0;
             if (!parse_bytes(v, n) || n < 8 || n > (1u << 19) || (n & (n - 1))) {
                 e = "must be a power of two from 8 to 524288";
                 return false;
             }
             p.cmdq_entries = static_cast<unsigned>(n);
             return true;
         }},
        {"dma", "", "sac", all,
         "dma-iommu 32-bit first attempt for PCI devices with a wider mask: sac (try 32 bits), "
         "sac-flush (pre-4.15: a failed attempt flushes every CPU's cache and retries), "
         "sac-once (6.6: once per device), forcedac (never)",
         choice_field(&Params::dma, {"sac", "sac-flush", "sac-once", "forcedac"})},
        // --- the run ---
        {"warmup", "ops per CPU", "one revolution of the largest ring", all,
         "operations each CPU runs before the measured window",
         [](Params &p, std::string_view v, std::string &e) {
             uint64_t n;
             if (!parse_u64(v, n) || n > kMaxOpsPerCpu) {
                 e = "needs a whole number from 0 to " + std::to_string(kMaxOpsPerCpu);
                 return false;
             }
             p.warmup = int(n);
             return true;
         }},
        {"ops-per-cpu", "ops", "400", all, "measured operations per CPU (the window's length)",
         uint_field(&Params::ops_per_cpu, 1, kMaxOpsPerCpu)},
        {"duration", "ns", "0 (use --ops-per-cpu)", all,
         "the measured window as virtual time instead (500us, 10ms, ...): at most 2^24 "
         "operations per CPU, so at most 2^24 x --cpu-ns-per-op",
         ns_field(&Params::duration_ns, 1000)},
        {"seed", "", "1", all, "seed of the per-CPU random streams",
         [](Params &p, std::string_view v, std::string &e) {
             if (!parse_u64(v, p.seed)) {
                 e = "needs a whole number";
                 return false;
             }
             return true;
         }},
        {"rcache-drain", "ns", "0 (off)", all,
         "stressor: every this much virtual time CPU 0 returns every CPU's cached IOVAs to the "
         "tree",
         ns_field(&Params::rcache_drain_ns, 1000)},
    };
    return t;
}

const Info *info(std::string_view name)
{
    for (const Info &i : table())
        if (i.name == name)
            return &i;
    return nullptr;
}

// A parameter's value in a case file: a scalar, or {"value": scalar,
// "cite"/"source"/"note": strings}.
bool scalar_text(const json::Value &v, std::string &out, std::string &e)
{
    using T = json::Value::Type;
    switch (v.type()) {
    case T::number:
        out = v.text();
        return true;
    case T::string:
        out = v.str();
        return true;
    case T::boolean:
        out = v.boolean() ? "yes" : "no";
        return true;
    default:
        e = std::string("is ") + json::Value::type_name(v.type()) +
            ", not a number, string or boolean";
        return false;
    }
}

bool apply_parameters(const std::string &file, const std::string &where, const json::Value &obj,
                      Params &p, std::string *error, std::set<std::string> *keys)
{
    auto fail = [&](const std::string &key, const std::string &msg) {
        if (error)
            *error = file + ": " + where + (key.empty() ? "" : "." + key) + ": " + msg;
        return false;
    };
    if (!obj.is(json::Value::Type::object))
        return fail("", "must be an object");
    for (const auto &[key, v] : obj.members()) {
        if (!key.empty() && key[0] == '_')
            continue;  // comments
        if (!Params::known(key))
            return fail(key, "unknown parameter");
        const json::Value *val = &v;
        if (v.is(json::Value::Type::object)) {
            for (const auto &[k, x] : v.members()) {
                if (k == "value")
                    continue;
                if (k != "cite" && k != "source" && k != "note" && k[0] != '_')
                    return fail(key + "." + k, "unknown key (value, cite, source, note)");
                if (!x.is(json::Value::Type::string))
                    return fail(key + "." + k, "must be a string");
            }
            val = v.find("value");
            if (!val)
                return fail(key, "has no \"value\"");
        }
        std::string text, e;
        if (!scalar_text(*val, text, e))
            return fail(key, e);
        if (!p.set(key, text, &e))
            return fail(key, e.substr(e.find(": ") == std::string::npos ? 0 : e.find(": ") + 2));
        if (keys)
            keys->insert(key);
    }
    return true;
}

}  // namespace

std::optional<SizeMix> SizeMix::parse(std::string_view s, std::string *error)
{
    auto fail = [&](std::string m) -> std::optional<SizeMix> {
        if (error)
            *error = std::move(m);
        return std::nullopt;
    };
    SizeMix mix;
    mix.text = std::string(s);
    if (s.empty())
        return fail("needs a size in bytes, or a mix such as 4096:70,65536:30");
    size_t start = 0;
    while (start <= s.size()) {
        size_t comma = s.find(',', start);
        std::string_view alt =
            s.substr(start, comma == std::string_view::npos ? s.npos : comma - start);
        Alt a;
        size_t colon = alt.find(':');
        std::string_view sizes = alt.substr(0, colon);
        if (colon != std::string_view::npos) {
            uint64_t w;
            if (!parse_u64(alt.substr(colon + 1), w) || w == 0 || w > 1000000)
                return fail("bad weight in '" + std::string(alt) + "' (a whole number 1..1000000)");
            a.weight = unsigned(w);
        }
        size_t p = 0;
        while (p <= sizes.size()) {
            size_t plus = sizes.find('+', p);
            std::string_view one =
                sizes.substr(p, plus == std::string_view::npos ? sizes.npos : plus - p);
            uint64_t b;
            if (!parse_bytes(one, b) || b == 0 || b > (uint64_t{1} << 30))
                return fail("bad size '" + std::string(one) +
                            "' (bytes from 1 to 1G, e.g. 4096 or 64K)");
            a.bytes.push_back(b);
            if (plus == std::string_view::npos)
                break;
            p = plus + 1;
        }
        if (a.bytes.size() > 16)
            return fail("more than 16 buffers in one alternative");
        mix.alts.push_back(std::move(a));
        if (comma == std::string_view::npos)
            break;
        start = comma + 1;
    }
    if (mix.alts.size() > 64)
        return fail("more than 64 alternatives");
    return mix;
}

unsigned SizeMix::total_weight() const
{
    unsigned t = 0;
    for (const Alt &a : alts)
        t += a.weight;
    return t;
}

size_t SizeMix::max_buffers() const
{
    size_t m = 0;
    for (const Alt &a : alts)
        m = std::max(m, a.bytes.size());
    return m;
}

bool Params::known(std::string_view name)
{
    return info(name) != nullptr;
}

std::vector<std::string_view> Params::names()
{
    std::vector<std::string_view> n;
    for (const Info &i : table())
        n.push_back(i.name);
    return n;
}

bool Params::set(std::string_view name, std::string_view value, std::string *error)
{
    const Info *i = info(name);
    if (!i) {
        if (error)
            *error = "unknown parameter '" + std::string(name) + "'";
        return false;
    }
    std::string e;
    if (!i->set(*this, value, e)) {
        if (error)
            *error = "--" + std::string(name) + " " + std::string(value) + ": " + e;
        return false;
    }
    given.insert(std::string(name));
    // a change to VT-d drops a command-queue choice made before (a case
    // file's SMMUv3 setup run on VT-d); --cmdq after it is still an error
    if (name == "iommu" && iommu == "vtd") {
        given.erase("cmdq");
        given.erase("cmdq-entries");
    }
    return true;
}

SizeMix Params::effective_tx_bytes() const
{
    if (!tx_bytes.empty())
        return tx_bytes;
    std::string_view d = workload == "memcached" ? "64:10,128+1024:90"
                         : workload == "nginx"   ? "256+1024"
                         : workload == "forward" ? "64"
                                                 : "1514";
    return *SizeMix::parse(d, nullptr);
}

unsigned Params::active_cpus() const
{
    return workload == "map-bench" && threads ? threads : cpus;
}

std::string Params::invq() const
{
    if (iommu == "vtd")
        return "vtd";
    if (cmdq == "spinlock")
        return "smmu-spinlock";
    return cmdq == "fetch-add" ? "smmu-fetch-add" : "smmu-lockfree";
}

std::vector<unsigned> Params::irq_cpu_list(std::string *error) const
{
    unsigned n = active_cpus();
    std::vector<unsigned> out;
    auto fail = [&](std::string m) {
        if (error)
            *error = "--irq-cpus " + irq_cpus + ": " + m;
        return std::vector<unsigned>{};
    };
    std::string_view s = irq_cpus;
    if (s == "all") {
        for (unsigned c = 0; c < n; c++)
            out.push_back(c);
        return out;
    }
    uint64_t v;
    if (!s.empty() && s.back() == '%') {
        if (!parse_u64(s.substr(0, s.size() - 1), v) || v == 0 || v > 100)
            return fail("a percentage from 1% to 100%");
        unsigned k = std::max(1u, unsigned(uint64_t{n} * v / 100));
        for (unsigned c = 0; c < k; c++)
            out.push_back(c);
        return out;
    }
    if (s.find_first_of(",-") == std::string_view::npos) {
        if (!parse_u64(s, v) || v == 0)
            return fail("a count of CPUs from 1, a percentage or a CPU list");
        if (v > n)
            return fail("more CPUs than the " + std::to_string(n) + " simulated");
        for (unsigned c = 0; c < v; c++)
            out.push_back(c);
        return out;
    }
    size_t start = 0;
    while (start <= s.size()) {
        size_t comma = s.find(',', start);
        std::string_view r = s.substr(start, comma == s.npos ? s.npos : comma - start);
        size_t dash = r.find('-');
        uint64_t lo, hi;
        if (!parse_u64(r.substr(0, dash), lo) ||
            !parse_u64(dash == r.npos ? r : r.substr(dash + 1), hi) || lo > hi)
            return fail("bad range '" + std::string(r) + "'");
        if (hi >= n)
            return fail("CPU " + std::to_string(hi) + " is not among the " + std::to_string(n) +
                        " simulated");
        for (uint64_t c = lo; c <= hi; c++)
            out.push_back(unsigned(c));
        if (comma == s.npos)
            break;
        start = comma + 1;
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

bool Params::validate(std::string *error) const
{
    auto fail = [&](std::string m) {
        if (error)
            *error = std::move(m);
        return false;
    };
    // fields set directly (not through set()) are checked again here
    for (const Info &i : table()) {
        std::string_view v;
        if (i.name == "workload")
            v = workload;
        else if (i.name == "bus")
            v = bus;
        else if (i.name == "irq-affinity")
            v = irq_affinity;
        else if (i.name == "iommu")
            v = iommu;
        else if (i.name == "cmdq")
            v = cmdq;
        else
            continue;
        Params scratch;
        std::string e;
        if (!i.set(scratch, v, e))
            return fail("--" + std::string(i.name) + " " + std::string(v) + ": " + e);
    }
    if (cpus < 1 || cpus > 256)
        return fail("--cpus " + std::to_string(cpus) + ": needs a whole number from 1 to 256");
    unsigned kind = applies_to(workload);
    for (const std::string &g : given) {
        const Info *i = info(g);
        if (i && !(i->applies & kind))
            return fail("--" + g + " does not apply to --workload " + workload);
    }
    if (sockets > cpus)
        return fail("--sockets " + std::to_string(sockets) + ": more sockets than --cpus " +
                    std::to_string(cpus));
    if (workload == "forward" && devices % 2)
        return fail("--devices " + std::to_string(devices) +
                    ": forward needs ports in pairs (receive on one, transmit on the next)");
    if (uint64_t{devices} * domains_per_device > 255)
        return fail("--domains-per-device " + std::to_string(domains_per_device) +
                    ": more than 255 (device, domain) pairs");
    if (workload == "map-bench" && threads > cpus)
        return fail("--threads " + std::to_string(threads) + ": more than --cpus " +
                    std::to_string(cpus));
    if (iommu == "vtd" && given.count("cmdq-entries"))
        return fail("--cmdq-entries " + std::to_string(cmdq_entries) +
                    ": applies to --iommu smmuv3 only");
    if (iommu == "vtd" && given.count("cmdq"))
        return fail("--cmdq " + cmdq + ": applies to --iommu smmuv3 only");
    if (irq_affinity == "same" && given.count("irq-cpus"))
        return fail("--irq-cpus " + irq_cpus + ": needs --irq-affinity spread or single");
    if ((workload == "trace") != !trace.empty())
        return fail(trace.empty() ? "--workload trace: needs --trace FILE"
                                  : "--trace " + trace + ": needs --workload trace");
    if (given.count("duration") && given.count("ops-per-cpu"))
        return fail("--duration: give either --duration or --ops-per-cpu, not both");
    if (given.count("duration") && duration_ns == 0)
        return fail("--duration 0: needs a window longer than 0");
    if (given.count("client-rtt") && !clients_per_cpu)
        return fail("--client-rtt: needs --clients-per-cpu");
    if (given.count("duration") && workload != "trace" && !cpu_ns_per_op && !device_ns_per_op)
        return fail("--duration: needs --cpu-ns-per-op or --device-ns-per-op above 0 (without "
                    "the IOMMU an operation would take no time, and the window no end)");
    // the no-IOMMU baseline runs about one operation per --cpu-ns-per-op
    if (given.count("duration") && workload != "trace" && cpu_ns_per_op &&
        duration_ns / cpu_ns_per_op > kMaxOpsPerCpu)
        return fail("--duration " + std::to_string(duration_ns) + "ns: about " +
                    std::to_string(duration_ns / cpu_ns_per_op) +
                    " operations per CPU at --cpu-ns-per-op " + std::to_string(cpu_ns_per_op) +
                    "ns, more than a window holds (" + std::to_string(kMaxOpsPerCpu) +
                    "); at most " + std::to_string(cpu_ns_per_op * kMaxOpsPerCpu) + "ns");
    std::string e;
    if (irq_cpu_list(&e).empty())
        return fail(e);
    // what stays mapped at once: about 60 bytes of host memory each
    constexpr uint64_t max_mapped = uint64_t{1} << 25;
    if (kind == block) {
        uint64_t queues = uint64_t{devices} * (queues_per_device ? queues_per_device : cpus);
        uint64_t slots = queues * iodepth;
        if (slots / cpus > (1u << 22))
            return fail("--iodepth " + std::to_string(iodepth) +
                        ": more than 4M outstanding I/Os per CPU");
        if (slots > max_mapped)
            return fail("--iodepth " + std::to_string(iodepth) + ": " + std::to_string(slots) +
                        " outstanding I/Os in all, more than " + std::to_string(max_mapped) +
                        " (2 GiB of the simulator's memory)");
    }
    if (kind == nic_like && uint64_t{cpus} * ring_entries > max_mapped)
        return fail("--ring-entries " + std::to_string(ring_entries) + ": " +
                    std::to_string(uint64_t{cpus} * ring_entries) +
                    " RX buffers mapped in all, more than " + std::to_string(max_mapped) +
                    " (2 GiB of the simulator's memory)");
    if (napi_budget > tx_window)
        return fail("--napi-budget " + std::to_string(napi_budget) + ": more than --tx-window's " +
                    std::to_string(tx_window) + " TX slots (a poll sends into slots the one " +
                    "before it emptied)");
    if (rx_copy_bytes && workload != "forward")
        return fail("--rx-copy-bytes " + std::to_string(rx_copy_bytes) +
                    ": applies to --workload forward only (the frame received is the one "
                    "forwarded)");
    if (kind == nic_like && ring_entries == 0 && effective_tx_bytes().empty())
        return fail("--ring-entries 0: the operation maps nothing");
    return true;
}

using json::quoted;

std::string Params::json() const
{
    std::string o = "{";
    auto str = [&](std::string_view k, std::string_view v) {
        o += (o.size() > 1 ? "," : "") + quoted(k) + ":" + quoted(v);
    };
    auto num = [&](std::string_view k, uint64_t v) {
        o += (o.size() > 1 ? "," : "") + quoted(k) + ":" + std::to_string(v);
    };
    str("workload", workload);
    if (!trace.empty())
        str("trace", trace);
    num("cpus", cpus);
    num("sockets", sockets);
    str("spinlock", spinlock);
    str("llc", llc);
    num("devices", devices);
    num("queues-per-device", queues_per_device);
    num("iodepth", iodepth);
    str("block-size", block_size.text);
    num("cpu-ns-per-op", cpu_ns_per_op);
    num("cpu-ns-once", cpu_ns_once);
    num("device-ns-per-op", device_ns_per_op);
    num("dma-mask-bits", dma_mask_bits);
    str("bus", bus);
    str("irq-affinity", irq_affinity);
    str("irq-cpus", irq_cpus);
    num("threads", active_cpus());
    num("page-size", page_size);
    num("ring-entries", ring_entries);
    num("rx-buffer-bytes", rx_buffer_bytes);
    str("tx-bytes", effective_tx_bytes().text);
    num("tx-window", tx_window);
    num("napi-budget", napi_budget);
    num("rx-copy-bytes", rx_copy_bytes);
    num("clients-per-cpu", clients_per_cpu);
    num("client-rtt", client_rtt_ns);
    num("domains-per-device", domains_per_device);
    str("setup-fill", setup_fill ? "yes" : "no");
    str("allocator", allocator);
    str("flush", flush);
    str("iommu", iommu);
    str("cmdq", iommu == "smmuv3" ? cmdq : "");
    num("cmdq-entries", iommu != "smmuv3" ? 0 : cmdq_entries ? cmdq_entries : 65536);
    str("dma", dma);
    o += std::string(",\"warmup\":") + (warmup < 0 ? "null" : std::to_string(warmup));
    num("ops-per-cpu", ops_per_cpu);
    num("duration", duration_ns);
    num("seed", seed);
    num("rcache-drain", rcache_drain_ns);
    return o + "}";
}

std::string Params::help()
{
    std::string o;
    for (const Info &i : table()) {
        std::string head = "  --" + std::string(i.name);
        if (!i.unit.empty())
            head += " (" + std::string(i.unit) + ")";
        // the help text wrapped at 78 columns, indented by 6
        std::string line = "     ";
        o += head + "\n";
        std::string_view h = i.help;
        while (!h.empty()) {
            size_t sp = h.find(' ');
            std::string_view word = h.substr(0, sp);
            if (line.size() + 1 + word.size() > 78) {
                o += line + "\n";
                line = "     ";
            }
            line += " " + std::string(word);
            h = sp == h.npos ? std::string_view{} : h.substr(sp + 1);
        }
        o += line + "\n      default: " + std::string(i.def);
        if (i.applies != all) {
            o += "; for:";
            if (i.applies & nic_like)
                o += " nic forward memcached nginx";
            if (i.applies & block)
                o += " block";
            if (i.applies & map_bench)
                o += " map-bench";
        }
        o += "\n";
    }
    return o;
}

std::string cases_dir()
{
    if (const char *e = std::getenv("VIOMMU_SIM_CASES_DIR"); e && *e)
        return e;
    return VIOMMU_SIM_CASES_DIR;
}

std::string case_path(const std::string &name)
{
    if (name.find('/') != std::string::npos ||
        (name.size() > 5 && name.substr(name.size() - 5) == ".json"))
        return name;
    return cases_dir() + "/" + name + ".json";
}

std::optional<std::string> read_text_file(const std::string &path, std::string &why,
                                          size_t max_bytes,
                                          const std::function<bool(std::string_view)> &go_on)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        why = std::strerror(EISDIR);
        return std::nullopt;
    }
    errno = 0;
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        why = std::strerror(errno ? errno : EIO);
        return std::nullopt;
    }
    // by chunks, so that /dev/zero or a huge file by mistake stops at the limit
    std::string text;
    char chunk[65536];
    while (text.size() <= max_bytes) {
        f.read(chunk,
               static_cast<std::streamsize>(std::min(sizeof chunk, max_bytes + 1 - text.size())));
        text.append(chunk, static_cast<size_t>(f.gcount()));
        if (go_on && !go_on(text))
            return text;
        if (!f)
            break;
    }
    if (f.bad() || (!f.eof() && text.size() <= max_bytes)) {
        why = std::strerror(errno ? errno : EIO);
        return std::nullopt;
    }
    if (text.size() > max_bytes) {
        const bool gib = max_bytes % (size_t{1} << 30) == 0;
        why =
            "larger than " + std::to_string(max_bytes >> (gib ? 30 : 20)) + (gib ? " GiB" : " MiB");
        return std::nullopt;
    }
    return text;
}

bool load_case(const std::string &path_in, const std::string &config, Params &p, std::string *error,
               std::vector<std::string> *configs, std::set<std::string> *keys)
{
    std::string path = case_path(path_in);
    auto fail = [&](const std::string &m) {
        if (error)
            *error = path + ": " + m;
        return false;
    };
    std::string why;
    const std::optional<std::string> text = read_text_file(path, why, kMaxSmallFileBytes);
    if (!text)
        return fail("cannot read the case file: " + why);
    std::string e;
    auto doc = json::parse(*text, &e);
    if (!doc)
        return fail(e);
    if (!doc->is(json::Value::Type::object))
        return fail("the case file must be one JSON object");
    for (const auto &[k, v] : doc->members()) {
        if (k == "parameters" || k == "configurations")
            continue;
        if (k == "name" || k == "models" || k == "sources" || k[0] == '_')
            continue;
        return fail("unknown key \"" + k +
                    "\" (name, models, sources, parameters, configurations)");
    }
    const json::Value *params = doc->find("parameters");
    if (!params)
        return fail("no \"parameters\"");
    if (!apply_parameters(path, "parameters", *params, p, error, keys))
        return false;
    const json::Value *cfgs = doc->find("configurations");
    if (cfgs && !cfgs->is(json::Value::Type::object))
        return fail("configurations: must be an object");
    if (configs && cfgs)
        for (const auto &[k, v] : cfgs->members())
            if (k[0] != '_')
                configs->push_back(k);
    if (config.empty())
        return true;
    const json::Value *c = cfgs ? cfgs->find(config) : nullptr;
    if (!c)
        return fail("configurations." + config + ": no such configuration");
    if (!c->is(json::Value::Type::object))
        return fail("configurations." + config + ": must be an object");
    for (const auto &[k, v] : c->members())
        if (k != "about" && k != "parameters" && k[0] != '_')
            return fail("configurations." + config + "." + k + ": unknown key (about, parameters)");
    if (const json::Value *cp = c->find("parameters"))
        return apply_parameters(path, "configurations." + config + ".parameters", *cp, p, error,
                                keys);
    return true;
}

}  // namespace viommu::sim
