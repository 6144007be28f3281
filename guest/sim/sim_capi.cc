// SPDX-License-Identifier: GPL-2.0-or-later
// The C API of include/viommu/sim.h.  Nothing here lets an exception out.
#include <cstddef>
#include <viommu/sim.h>

#include <cstring>
#include <memory>
#include <string>

#include "workload.hpp"
#ifdef VIOMMU_SIM_HAVE_IOVA
#include "simulator.hpp"
#endif

using viommu::sim::Step;
using viommu::sim::Workload;

struct ViommuSimWorkload {
    std::unique_ptr<Workload> w;
    std::vector<Step> steps;
};

extern "C" {

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
        return w ? std::make_unique<ViommuSimWorkload>(std::move(w), std::vector<Step>{}).release()
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

int viommu_sim_workload_setup(ViommuSimWorkload *w, unsigned cpu, ViommuSimStep *steps, size_t max)
{
    if (!w || cpu >= w->w->info().cpus || (!steps && max))
        return -1;
    try {
        w->steps.clear();
        w->w->setup(cpu, w->steps);
    } catch (...) {
        return -1;
    }
    return copy_steps(w, steps, max);
}

int viommu_sim_workload_next(ViommuSimWorkload *w, unsigned cpu, ViommuSimStep *steps, size_t max)
{
    if (!w || cpu >= w->w->info().cpus || (!steps && max))
        return -1;
    try {
        w->steps.clear();
        w->w->next(cpu, w->steps);
    } catch (...) {
        return -1;
    }
    return copy_steps(w, steps, max);
}

long viommu_sim_run_json(const ViommuSimConfig *cfg, char *buf, size_t len)
{
#ifdef VIOMMU_SIM_HAVE_IOVA
    if (!cfg || (!buf && len))
        return -1;
    try {
        viommu::sim::SimConfig c;
        if (cfg->workload)
            c.workload = cfg->workload;
        if (cfg->allocator)
            c.allocator = cfg->allocator;
        if (cfg->flush)
            c.flush = cfg->flush;
        if (cfg->invq)
            c.invq = cfg->invq;
        if (cfg->dma)
            c.dma = cfg->dma;
        c.cpus = cfg->cpus;
        c.seed = cfg->seed;
        c.ops = cfg->ops;
        auto r = viommu::sim::simulate(c);
        if (!r)
            return -1;
        std::string j = r->json();
        if (len) {
            size_t n = std::min(j.size(), len - 1);
            std::memcpy(buf, j.data(), n);
            buf[n] = '\0';
        }
        return static_cast<long>(j.size());
    } catch (...) {
        return -1;
    }
#else
    (void)cfg, (void)buf, (void)len;
    return -1;
#endif
}

}  // extern "C"
