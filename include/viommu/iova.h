/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-lab guest IOVA allocator: C API for C callers (qtests, tools).
 *
 * A handle bundles an allocator variant (by name, see
 * viommu_iova_variant_name()), a flush policy, and the dma-iommu layer,
 * running on real clocks with one CPU id per calling thread.  The C++
 * interface (guest/iova/iova.hpp) exposes more, including virtual time.
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
} ViommuIovaStatus;

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
} ViommuIovaConfig;

typedef struct ViommuIova ViommuIova;

/* Number of variants and their names (NULL past the end). */
size_t viommu_iova_variant_count(void);
const char *viommu_iova_variant_name(size_t i);
const char *viommu_iova_status_name(ViommuIovaStatus s);

ViommuIovaStatus viommu_iova_new(const ViommuIovaConfig *cfg, ViommuIova **out);
void viommu_iova_destroy(ViommuIova *h);

/* Allocator level: alloc_iova_fast()/free_iova_fast(). */
ViommuIovaStatus viommu_iova_alloc(ViommuIova *h, uint64_t pages, uint64_t limit_pfn,
                                   bool flush_rcache, uint64_t *pfn);
ViommuIovaStatus viommu_iova_release(ViommuIova *h, uint64_t pfn, uint64_t pages);

/* dma-iommu level: byte sizes and addresses, through the flush policy. */
ViommuIovaStatus viommu_iova_map(ViommuIova *h, uint64_t dma_mask, uint64_t bytes,
                                 uint64_t *iova);
ViommuIovaStatus viommu_iova_unmap(ViommuIova *h, uint64_t iova, uint64_t bytes);
/* Flush and free everything the flush policy still holds. */
void viommu_iova_drain(ViommuIova *h);

/* Statistics as JSON (docs/iova-stats.rst).  Writes at most @len bytes
 * including the NUL; returns the full length without the NUL, as snprintf. */
size_t viommu_iova_stats_json(ViommuIova *h, char *buf, size_t len);
/* One named counter (docs/iova-stats.rst "counters"); 0 if unknown. */
uint64_t viommu_iova_counter(ViommuIova *h, const char *name);

#ifdef __cplusplus
}
#endif

#endif
