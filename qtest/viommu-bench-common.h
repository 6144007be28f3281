/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the qtest benchmarks share (viommu-bench-dma.c, translated-DMA
 * throughput; viommu-bench-inv.c, invalidation cost): a machine with one
 * IOMMU, one viommu-dma device and a 1 GiB IOVA window mapped onto
 * NFRAMES guest frames, and the rings that drive it.
 */
#ifndef VIOMMU_BENCH_COMMON_H
#define VIOMMU_BENCH_COMMON_H

#include "viommu-test-env.h"

#define RING        4096
#define NQ          3                   /* queues 1..3; 0 belongs to vt_start */
#define WIN         0x100000000ULL      /* IOVA window at 4 GiB, 1 GiB */
#define NFRAMES     512
#define XFER_CHUNK  (64 * 1024)
#define POLL_NS     (10 * 1000000000LL)

/* the two IOMMUs compared: viommu-vtd, intel-iommu */
extern const char *const iommus[2];

typedef struct Mach {
    VtEnv e;
    VtdDomain *d;
    uint64_t ring[NQ];
    uint64_t frames;
    uint64_t l2;                        /* level-2 table of the window */
    uint64_t l1[128];                   /* up to 64K pages */
    int mapped;                         /* pages mapped so far */
} Mach;

/* a deterministic pseudo-random sequence (splitmix64) from rng_state */
extern uint64_t rng_state;
uint64_t rnd(void);

/* qtest_bufwrite in pieces of XFER_CHUNK */
void big_write(QTestState *qts, uint64_t gpa, const uint8_t *p, size_t len);

/*
 * Start a machine with IOMMU iommu (options opts) and one viommu-dma
 * device attached to domain 1, its queues 1..NQ set up with rings of
 * RING descriptors, the window's first page mapped; translation on.
 */
void mach_start(Mach *m, const char *iommu, const char *opts);
/* map IOVA pages [0, pages) of the window, page i -> frame i % NFRAMES */
void mach_map(Mach *m, int pages);

/*
 * Make n[q] more descriptors available on each queue q + 1 (a ring of
 * size[q] slots) with back-to-back doorbells and wait until the device
 * has completed them.  Returns the wall-clock ns from the first doorbell,
 * or -1 with a message if a queue halted, a descriptor failed or POLL_NS
 * passed.
 */
int64_t rings_run(Mach *m, const uint32_t n[NQ], const uint32_t size[NQ]);

/* qsort comparison of int64_t */
int cmp_i64(const void *a, const void *b);

#endif
