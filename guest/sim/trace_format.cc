// SPDX-License-Identifier: GPL-2.0-or-later
#include "trace_format.hpp"

#include <array>
#include <ostream>

#include "decimal.hpp"
#include "params.hpp"

namespace viommu::sim::trace {

namespace {

constexpr std::array<std::string_view, 9> op_names{"map",  "unmap", "sync",  "flush", "inv",
                                                   "wait", "txn",   "xlate", "idle"};
constexpr int32_t max_cpu = 4095;

bool hex(std::string_view s, uint64_t &out)
{
    if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || s.size() > 18)
        return false;
    uint64_t v = 0;
    for (char c : s.substr(2)) {
        unsigned d;
        if (c >= '0' && c <= '9')
            d = unsigned(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = unsigned(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = unsigned(c - 'A' + 10);
        else
            return false;
        v = v << 4 | d;
    }
    out = v;
    return true;
}

bool word_ok(std::string_view s)
{
    if (s.empty() || s.size() > 64)
        return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == ':' || c == '.' || c == '_' || c == '/' || c == '-'))
            return false;
    return true;
}

// Splits on runs of spaces/tabs.
std::vector<std::string_view> fields(std::string_view s)
{
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
            i++;
        size_t j = i;
        while (j < s.size() && s[j] != ' ' && s[j] != '\t')
            j++;
        if (j > i)
            out.push_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

// Printable: messages quote a field at most 40 bytes, non-printables as '?'.
std::string shown(std::string_view s)
{
    std::string out;
    for (char c : s.substr(0, 40))
        out += (c >= 0x20 && c < 0x7f) ? c : '?';
    if (s.size() > 40)
        out += "...";
    return "'" + out + "'";
}

std::string hexs(uint64_t v)
{
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
    return buf;
}

}  // namespace

std::string_view op_name(Op op)
{
    return op_names.at(size_t(op));
}

std::optional<Op> op_from(std::string_view s)
{
    for (size_t i = 0; i < op_names.size(); i++)
        if (op_names[i] == s)
            return Op(i);
    return std::nullopt;
}

bool Parser::fail(std::string what)
{
    if (!failed_)
        error_ = name_ + ":" + std::to_string(lineno_) + ": " + std::move(what);
    failed_ = true;
    return false;
}

bool Parser::parse_event(std::string_view text, Event &e)
{
    auto f = fields(text);
    if (f.size() < 3)
        return fail("an event needs TIMESTAMP CPU OP, got " + shown(text));
    if (!parse_u64(f[0], e.ts))
        return fail("timestamp " + shown(f[0]) + ": needs whole nanoseconds");
    bool device_side = header_.side == "device";
    if (f[1] == "-") {
        if (!device_side)
            return fail("CPU '-' (device side) in a trace of side=cpu");
        e.cpu = -1;
    } else {
        uint64_t c;
        if (!parse_u64(f[1], c) || c > uint64_t(max_cpu))
            return fail("CPU " + shown(f[1]) + ": needs 0.." + std::to_string(max_cpu) +
                        (device_side ? " or '-'" : ""));
        e.cpu = int32_t(c);
    }
    auto op = op_from(f[2]);
    if (!op)
        return fail("unknown operation " + shown(f[2]) +
                    " (map unmap sync flush inv wait txn xlate idle)");
    e.op = *op;
    if (device_side && is_mapping_op(e.op))
        return fail(std::string(op_name(e.op)) +
                    " in a device-side trace (the device sees no map or unmap)");
    if (!device_side && e.op == Op::xlate)
        return fail("xlate in a trace of side=cpu");
    unsigned seen = 0;
    for (size_t i = 3; i < f.size(); i++) {
        std::string_view kv = f[i];
        size_t eq = kv.find('=');
        if (eq == std::string_view::npos || eq == 0)
            return fail("field " + shown(kv) + ": needs KEY=VALUE");
        std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
        static constexpr std::array<std::string_view, 8> keys{"size", "dev", "mask", "iova",
                                                              "pa",   "dur", "sid",  "g"};
        size_t idx = keys.size();
        for (size_t j = 0; j < keys.size(); j++)
            if (keys[j] == k)
                idx = j;
        if (idx == keys.size())
            return fail("unknown key " + shown(k) + " (size dev mask iova pa dur sid g)");
        if (seen & (1u << idx))
            return fail("key " + std::string(k) + " given twice");
        seen |= 1u << idx;
        bool ok = true;
        switch (idx) {
        case 0:
            ok = parse_u64(v, e.size) && e.size > 0;
            e.has_size = true;
            break;
        case 1:
            ok = word_ok(v);
            e.dev = std::string(v);
            break;
        case 2:  // DMA_BIT_MASK(n), n from 32 (as --dma-mask-bits) to 64
            ok = hex(v, e.mask) && e.mask >= 0xffffffff && (e.mask & (e.mask + 1)) == 0;
            e.has_mask = true;
            break;
        case 3:
            ok = hex(v, e.iova);
            e.has_iova = true;
            break;
        case 4:
            ok = hex(v, e.pa);
            e.has_pa = true;
            break;
        case 5:
            ok = parse_u64(v, e.dur);
            e.has_dur = true;
            break;
        case 6:
            ok = hex(v, e.sid) && e.sid <= 0xffff;
            e.has_sid = true;
            break;
        case 7:
            ok = word_ok(v);
            e.gran = std::string(v);
            break;
        }
        if (!ok)
            return fail(std::string(k) + "=" + shown(v) + ": " +
                        (idx == 0 || idx == 5
                             ? "needs a decimal number" + std::string(idx == 0 ? " above 0" : "")
                         : idx == 1 || idx == 7 ? "needs a word of [A-Za-z0-9:._/-], 64 at most"
                         : idx == 6             ? "needs a hex source-id 0x0..0xffff"
                         : idx == 2 ? "needs a DMA mask of 32 to 64 bits, 2^n - 1 in hex "
                                      "(0xffffffff)"
                                    : "needs a hex number 0x..."));
    }
    if (is_mapping_op(e.op) && !e.has_size)
        return fail(std::string(op_name(e.op)) + " without size=: every map and unmap needs its "
                                                 "size in bytes");
    if (e.ts > max_ts || e.dur > max_ts - e.ts)
        return fail("timestamp " + std::to_string(e.ts) + (e.has_dur ? " + dur" : "") +
                    ": ends after " + std::to_string(max_ts) +
                    " ns (2^42, 73 minutes; a recording's clock starts near 0)");
    size_t slot = size_t(e.cpu + 1);
    if (last_ts_.size() <= slot)
        last_ts_.resize(slot + 1, 0);
    if (e.ts < last_ts_[slot])
        return fail("out of order: timestamp " + std::to_string(e.ts) +
                    " before the previous event of " +
                    (e.cpu < 0 ? std::string("the device side") : "CPU " + std::to_string(e.cpu)) +
                    " at " + std::to_string(last_ts_[slot]));
    last_ts_[slot] = e.ts;
    return true;
}

bool Parser::line(std::string_view text, std::optional<Event> &out)
{
    out.reset();
    if (failed_)
        return false;
    lineno_++;
    if (text.size() > max_line)
        return fail("line longer than " + std::to_string(max_line) + " bytes");
    for (char c : text)
        if (c == '\0' || c == '\r')
            return fail(c ? "carriage return in a line" : "NUL byte in a line");
    if (!have_header_) {
        auto f = fields(text);
        if (f.empty() || f[0] != "viommu-trace")
            return fail("not a viommu-lab trace: the first line must be 'viommu-trace VERSION "
                        "...', got " +
                        shown(text));
        uint64_t v;
        if (f.size() < 2 || !parse_u64(f[1], v))
            return fail("header: needs a version number after 'viommu-trace'");
        if (v != format_version)
            return fail("format version " + std::to_string(v) +
                        " is not supported (this reader knows version " +
                        std::to_string(format_version) + ")");
        header_.version = unsigned(v);
        for (size_t i = 2; i < f.size(); i++) {
            size_t eq = f[i].find('=');
            if (eq == std::string_view::npos)
                return fail("header field " + shown(f[i]) + ": needs KEY=VALUE");
            std::string_view k = f[i].substr(0, eq), val = f[i].substr(eq + 1);
            if (!word_ok(val))
                return fail("header " + std::string(k) + "=" + shown(val) + ": not a word");
            if (k == "source")
                header_.source = std::string(val);
            else if (k == "side") {
                if (val != "cpu" && val != "device")
                    return fail("header side=" + shown(val) + ": needs cpu or device");
                header_.side = std::string(val);
            } else if (k == "unit")
                header_.unit = std::string(val);
            else if (k == "window") {
                if (!parse_u64(val, header_.window) || header_.window > kMaxOpsPerCpu)
                    return fail("header window=" + shown(val) +
                                ": needs a whole number from 0 to " +
                                std::to_string(kMaxOpsPerCpu) + " (as --warmup)");
            } else
                return fail("unknown header key " + shown(k) + " (source side unit window)");
        }
        have_header_ = true;
        return true;
    }
    size_t i = 0;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
        i++;
    if (i == text.size() || text[i] == '#')
        return true;
    if (ended_)
        return fail("record after the end record");
    if (text.substr(i, 4) == "end " || text.substr(i) == "end") {
        auto f = fields(text);
        uint64_t n;
        if (f.size() != 2 || !parse_u64(f[1], n))
            return fail("end record: needs 'end COUNT'");
        if (n != events_)
            return fail("end record counts " + std::to_string(n) + " events, the file has " +
                        std::to_string(events_) + " (records lost or added)");
        ended_ = true;
        return true;
    }
    Event e;
    e.line = lineno_;
    if (!parse_event(text, e))
        return false;
    events_++;
    out = std::move(e);
    return true;
}

bool Parser::finish()
{
    if (failed_)
        return false;
    if (!have_header_)
        return fail("empty file: no 'viommu-trace VERSION' header");
    if (!ended_)
        return fail("truncated: no end record after the last event (line " +
                    std::to_string(lineno_) + ")");
    return true;
}

std::optional<Trace> parse(std::string_view text, const std::string &name, std::string *error)
{
    Parser p(name);
    Trace t;
    size_t pos = 0;
    bool ok = true;
    while (ok && pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) {
            // a last line without its newline: the file was cut short
            if (error)
                *error = name + ":" + std::to_string(p.lineno() + 1) +
                         ": truncated: the last line has no newline";
            return std::nullopt;
        }
        std::optional<Event> e;
        ok = p.line(text.substr(pos, nl - pos), e);
        if (e)
            t.events.push_back(std::move(*e));
        pos = nl + 1;
    }
    if (!ok || !p.finish()) {
        if (error)
            *error = p.error();
        return std::nullopt;
    }
    t.header = p.header();
    return t;
}

