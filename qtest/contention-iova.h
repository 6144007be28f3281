/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * contention-iova: the guest IOVA allocator library (guest/iova) for the
 * contention qtests, driven from C with a virtual clock, a settable
 * current CPU and invalidation callbacks.
 *
 * include/viommu/iova.h runs on real clocks with one CPU id per OS thread
 * and counts invalidations instead of performing them; a qtest replaying N
 * simulated CPUs on one thread needs the CPU chosen per call and the flush
 * policy's invalidations sent to the device.  This wrapper uses the
 * library's C++ interface (ManualEnv, FlushPolicy, Flusher, DmaDomain)
 * for exactly that and nothing else: allocation, caching and flushing are
 * the library's own code.
 */
#ifndef CONTENTION_IOVA_H
#define CONTENTION_IOVA_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CtIovaOps {
    /* Page-selective invalidation of [iova, iova + bytes), then wait. */
    void (*flush_range)(void *opaque, uint64_t iova, uint64_t bytes);
    /* Invalidation of everything unmapped so far, then wait. */
    void (*flush_all)(void *opaque);
} CtIovaOps;

typedef struct CtIovaConfig {
    const char *variant;        /* allocator variant (Allocator::create) */
    const char *flush_policy;   /* strict, global-list, percpu-defer, flush-queue */
    const char *dma;            /* sac, sac-flush, sac-once, forcedac */
    unsigned granule_shift;
    unsigned ncpus;
    uint64_t start_pfn;         /* lowest allocatable pfn */
    uint64_t end_pfn;           /* highest pfn + 1 (the IOMMU's address width) */
} CtIovaConfig;

typedef struct CtIova CtIova;

/* NULL if the variant, policy or dma mode is unknown. */
CtIova *ct_iova_new(const CtIovaConfig *cfg, const CtIovaOps *ops, void *opaque);
void ct_iova_free(CtIova *h);

/* Take [iova, iova + bytes) out of the allocator for good, as Linux
 * reserves the interrupt range 0xfee00000-0xfeefffff in every DMA domain
 * (the library has no reserve_iova()): allocates exactly that range, or
 * returns false. */
bool ct_iova_reserve(CtIova *h, uint64_t iova, uint64_t bytes);

/* The CPU the next calls run on. */
void ct_iova_set_cpu(CtIova *h, unsigned cpu);
/* Move the virtual clock forward; due timers (flush-queue, global-list
 * 10 ms flush) fire on the current CPU. */
void ct_iova_advance(CtIova *h, uint64_t ns);

/* IOVA space a @bytes long mapping occupies (rounded as dma-iommu does). */
uint64_t ct_iova_extent(CtIova *h, uint64_t bytes);
/* dma_map for device @dev (its SAC state is kept per device).  Returns 0
 * or the allocator's status. */
int ct_iova_map(CtIova *h, unsigned dev, uint64_t dma_mask, uint64_t bytes,
                uint64_t *iova);
/* dma_unmap: the page tables are already cleared; the flush policy
 * invalidates (through the callbacks) and frees now or later. */
void ct_iova_unmap(CtIova *h, uint64_t iova, uint64_t bytes);
/* Flush and free everything the policy still holds. */
void ct_iova_drain(CtIova *h);
/* Entries the policy holds (unmapped, not yet given back). */
uint64_t ct_iova_pending(CtIova *h);

/* A counter of docs/iova-stats.rst summed over CPUs; 0 if unknown. */
uint64_t ct_iova_counter(CtIova *h, const char *name);

#ifdef __cplusplus
}
#endif

#endif
