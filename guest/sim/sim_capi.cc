// SPDX-License-Identifier: GPL-2.0-or-later
// The C API of include/viommu/sim.h.  Nothing here lets an exception out.
#include <cstddef>
#include <viommu/sim.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "params.hpp"
#include "workload.hpp"
#ifdef VIOMMU_SIM_HAVE_IOVA
#include "simulator.hpp"
#endif

using viommu::sim::Params;
using viommu::sim::Step;
using viommu::sim::Workload;

struct ViommuSimParams {
    Params p;
    std::string scratch;
};

struct ViommuSimWorkload {
    std::unique_ptr<Workload> w;
    std::vector<Step> steps;
};

namespace {

// `s` into buf[len] as a C string, cut to fit (nothing written when len is
// 0); returns the length of all of `s`.
long copy_out(const std::string &s, char *buf, size_t len)
{
    if (buf && len) {
        size_t n = std::min(s.size(), len - 1);
        std::memcpy(buf, s.data(), n);
        buf[n] = '\0';
    }
    return static_cast<long>(s.size());
}

int report(const std::string &msg, char *err, size_t errlen)
{
    copy_out(msg, err, errlen);
    return -1;
}

}  // namespace

extern "C" {

ViommuSimParams *viommu_sim_params_new(void)
{
    try {
        return std::make_unique<ViommuSimParams>().release();
    } catch (...) {
        return nullptr;
    }
}

void viommu_sim_params_free(ViommuSimParams *p)
{
    delete p;
}

int viommu_sim_params_set(ViommuSimParams *p, const char *name, const char *value, char *err,
                          size_t errlen)
{
    if (!p || !name || !value)
        return report("viommu_sim_params_set: NULL argument", err, errlen);
    try {
        std::string e;
        return p->p.set(name, value, &e) ? 0 : report(e, err, errlen);
    } catch (...) {
        return report("out of memory", err, errlen);
    }
}

int viommu_sim_params_load_case(ViommuSimParams *p, const char *path, const char *config, char *err,
                                size_t errlen)
{
    if (!p || !path)
        return report("viommu_sim_params_load_case: NULL argument", err, errlen);
    try {
        std::string e;
        return viommu::sim::load_case(path, config ? config : "", p->p, &e)
                   ? 0
                   : report(e, err, errlen);
    } catch (...) {
        return report("out of memory", err, errlen);
    }
}

int viommu_sim_params_check(const ViommuSimParams *p, char *err, size_t errlen)
{
    if (!p)
        return report("viommu_sim_params_check: NULL argument", err, errlen);
    try {
        std::string e;
        return p->p.validate(&e) ? 0 : report(e, err, errlen);
    } catch (...) {
        return report("out of memory", err, errlen);
    }
}

const char *viommu_sim_params_get(ViommuSimParams *p, const char *name)
{
    if (!p || !name || !Params::known(name))
        return nullptr;
    try {
        // the value as the JSON of every parameter has it
        std::string j = p->p.json();
        std::string key = "\"" + std::string(name) + "\":";
        size_t at = j.find(key);
        if (at == std::string::npos)
            return nullptr;
        at += key.size();
        size_t end;
        if (j[at] == '"') {
            end = j.find('"', at + 1);
            p->scratch = j.substr(at + 1, end - at - 1);
        } else {
            end = j.find_first_of(",}", at);
            p->scratch = j.substr(at, end - at);
        }
        return p->scratch.c_str();
    } catch (...) {
        return nullptr;
    }
}

const char *viommu_sim_cases_dir(void)
{
    static const std::string dir = viommu::sim::cases_dir();
    return dir.c_str();
}

ViommuSimWorkload *viommu_sim_workload_from_params(const ViommuSimParams *p)
{
    if (!p)
        return nullptr;
    try {
        auto w = Workload::create(p->p);
        return w ? std::make_unique<ViommuSimWorkload>(ViommuSimWorkload{std::move(w), {}})
                       .release()
                 : nullptr;
    } catch (...) {
        return nullptr;
    }
}

size_t viommu_sim_workload_count(void)
{
    return Workload::names().size();
}

const char *viommu_sim_workload_name(size_t i)
{
    return i < Workload::names().size() ? Workload::names()[i].data() : nullptr;
}

ViommuSimWorkload *viommu_sim_workload_new(const char *name, unsigned ncpus, uint64_t seed)
{
    if (!name)
        return nullptr;
    try {
        auto w = Workload::create(name, ncpus, seed);
        return w ? std::make_unique<ViommuSimWorkload>(ViommuSimWorkload{std::move(w), {}})
                       .release()
                 : nullptr;
    } catch (...) {
        return nullptr;
    }
}

void viommu_sim_workload_free(ViommuSimWorkload *w)
{
    delete w;
}

unsigned viommu_sim_workload_cpus(const ViommuSimWorkload *w)
{
    return w ? w->w->info().cpus : 0;
}
unsigned viommu_sim_workload_slots(const ViommuSimWorkload *w)
{
    return w ? w->w->info().slots_per_cpu : 0;
}

unsigned viommu_sim_workload_granule_shift(const ViommuSimWorkload *w)
{
    return w ? w->w->info().granule_shift : 0;
}

size_t viommu_sim_workload_device_count(const ViommuSimWorkload *w)
{
    return w ? w->w->info().devices.size() : 0;
}

uint64_t viommu_sim_workload_device_mask(const ViommuSimWorkload *w, size_t i)
{
    return w && i < w->w->info().devices.size() ? w->w->info().devices[i].dma_mask : 0;
}

unsigned viommu_sim_workload_device_domain(const ViommuSimWorkload *w, size_t i)
{
    return w && i < w->w->info().devices.size() ? w->w->info().devices[i].domain : 0;
}

static int copy_steps(ViommuSimWorkload *w, ViommuSimStep *steps, size_t max)
{
    size_t n = w->steps.size();
    if (steps)
        std::memcpy(steps, w->steps.data(), std::min(n, max) * sizeof(Step));
    w->steps.clear();
    return static_cast<int>(n);
}

// The steps `gen` (Workload::setup or Workload::next) gives CPU `cpu`,
// copied out.
static int workload_steps(ViommuSimWorkload *w, unsigned cpu, ViommuSimStep *steps, size_t max,
                          void (Workload::*gen)(unsigned, std::vector<Step> &))
{
    if (!w || cpu >= w->w->info().cpus || (!steps && max))
        return -1;
    try {
        w->steps.clear();
        ((*w->w).*gen)(cpu, w->steps);
    } catch (...) {
        return -1;
    }
    return copy_steps(w, steps, max);
}

int viommu_sim_workload_setup(ViommuSimWorkload *w, unsigned cpu, ViommuSimStep *steps, size_t max)
{
    return workload_steps(w, cpu, steps, max, &Workload::setup);
}

int viommu_sim_workload_next(ViommuSimWorkload *w, unsigned cpu, ViommuSimStep *steps, size_t max)
{
    return workload_steps(w, cpu, steps, max, &Workload::next);
}

long viommu_sim_run_json(const ViommuSimConfig *cfg, char *buf, size_t len)
{
#ifdef VIOMMU_SIM_HAVE_IOVA
    if (!cfg || (!buf && len))
        return -1;
    try {
        viommu::sim::SimConfig c;
        auto set = [&c](const char *k, const std::string &v) { return c.set(k, v, nullptr); };
        bool ok = set("workload", cfg->workload ? cfg->workload : "memcached");
        if (cfg->allocator)
            ok = ok && set("allocator", cfg->allocator);
        if (cfg->flush)
            ok = ok && set("flush", cfg->flush);
        if (cfg->invq) {
            std::string q = cfg->invq;
            if (q == "smmu-spinlock" || q == "smmu-lockfree") {
                ok = ok && set("iommu", "smmuv3") &&
                     set("cmdq", q == "smmu-spinlock" ? "spinlock" : "cmpxchg");
            } else {
                ok = ok && set("iommu", q);
            }
        }
        if (cfg->dma)
            ok = ok && set("dma", cfg->dma);
        if (cfg->cpus)
            ok = ok && set("cpus", std::to_string(cfg->cpus));
        c.seed = cfg->seed;
        if (cfg->ops)
            ok = ok && set("ops-per-cpu", std::to_string(std::max<uint64_t>(1, cfg->ops / c.cpus)));
        if (!ok)
            return -1;
        auto r = viommu::sim::simulate(c);
        if (!r)
            return -1;
        return copy_out(r->json(), buf, len);
    } catch (...) {
        return -1;
    }
#else
    (void)cfg, (void)buf, (void)len;
    return -1;
#endif
}

long viommu_sim_run_params_json(const ViommuSimParams *p, char *buf, size_t len)
{
#ifdef VIOMMU_SIM_HAVE_IOVA
    if (!p || (!buf && len))
        return -1;
    try {
        auto r = viommu::sim::simulate(p->p);
        if (!r)
            return -1;
        return copy_out(r->json(), buf, len);
    } catch (...) {
        return -1;
    }
#else
    (void)p, (void)buf, (void)len;
    return -1;
#endif
}

}  // extern "C"
