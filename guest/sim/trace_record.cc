// SPDX-License-Identifier: GPL-2.0-or-later
#include "trace_record.hpp"

#include <fstream>

namespace viommu::sim {

void TraceRecorder::begin(const WorkloadInfo &info)
{
    info_ = info;
    trace_ = {};
    trace_.header.source = "sim";
    trace_.header.unit = info.unit;
    last_.assign(info.cpus, 0);
    txns_.assign(info.cpus, 0);
}

void TraceRecorder::op(Kind k, unsigned cpu, uint8_t dev, uint64_t iova, uint64_t bytes,
                       Nanos start, Nanos end)
{
    if (cpu >= last_.size())
        return;
    last_[cpu] = end;
    trace::Event e;
    e.ts = start;
    e.cpu = int32_t(cpu);
    switch (k) {
    case map:
    case unmap: {
        e.op = k == map ? trace::Op::map : trace::Op::unmap;
        e.size = bytes;
        e.has_size = true;
        if (dev < info_.devices.size()) {
            e.dev = info_.devices[dev].name;
            if (k == map) {
                e.mask = info_.devices[dev].dma_mask;
                e.has_mask = true;
            }
        }
        e.iova = iova;
        e.has_iova = true;
        e.dur = end - start;
        e.has_dur = true;
        break;
    }
    case flush:
        e.op = trace::Op::flush;
        e.dur = end - start;
        e.has_dur = true;
        break;
    case txn:
        e.op = trace::Op::txn;
        txns_[cpu]++;
        break;
    }
    trace_.events.push_back(std::move(e));
}

void TraceRecorder::aligned(Nanos now)
{
    for (size_t c = 0; c < last_.size(); c++) {
        if (now > last_[c]) {
            trace::Event e;
            e.ts = last_[c];
            e.cpu = int32_t(c);
            e.op = trace::Op::idle;
            e.dur = now - last_[c];
            e.has_dur = true;
            trace_.events.push_back(std::move(e));
        }
        last_[c] = now;
    }
}

void TraceRecorder::window_start()
{
    trace_.header.window = txns_.empty() ? 0 : txns_[0];
}

bool TraceRecorder::write(const std::string &path, std::string *error) const
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) {
        if (error)
            *error = "--record " + path + ": cannot write the file";
        return false;
    }
    trace::Writer w(out, trace_.header);
    for (const trace::Event &e : trace_.events)
        w.write(e);
    w.finish();
    if (!out) {
        if (error)
            *error = "--record " + path + ": write failed";
        return false;
    }
    return true;
}

}  // namespace viommu::sim
