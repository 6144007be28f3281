// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target: the trace parser (guest/sim/trace_format.hpp) and the
// replay built from what it accepts (guest/sim/trace_workload.hpp).
//
// The first byte picks how the rest is fed: 0 as a whole file; 1 after a
// valid header; 2 after a valid header, line by line, closed by an end
// record that counts what was accepted (so the replay is reached).
// Oracles (docs/fuzzing.rst): a rejected input has a message naming the
// file and a line; an accepted one writes back to text that reads as the
// same events; the replay built from it on 1-8 CPUs emits only steps whose
// slot, target CPU and device lie inside what it declares.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "fuzz_input.hpp"
#include "params.hpp"
#include "trace_format.hpp"
#include "trace_workload.hpp"

using namespace viommu::sim;

namespace {

void check_replay(const trace::Trace &t, unsigned cpus)
{
    Params p;
    std::string err;
    if (!p.set("cpus", std::to_string(cpus), &err))
        fuzz::fail("cpus");
    p.warmup = 0;
    auto w = create_trace_workload(p, t, "fuzz", &err);
    if (!w) {
        FUZZ_CHECK(err.rfind("fuzz", 0) == 0, err.size());
        return;
    }
    const WorkloadInfo &info = w->info();
    FUZZ_CHECK(info.cpus == cpus, info.cpus, cpus);
    for (unsigned c = 0; c < cpus; c++)
        for (unsigned i = 0; i < 8; i++) {
            std::vector<Step> out;
            w->next(c, out);
            FUZZ_CHECK(!out.empty(), c, i);
            for (const Step &s : out) {
                FUZZ_CHECK(s.kind <= VIOMMU_SIM_UNMAP_POST, s.kind);
                if (s.kind == VIOMMU_SIM_MAP || s.kind == VIOMMU_SIM_UNMAP)
                    FUZZ_CHECK(s.arg < info.slots_per_cpu, s.arg, info.slots_per_cpu);
                if (s.kind == VIOMMU_SIM_MAP_POST)
                    FUZZ_CHECK(s.arg < cpus && s.arg != c, s.arg, c);
                if (s.kind == VIOMMU_SIM_MAP || s.kind == VIOMMU_SIM_MAP_POST)
                    FUZZ_CHECK(s.device < info.devices.size() && s.value > 0, s.device);
            }
        }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0] % 3, cpus = 1 + (data[0] >> 2) % 8;
    std::string_view body(reinterpret_cast<const char *>(data + 1), size - 1);
    std::string err;
    std::optional<trace::Trace> t;
    if (mode == 2) {
        trace::Parser p("fuzz");
        trace::Trace tr;
        std::optional<trace::Event> e;
        bool ok = p.line("viommu-trace 1 unit=t", e);
        size_t pos = 0, events = 0;
        while (ok && pos < body.size()) {
            size_t nl = body.find('\n', pos);
            std::string_view line =
                body.substr(pos, nl == std::string_view::npos ? body.size() - pos : nl - pos);
            if (line.substr(0, 3) == "end")
                break;
            ok = p.line(line, e);
            if (e) {
                tr.events.push_back(*e);
                events++;
            }
            pos = nl == std::string_view::npos ? body.size() : nl + 1;
        }
        if (ok)
            ok = p.line("end " + std::to_string(events), e) && p.finish();
        if (!ok) {
            FUZZ_CHECK(p.error().rfind("fuzz:", 0) == 0, p.error().size());
            return 0;
        }
        tr.header = p.header();
        t = std::move(tr);
    } else {
        std::string text = mode == 1 ? "viommu-trace 1\n" + std::string(body) : std::string(body);
        t = trace::parse(text, "fuzz", &err);
        if (!t) {
            FUZZ_CHECK(err.rfind("fuzz:", 0) == 0, err.size());
            return 0;
        }
    }
    // what was accepted writes back to the same events
    std::ostringstream out;
    trace::Writer w(out, t->header);
    for (const trace::Event &e : t->events)
        w.write(e);
    w.finish();
    auto again = trace::parse(out.str(), "rewritten", &err);
    FUZZ_CHECK(again && again->events.size() == t->events.size(), t->events.size());
    for (size_t i = 0; i < t->events.size(); i++)
        FUZZ_CHECK(trace::format_event(again->events[i]) == trace::format_event(t->events[i]), i);
    check_replay(*t, cpus);
    return 0;
}