std::optional<Trace> read_file(const std::string &path, std::string *error)
{
    // The header first: a file given by mistake (a perf or ftrace dump,
    // /dev/zero) is refused before the rest of it is read.
    std::string header_error;
    bool checked = false;
    auto header_ok = [&](std::string_view read) {
        if (checked || (read.size() <= max_line && read.find('\n') == std::string_view::npos))
            return true;  // checked, or no whole first line yet
        checked = true;
        Parser p(path);
        std::optional<Event> e;
        if (p.line(read.substr(0, read.find('\n')), e))
            return true;
        header_error = p.error();
        return false;
    };
    std::string why;
    const std::optional<std::string> text = read_text_file(path, why, max_file_bytes, header_ok);
    if (!text || !header_error.empty()) {
        if (error)
            *error = text ? header_error : path + ": cannot open the trace: " + why;
        return std::nullopt;
    }
    return parse(*text, path, error);
}

std::string format_event(const Event &e)
{
    std::string s = std::to_string(e.ts) + ' ' + (e.cpu < 0 ? "-" : std::to_string(e.cpu)) + ' ' +
                    std::string(op_name(e.op));
    if (e.has_size)
        s += " size=" + std::to_string(e.size);
    if (!e.dev.empty())
        s += " dev=" + e.dev;
    if (e.has_mask)
        s += " mask=" + hexs(e.mask);
    if (e.has_iova)
        s += " iova=" + hexs(e.iova);
    if (e.has_pa)
        s += " pa=" + hexs(e.pa);
    if (e.has_dur)
        s += " dur=" + std::to_string(e.dur);
    if (e.has_sid)
        s += " sid=" + hexs(e.sid);
    if (!e.gran.empty())
        s += " g=" + e.gran;
    return s;
}

Writer::Writer(std::ostream &out, const Header &h) : out_(out)
{
    out_ << "viommu-trace " << format_version << " source=" << h.source << " side=" << h.side;
    if (!h.unit.empty())
        out_ << " unit=" << h.unit;
    if (h.window)
        out_ << " window=" << h.window;
    out_ << '\n';
}

void Writer::write(const Event &e)
{
    out_ << format_event(e) << '\n';
    n_++;
}

void Writer::finish()
{
    out_ << "end " << n_ << '\n';
    out_.flush();
}

}  // namespace viommu::sim::trace
