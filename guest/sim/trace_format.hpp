// SPDX-License-Identifier: GPL-2.0-or-later
// The viommu-lab DMA trace format, version 1 (docs/trace-format.rst): a
// line format that streams.  A header line names the version, then one
// event per line, then an end record that counts them, so a file cut short
// anywhere is told from a whole one.  The Python twin is scripts/trace/
// vtrace.py; both read and write the same text.
//
// The parser never throws and never trusts its input: every error names
// the file and the line.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace viommu::sim::trace {

inline constexpr unsigned format_version = 1;
inline constexpr size_t max_line = 4096;
inline constexpr size_t max_file_bytes = size_t{1} << 32;  // read_file(): 4 GiB
// The latest time an event may end (ts + dur, about 73 minutes): a
// recording's clock starts near 0, and a replay adds its gaps up.
inline constexpr uint64_t max_ts = uint64_t{1} << 42;

enum class Op : uint8_t {
    map,    // a DMA mapping created (dma_map_*: IOVA allocated, PTEs written)
    unmap,  // a DMA mapping torn down (PTEs cleared; the IOVA freed now or deferred)
    sync,   // a CPU waited for the IOMMU (strict unmap's IOTLB flush)
    flush,  // a flush-queue flush (deferred IOVAs freed after one IOTLB flush)
    inv,    // an invalidation submitted to the queue
    wait,   // an invalidation wait descriptor
    txn,    // one unit of work ended on this CPU (what throughput counts)
    xlate,  // device side: the first translation of an IOVA since it was invalidated
    idle,   // the CPU did no work for dur (not replayed as work)
};

std::string_view op_name(Op op);
std::optional<Op> op_from(std::string_view s);
// map and unmap; the rest are not replayed as operations
inline bool is_mapping_op(Op op)
{
    return op == Op::map || op == Op::unmap;
}

struct Header {
    unsigned version = format_version;
    std::string source = "unknown";  // sim, ftrace, viommu-vtd, ...
    std::string side = "cpu";        // cpu: CPUs map and unmap; device: the vIOMMU's view
    std::string unit;                // what a txn counts ("" when the trace has no txn)
    uint64_t window = 0;             // txns per CPU before the measured window (sim)
};

// One event.  cpu < 0: the device side (no CPU).  Optional fields have a
// has_ flag; dev is empty when the source does not know the device.
struct Event {
    uint64_t ts = 0;  // ns
    int32_t cpu = 0;
    Op op = Op::map;
    uint64_t size = 0;
    bool has_size = false;
    std::string dev;
    uint64_t mask = 0, iova = 0, pa = 0, dur = 0, sid = 0;
    bool has_mask = false, has_iova = false, has_pa = false, has_dur = false, has_sid = false;
    std::string gran;   // inv: global, domain, page, context, device-iotlb
    uint64_t line = 0;  // where the parser found it (not written)
};

struct Trace {
    Header header;
    std::vector<Event> events;
};

// Line-at-a-time parser: feed every line (without its newline) in order,
// then finish().  Every error is "FILE:LINE: what".
class Parser {
public:
    explicit Parser(std::string name) : name_(std::move(name)) {}
    // false (and error()) on a bad line; after an error the parser stays failed.
    bool line(std::string_view text, std::optional<Event> &out);
    // false if the end record is missing or does not match.
    bool finish();
    const Header &header() const { return header_; }
    const std::string &error() const { return error_; }
    uint64_t lineno() const { return lineno_; }

private:
    bool fail(std::string what);
    bool parse_event(std::string_view text, Event &e);
    std::string name_;
    Header header_;
    bool have_header_ = false, ended_ = false, failed_ = false;
    uint64_t lineno_ = 0, events_ = 0;
    std::vector<uint64_t> last_ts_;  // per CPU (index 0: the device side)
    std::string error_;
};

// The whole text of a trace file (@name for the messages).
std::optional<Trace> parse(std::string_view text, const std::string &name, std::string *error);
std::optional<Trace> read_file(const std::string &path, std::string *error);

// Writes events as they come; finish() writes the end record.
class Writer {
public:
    Writer(std::ostream &out, const Header &h);
    void write(const Event &e);
    void finish();
    uint64_t count() const { return n_; }

private:
    std::ostream &out_;
    uint64_t n_ = 0;
};

std::string format_event(const Event &e);

}  // namespace viommu::sim::trace
