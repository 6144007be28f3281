/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the qtest benchmarks share (viommu-bench-dma.c, translated-DMA
 * throughput; viommu-bench-inv.c, invalidation cost; viommu-bench-msi.c,
 * an MSI storm): a machine with one IOMMU, one viommu-dma device and a
 * 1 GiB IOVA window mapped onto NFRAMES guest frames, in legacy mode or in
 * scalable mode with second-stage or first-stage tables (the same options
 * on both IOMMUs), the rings that drive it, and the programs' common
 * parts (the statistics read, main()).
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

/*
 * Translation modes, each with the same options on both IOMMUs: legacy
 * mode; scalable mode with RID_PASID's PASID-table entry second-stage
 * (x-scalable-mode=on) or first-stage (x-scalable-mode=on,x-flts=on), the
 * tables built, and invalidations sent, as Linux does in that mode.
 */
typedef enum BenchMode { MODE_LEGACY, MODE_SM_SS, MODE_SM_FS, MODES } BenchMode;
extern const char *const mode_names[MODES];   /* legacy, sm-ss, sm-fs */
extern const char *const mode_opts[MODES];    /* the IOMMU options */
/*
 * Whether $VIOMMU_BENCH_MODE (unset: every mode; else a comma-separated
 * list of mode names) selects mode.
 */
bool mode_selected(BenchMode mode);

typedef struct Mach {
    VtEnv e;
    BenchMode mode;
    VtdDomain *d;                       /* legacy, sm-ss: the second stage */
    uint64_t fs_top;                    /* sm-fs: the first-stage table */
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
 * Start a machine with IOMMU iommu (options opts, the mode's added) and
 * one viommu-dma device attached to domain 1 (scalable mode: RID_PASID
 * 0's entry in domain 1), its queues 1..NQ set up with rings of RING
 * descriptors, the window's first page mapped; translation on.
 */
void mach_start(Mach *m, const char *iommu, const char *opts, BenchMode mode);
void mach_stop(Mach *m);
/* map IOVA pages [0, pages) of the window, page i -> frame i % NFRAMES */
void mach_map(Mach *m, int pages);

/*
 * Invalidations of domain 1 in the form of the machine's mode (Linux's):
 * legacy and second-stage IOTLB descriptors; first-stage P_IOTLB
 * (PASID-selective for the domain, page-selective for pages), PASID 0.
 * The whole of the caches: every cache's global form.
 */
void mach_flush_all(Mach *m);
void mach_flush_domain(Mach *m);
void mach_flush_page(Mach *m, uint64_t addr, unsigned am);

/* viommu-vtd's statistics counter section.name (JSON path /-separated) */
int64_t vtd_stat(QTestState *qts, const char *path, const char *name);

/*
 * main() of every benchmark program: registers fn as path and runs it,
 * or prints why not when the binary lacks one of the two IOMMUs.
 */
int bench_main(int argc, char **argv, const char *path, void (*fn)(void));

/*
 * Poll viommu-dma queue q until its HEAD reaches tail; false, with a
 * message naming who, if the queue halted or the monotonic clock passed
 * deadline (us).
 */
bool queue_wait(VdmaDev *dev, int q, uint32_t tail, int64_t deadline,
                const char *who);

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
