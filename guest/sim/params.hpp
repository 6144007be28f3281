// SPDX-License-Identifier: GPL-2.0-or-later
// Every parameter of a simulated setup, with one table that serves the
// command line (--name value), case files ("parameters": {"name": ...})
// and the C API (viommu_sim_params_set): docs/simulation.rst lists them.
// Values are parsed and checked here; a bad or inconsistent value gives a
// one-line error that names the parameter, and nothing runs.
#pragma once

#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cost.hpp"

namespace viommu::sim {

// The most operations a CPU runs in a warm-up or a measured window
// (--warmup, --ops-per-cpu, a --duration window).
constexpr uint64_t kMaxOpsPerCpu = uint64_t{1} << 24;

// Buffer sizes of one operation, possibly a weighted mix of alternatives:
// "4096", "4096:70,65536:30", "64:10,128+1024:90" (an alternative maps
// each '+'-joined buffer; weights default to 1).
struct SizeMix {
    struct Alt {
        std::vector<uint64_t> bytes;
        unsigned weight = 1;
        uint64_t total() const { return std::accumulate(bytes.begin(), bytes.end(), uint64_t{0}); }
    };
    std::vector<Alt> alts;
    std::string text;

    static std::optional<SizeMix> parse(std::string_view s, std::string *error);
    unsigned total_weight() const;
    size_t max_buffers() const;
    bool empty() const { return alts.empty(); }
};

struct Params {
    // the setup
    std::string workload = "nic";
    unsigned cpus = 16;
    unsigned sockets = 1;
    std::string spinlock = "queued";    // the kernel's arch_spinlock_t: queued or ticket
    std::string llc = "non-inclusive";  // each socket's last-level cache
    unsigned devices = 1;
    unsigned queues_per_device = 0;  // 0: one per CPU
    unsigned iodepth = 32;
    SizeMix block_size = *SizeMix::parse("4096", nullptr);
    Nanos cpu_ns_per_op = 2000;
    Nanos cpu_ns_once = 0;  // each CPU, once, at the start of the measured window
    Nanos device_ns_per_op = 0;
    unsigned dma_mask_bits = 64;
    std::string bus = "pci";
    std::string irq_affinity = "same";
    std::string irq_cpus = "all";
    unsigned threads = 0;  // map-bench; 0: --cpus
    uint64_t page_size = 4096;
    unsigned ring_entries = 512;
    uint64_t rx_buffer_bytes = 2048;
    SizeMix tx_bytes;  // empty: the workload's default
    unsigned tx_window = 64;
    unsigned napi_budget = 0;      // 0: each operation cleans its own TX slot
    uint64_t rx_copy_bytes = 0;    // forward: frames up to this size leave the RX buffer mapped
    unsigned clients_per_cpu = 0;  // closed loop: requests outstanding per CPU (0: always one)
    Nanos client_rtt_ns = 0;       // ... from a reply to that client's next request
    unsigned domains_per_device = 1;
    bool setup_fill = true;
    std::string trace;  // --workload trace: the file replayed
    // the IOMMU side
    std::string allocator = "viommu-lab";  // a variant, or "none"
    std::string flush = "flush-queue";
    std::string iommu = "vtd";
    std::string cmdq = "cmpxchg";
    unsigned cmdq_entries = 0;  // SMMUv3 command queue size; 0: the driver's maximum
    std::string dma = "sac";
    // the run
    int warmup = -1;  // per CPU; -1: one revolution of the largest ring
    unsigned ops_per_cpu = 400;
    Nanos duration_ns = 0;
    uint64_t seed = 1;
    Nanos rcache_drain_ns = 0;

    std::set<std::string> given;  // parameters set by a file, a flag or the API

    // @value in command-line form ("128", "64K", "10ms", "0-3,8").
    bool set(std::string_view name, std::string_view value, std::string *error);
    // Every parameter consistent with every other; @error names the first that is not.
    bool validate(std::string *error) const;

    // what the workload kinds default to for --tx-bytes
    SizeMix effective_tx_bytes() const;
    // the simulated CPUs (map-bench: its threads)
    unsigned active_cpus() const;
    // the invalidation-queue model: vtd, smmu-spinlock or smmu-lockfree
    std::string invq() const;
    // CPUs that take completion interrupts (sorted, within [0, active_cpus()))
    std::vector<unsigned> irq_cpu_list(std::string *error = nullptr) const;
    std::string json() const;

    static std::string help();
    static bool known(std::string_view name);
    static std::vector<std::string_view> names();
};

// The whole of the file at @path, or nullopt with @why, as strerror() says
// it ("Is a directory", "No such file or directory"), or saying that it is
// larger than @max_bytes.  The file is read once, from one stream (a pipe
// works), by chunks; after each, @go_on (if set) sees what was read so far
// and may end the reading, which returns that.  Case files, traces,
// --cost-from files.
std::optional<std::string> read_text_file(const std::string &path, std::string &why,
                                          size_t max_bytes,
                                          const std::function<bool(std::string_view)> &go_on = {});
constexpr size_t kMaxSmallFileBytes = size_t{1} << 20;  // a case or --cost-from file

// Loads a case file into @p: its "parameters", then those of
// configuration @config (empty: none).  Errors name the file and the key.
// @configs (if set) receives the case's configuration names, @keys (if
// set) the parameters it set.
bool load_case(const std::string &path, const std::string &config, Params &p, std::string *error,
               std::vector<std::string> *configs = nullptr, std::set<std::string> *keys = nullptr);

// A case name ("memcached-16cpu-xl710") as a path: itself if it names a
// file, else <cases dir>/<name>.json (VIOMMU_SIM_CASES_DIR, or the
// repository's cases/ directory).
std::string case_path(const std::string &name_or_path);
std::string cases_dir();

}  // namespace viommu::sim
