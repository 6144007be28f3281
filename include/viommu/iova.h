/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-lab guest IOVA allocator: C API for C callers (qtests, tools).
 *
 * A handle bundles an allocator variant (by name, see
 * viommu_iova_variant_name()), a flush policy, and the dma-iommu layer.
 * It runs either on real clocks with one CPU id per calling thread, or
 * (manual_clock) on a virtual clock that only moves when told, with the
 * current CPU set by the caller: what a test replaying N simulated CPUs on
 * one thread needs.  The flush policy's invalidations go to the caller's
 * callbacks (flush_ops), or are only counted.
 *
 * Sizes are in pages of the handle's granule unless a name says bytes.
 * Every function returns a ViommuIovaStatus (0 on success) and never
 * aborts on bad input.
 */
#ifndef VIOMMU_IOVA_H
#define VIOMMU_IOVA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ViommuIovaStatus {
    VIOMMU_IOVA_OK = 0,
    VIOMMU_IOVA_NO_SPACE = 1,
    VIOMMU_IOVA_BAD_SIZE = 2,
    VIOMMU_IOVA_BAD_LIMIT = 3,
    VIOMMU_IOVA_NOT_ALLOCATED = 4,
    VIOMMU_IOVA_BAD_VARIANT = 5,
    VIOMMU_IOVA_BAD_ARG = 6,
    VIOMMU_IOVA_BUSY = 7,       /* reserve: the range overlaps one in use */
} ViommuIovaStatus;

/* The flush policy's invalidations.  Each must invalidate and wait for
 * completion before returning; the policy frees the ranges afterwards. */
typedef struct ViommuIovaFlushOps {
    /* Strict mode: [iova, iova + bytes) was unmapped. */
    void (*flush_range)(void *opaque, uint64_t iova, uint64_t bytes);
    /* Batched modes: everything unmapped so far.  @ranges: how many
     * unmapped ranges the policy frees after it (the descriptors a queue
     * would write to invalidate them one by one). */
    void (*flush_all)(void *opaque, uint64_t ranges);
} ViommuIovaFlushOps;

typedef struct ViommuIovaConfig {
    const char *variant;        /* "linux-4.4" ... "viommu-lab"; NULL: viommu-lab */
    const char *flush_policy;   /* "strict", "global-list", "percpu-defer",
                                 * "flush-queue"; NULL: strict */
    unsigned granule_shift;     /* 0: 12 */
    unsigned ncpus;             /* 0: 1 */
    uint64_t start_pfn;         /* 0: 1 */
    bool forcedac;
    bool sac_once;              /* 6.6 behaviour */
    bool stats;
    /* Members below were added later; a zeroed member keeps the old
     * behaviour. */
    bool sac_flush;             /* the 32-bit attempt flushes the caches on
                                 * failure too (before 4.15) */
    bool manual_clock;          /* virtual clock and caller-chosen CPU */
    uint64_t end_pfn;           /* highest pfn + 1; 0: 48-bit space */
    const ViommuIovaFlushOps *flush_ops;   /* NULL: count flushes only */
    void *flush_opaque;
} ViommuIovaConfig;

typedef struct ViommuIova ViommuIova;

/* Number of variants and their names (NULL past the end). */
size_t viommu_iova_variant_count(void);
const char *viommu_iova_variant_name(size_t i);
const char *viommu_iova_status_name(ViommuIovaStatus s);

ViommuIovaStatus viommu_iova_new(const ViommuIovaConfig *cfg, ViommuIova **out);
/* Drains the flush policy first: its flush callbacks may still run. */
void viommu_iova_destroy(ViommuIova *h);

/* Manual clock only (BAD_ARG otherwise): the CPU the next calls run on
 * (below ncpus), and the virtual clock in ns.  Moving the clock fires due
 * timers (flush-queue and global-list 10 ms flushes, 6.7 depot trim) on
 * the current CPU, in deadline order; it never moves backwards. */
ViommuIovaStatus viommu_iova_set_cpu(ViommuIova *h, unsigned cpu);
ViommuIovaStatus viommu_iova_set_time(ViommuIova *h, uint64_t ns);
ViommuIovaStatus viommu_iova_advance(ViommuIova *h, uint64_t ns);
/* The handle's clock (real or virtual), in ns; 0 for a NULL handle. */
uint64_t viommu_iova_now(ViommuIova *h);

/* Allocator level: alloc_iova_fast()/free_iova_fast(). */
ViommuIovaStatus viommu_iova_alloc(ViommuIova *h, uint64_t pages, uint64_t limit_pfn,
                                   bool flush_rcache, uint64_t *pfn);
ViommuIovaStatus viommu_iova_release(ViommuIova *h, uint64_t pfn, uint64_t pages);
/* reserve_iova(): take pfns [pfn_lo, pfn_hi] out of the domain for good
 * (Linux reserves the MSI window 0xfee00000-0xfeefffff in every DMA
 * domain).  BUSY if any of it is allocated or cached (counter
 * bad_reserve), BAD_SIZE if pfn_hi < pfn_lo, BAD_LIMIT outside the domain. */
ViommuIovaStatus viommu_iova_reserve(ViommuIova *h, uint64_t pfn_lo, uint64_t pfn_hi);
/* free_cpu_cached_iovas() on every CPU (counter cache_flushes). */
void viommu_iova_flush_caches(ViommuIova *h);

/* dma-iommu level: byte sizes and addresses, through the flush policy.
 * viommu_iova_map() maps for a fresh device each time; _map_dev() keeps
 * per-device state (the 6.6 "SAC failed" flag) for devices 0..63. */
ViommuIovaStatus viommu_iova_map(ViommuIova *h, uint64_t dma_mask, uint64_t bytes,
                                 uint64_t *iova);
ViommuIovaStatus viommu_iova_map_dev(ViommuIova *h, unsigned dev, uint64_t dma_mask,
                                     uint64_t bytes, uint64_t *iova);
/* IOVA bytes a @bytes long mapping occupies (dma-iommu's rounding). */
uint64_t viommu_iova_map_extent(ViommuIova *h, uint64_t bytes);
ViommuIovaStatus viommu_iova_unmap(ViommuIova *h, uint64_t iova, uint64_t bytes);
/* Flush and free everything the flush policy still holds. */
void viommu_iova_drain(ViommuIova *h);
/* Unmapped ranges the flush policy holds (not yet given back). */
uint64_t viommu_iova_pending(ViommuIova *h);

/* Statistics as JSON (docs/iova-stats.rst).  Writes at most @len bytes
 * including the NUL; returns the full length without the NUL, as snprintf. */
size_t viommu_iova_stats_json(ViommuIova *h, char *buf, size_t len);
/* One named counter (docs/iova-stats.rst "counters"); 0 if unknown. */
uint64_t viommu_iova_counter(ViommuIova *h, const char *name);
/* Clears counters, histograms and the lock statistics of the allocator
 * and the flush policy (bad_* counters included). */
void viommu_iova_reset_stats(ViommuIova *h);

#ifdef __cplusplus
}
#endif

#endif
