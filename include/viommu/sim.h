/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-lab contention simulator: C API.
 *
 * Three parts:
 *  - parameters: every parameter of a setup by name, as on viommu-sim's
 *    command line, from a case file (the cases/ directory) or one by one
 *    (docs/simulation.rst, "Parameters");
 *  - workload generators: the per-CPU stream of DMA map/unmap steps and
 *    non-IOMMU work of a setup (docs/workloads.rst), so a C caller (a
 *    qtest driving viommu-vtd, a tool) can replay them;
 *  - whole simulation runs (docs/simulation.rst), with results as JSON.
 *
 * Every function returns 0 / a non-NULL handle on success and never
 * aborts or throws on bad input.
 */
#ifndef VIOMMU_SIM_H
#define VIOMMU_SIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ViommuSimStepKind {
    VIOMMU_SIM_WORK = 0,          /* value: nanoseconds of non-IOMMU CPU work */
    VIOMMU_SIM_MAP = 1,           /* map value bytes for device into slot arg */
    VIOMMU_SIM_UNMAP = 2,         /* unmap what slot arg holds */
    VIOMMU_SIM_MAP_POST = 3,      /* map value bytes for device; CPU arg unmaps it
                                   * later (its completion mailbox) */
    VIOMMU_SIM_UNMAP_MAILBOX = 4, /* unmap up to value (0: all) mailbox entries */
    VIOMMU_SIM_UNMAP_POST = 5,    /* hand what slot arg holds to CPU value's
                                   * mailbox (its completion interrupt) */
} ViommuSimStepKind;

typedef struct ViommuSimStep {
    uint8_t kind;                 /* ViommuSimStepKind */
    uint8_t device;               /* index into the workload's devices */
    uint32_t arg;                 /* slot or target CPU */
    uint64_t value;               /* bytes, nanoseconds or count */
} ViommuSimStep;

typedef struct ViommuSimParams ViommuSimParams;

/* Every parameter at its default. */
ViommuSimParams *viommu_sim_params_new(void);
void viommu_sim_params_free(ViommuSimParams *p);
/* Set parameter @name (as on the command line, without "--") to @value
 * ("128", "64K", "10ms", "0-3"); 0, or -1 with a one-line message naming
 * the parameter in @err (at most @errlen bytes, NUL included). */
int viommu_sim_params_set(ViommuSimParams *p, const char *name, const char *value,
                          char *err, size_t errlen);
/* Load case file @path_or_name (a path, or a name in the cases directory)
 * and, if @config is not NULL, one of its configurations; parameters set
 * before are overridden, later viommu_sim_params_set() calls override it. */
int viommu_sim_params_load_case(ViommuSimParams *p, const char *path_or_name,
                                const char *config, char *err, size_t errlen);
/* Every parameter consistent with the others: 0, or -1 and @err. */
int viommu_sim_params_check(const ViommuSimParams *p, char *err, size_t errlen);
/* The value of parameter @name as text (NULL if unknown); valid until the
 * next call on @p. */
const char *viommu_sim_params_get(ViommuSimParams *p, const char *name);
/* The directory case names are looked up in. */
const char *viommu_sim_cases_dir(void);

typedef struct ViommuSimWorkload ViommuSimWorkload;

size_t viommu_sim_workload_count(void);
const char *viommu_sim_workload_name(size_t i);   /* NULL past the end */

/* Workload kind @name (block, nic, forward, map-bench, memcached, nginx)
 * with every other parameter at its default; @ncpus 0: the default. */
ViommuSimWorkload *viommu_sim_workload_new(const char *name, unsigned ncpus, uint64_t seed);
/* The workload @p describes; NULL if @p is inconsistent. */
ViommuSimWorkload *viommu_sim_workload_from_params(const ViommuSimParams *p);
void viommu_sim_workload_free(ViommuSimWorkload *w);
unsigned viommu_sim_workload_cpus(const ViommuSimWorkload *w);
unsigned viommu_sim_workload_slots(const ViommuSimWorkload *w);
unsigned viommu_sim_workload_granule_shift(const ViommuSimWorkload *w);
size_t viommu_sim_workload_device_count(const ViommuSimWorkload *w);
/* DMA mask of device @i, 0 if out of range. */
uint64_t viommu_sim_workload_device_mask(const ViommuSimWorkload *w, size_t i);
/* IOMMU domain (own IOVA space) of device @i: devices with the same number
 * share one; 0 if out of range.  Callers that model one domain may ignore it. */
unsigned viommu_sim_workload_device_domain(const ViommuSimWorkload *w, size_t i);

/* Steps of @cpu's setup (before the measured run) or next transaction.
 * Writes at most @max steps; returns the full number of steps (call again
 * with a larger buffer if it exceeds @max: the steps are then lost), or
 * -1 on bad arguments. */
int viommu_sim_workload_setup(ViommuSimWorkload *w, unsigned cpu, ViommuSimStep *steps, size_t max);
int viommu_sim_workload_next(ViommuSimWorkload *w, unsigned cpu, ViommuSimStep *steps, size_t max);

typedef struct ViommuSimConfig {
    const char *workload;         /* NULL: "memcached" */
    const char *allocator;        /* allocator variant or "none"; NULL: "viommu-lab" */
    const char *flush;            /* flush policy; NULL: "flush-queue" */
    const char *invq;             /* "vtd", "smmu-spinlock", "smmu-lockfree"; NULL: "vtd" */
    const char *dma;              /* "sac", "sac-flush", "sac-once", "forcedac"; NULL: "sac" */
    unsigned cpus;                /* 0: workload default */
    uint64_t seed;
    uint64_t ops;                 /* measured transactions; 0: default */
} ViommuSimConfig;

/* Runs one simulation and writes its result as JSON (docs/simulation.rst)
 * into @buf (at most @len bytes including the NUL).  Returns the full JSON
 * length without the NUL, as snprintf, or -1 if the configuration is bad.
 * @cfg's fields are parameters of the same names (invq: "vtd" is --iommu
 * vtd, "smmu-spinlock" and "smmu-lockfree" --iommu smmuv3 with --cmdq
 * spinlock and cmpxchg; ops: measured operations in all). */
long viommu_sim_run_json(const ViommuSimConfig *cfg, char *buf, size_t len);
/* The same for every parameter of @p. */
long viommu_sim_run_params_json(const ViommuSimParams *p, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
