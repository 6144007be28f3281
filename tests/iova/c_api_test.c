/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The C API as a C caller (a qtest) uses it.  Exits non-zero on the first
 * failed check, naming it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viommu/iova.h"

static int checks;

#define CHECK(cond)                                                        \
    do {                                                                   \
        checks++;                                                          \
        if (!(cond)) {                                                     \
            printf("FAIL check %d at %s:%d: %s\n", checks, __FILE__, __LINE__, #cond); \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

static void exercise(const char *variant, const char *policy)
{
    ViommuIovaConfig cfg = { .variant = variant, .flush_policy = policy, .ncpus = 2,
                             .stats = true };
    ViommuIova *h = NULL;
    uint64_t pfn = 0, pfn2 = 0, iova = 0;
    char small[16];
    size_t len;
    char *json;

    CHECK(viommu_iova_new(&cfg, &h) == VIOMMU_IOVA_OK && h);
    CHECK(viommu_iova_alloc(h, 4, 0xfffff, true, &pfn) == VIOMMU_IOVA_OK);
    CHECK(pfn % 4 == 0 && pfn + 3 <= 0xfffff);
    CHECK(viommu_iova_alloc(h, 4, 0xfffff, true, &pfn2) == VIOMMU_IOVA_OK);
    CHECK(pfn2 + 4 <= pfn || pfn + 4 <= pfn2);
    CHECK(viommu_iova_release(h, pfn, 4) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_release(h, pfn, 4) == VIOMMU_IOVA_NOT_ALLOCATED);
    CHECK(viommu_iova_counter(h, "bad_free") == 1);
    CHECK(viommu_iova_alloc(h, 0, 0xfffff, true, &pfn) == VIOMMU_IOVA_BAD_SIZE);
    CHECK(viommu_iova_alloc(h, 1, 0, true, &pfn) == VIOMMU_IOVA_BAD_LIMIT);

    /* A 64-bit PCI device gets a 32-bit address first (SAC). */
    CHECK(viommu_iova_map(h, ~0ull, 1500, &iova) == VIOMMU_IOVA_OK);
    CHECK(iova < (1ull << 32) && iova % 4096 == 0);
    CHECK(viommu_iova_unmap(h, iova, 1500) == VIOMMU_IOVA_OK);
    viommu_iova_drain(h);
    CHECK(viommu_iova_counter(h, "unmaps") == 1);

    len = viommu_iova_stats_json(h, small, sizeof(small));
    CHECK(len > sizeof(small) && strlen(small) == sizeof(small) - 1);
    json = malloc(len + 1);
    CHECK(json && viommu_iova_stats_json(h, json, len + 1) == len);
    CHECK(json[0] == '{' && json[len - 1] == '}' && strstr(json, variant));
    free(json);
    viommu_iova_destroy(h);
}

/* What the flush callbacks saw. */
typedef struct Seen {
    unsigned ranges_calls, all_calls;
    uint64_t last_iova, last_bytes, all_ranges;
} Seen;

static void seen_range(void *opaque, uint64_t iova, uint64_t bytes)
{
    Seen *s = opaque;

    s->ranges_calls++;
    s->last_iova = iova;
    s->last_bytes = bytes;
}

static void seen_all(void *opaque, uint64_t ranges)
{
    Seen *s = opaque;

    s->all_calls++;
    s->all_ranges += ranges;
}

static const ViommuIovaFlushOps seen_ops = { seen_range, seen_all };

/* A manual clock: the CPU chosen per call, timers fired by moving time. */
static void manual_clock(void)
{
    Seen seen = { 0 };
    ViommuIovaConfig cfg = { .variant = "linux-6.7", .flush_policy = "flush-queue",
                             .ncpus = 2, .stats = true, .manual_clock = true,
                             .flush_ops = &seen_ops, .flush_opaque = &seen };
    ViommuIovaConfig real = { .ncpus = 2 };
    ViommuIova *h = NULL, *r = NULL;
    uint64_t a = 0, b = 0, iova = 0;

    CHECK(viommu_iova_new(&real, &r) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_set_cpu(r, 0) == VIOMMU_IOVA_BAD_ARG);
    CHECK(viommu_iova_advance(r, 1) == VIOMMU_IOVA_BAD_ARG);
    viommu_iova_destroy(r);

    CHECK(viommu_iova_new(&cfg, &h) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_now(h) == 0);
    CHECK(viommu_iova_set_cpu(h, 2) == VIOMMU_IOVA_BAD_ARG);
    CHECK(viommu_iova_set_time(h, 1000) == VIOMMU_IOVA_OK && viommu_iova_now(h) == 1000);
    CHECK(viommu_iova_set_time(h, 999) == VIOMMU_IOVA_BAD_ARG);
    CHECK(viommu_iova_advance(h, UINT64_MAX) == VIOMMU_IOVA_BAD_ARG);

    /* A range freed on CPU 1 lands in CPU 1's magazine: CPU 1 gets it
     * back, CPU 0 does not. */
    CHECK(viommu_iova_set_cpu(h, 0) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_alloc(h, 1, 0xfffff, false, &a) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_set_cpu(h, 1) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_release(h, a, 1) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_set_cpu(h, 0) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_alloc(h, 1, 0xfffff, false, &b) == VIOMMU_IOVA_OK && b != a);
    CHECK(viommu_iova_set_cpu(h, 1) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_alloc(h, 1, 0xfffff, false, &b) == VIOMMU_IOVA_OK && b == a);
    CHECK(viommu_iova_counter(h, "rcache_hit_loaded") == 1);

    /* The flush queue's 10 ms timer fires when the clock passes it. */
    CHECK(viommu_iova_map_dev(h, 0, ~0ull, 1500, &iova) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_unmap(h, iova, 1500) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_pending(h) == 1 && seen.all_calls == 0);
    CHECK(viommu_iova_advance(h, 9999999) == VIOMMU_IOVA_OK);
    CHECK(seen.all_calls == 0);
    CHECK(viommu_iova_advance(h, 1) == VIOMMU_IOVA_OK);
    CHECK(seen.all_calls == 1 && seen.all_ranges == 1);
    CHECK(viommu_iova_counter(h, "unmap_timer_flushes") == 1);
    viommu_iova_destroy(h);
}

/* The policies' invalidations reach the callbacks, with the range (strict)
 * or the number of ranges freed after the flush (batched). */
static void flush_callbacks(void)
{
    ViommuIovaFlushOps half = { seen_range, NULL };
    for (int strict = 0; strict < 2; strict++) {
        Seen seen = { 0 };
        ViommuIovaConfig cfg = { .variant = "viommu-lab",
                                 .flush_policy = strict ? "strict" : "global-list",
                                 .ncpus = 1, .manual_clock = true,
                                 .flush_ops = &seen_ops, .flush_opaque = &seen };
        ViommuIova *h = NULL;
        uint64_t iova[3];

        CHECK(viommu_iova_new(&cfg, &h) == VIOMMU_IOVA_OK);
        for (int i = 0; i < 3; i++)
            CHECK(viommu_iova_map(h, ~0ull, 3 * 4096, &iova[i]) == VIOMMU_IOVA_OK);
        CHECK(viommu_iova_map_extent(h, 3 * 4096) == 4 * 4096);
        for (int i = 0; i < 3; i++)
            CHECK(viommu_iova_unmap(h, iova[i], 3 * 4096) == VIOMMU_IOVA_OK);
        viommu_iova_drain(h);
        if (strict) {
            CHECK(seen.ranges_calls == 3 && seen.all_calls == 0);
            CHECK(seen.last_iova == iova[2] && seen.last_bytes == 4 * 4096);
        } else {
            CHECK(seen.ranges_calls == 0 && seen.all_calls == 1 && seen.all_ranges == 3);
        }
        CHECK(viommu_iova_pending(h) == 0);
        viommu_iova_destroy(h);
        cfg.flush_ops = &half;
        CHECK(viommu_iova_new(&cfg, &h) == VIOMMU_IOVA_BAD_ARG && h == NULL);
    }
}

/* reserve, sac-flush, explicit cache flushes, per-device SAC state,
 * end_pfn and reset_stats. */
static void additions(void)
{
    ViommuIovaConfig cfg = { .variant = "linux-6.7", .ncpus = 1, .stats = true,
                             .granule_shift = 16, .end_pfn = 0x10000 + 64,
                             .sac_once = true, .manual_clock = true };
    ViommuIova *h = NULL;
    uint64_t pfn = 0, iova = 0, n = 0;

    CHECK(viommu_iova_new(&cfg, &h) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_reserve(h, 0xfee0, 0xfeef) == VIOMMU_IOVA_OK);
    CHECK(viommu_iova_reserve(h, 0xfeef, 0xfef0) == VIOMMU_IOVA_BUSY);
    CHECK(viommu_iova_reserve(h, 0xfef0, 0xfeef) == VIOMMU_IOVA_BAD_SIZE);
    CHECK(viommu_iova_reserve(h, 0xfef0, 0x10000 + 64) == VIOMMU_IOVA_BAD_LIMIT);
    CHECK(viommu_iova_counter(h, "reserves") == 1 && viommu_iova_counter(h, "bad_reserve") == 1);
    CHECK(strcmp(viommu_iova_status_name(VIOMMU_IOVA_BUSY), "busy") == 0);
    /* every 32-bit page but the reserved window, then one of the 64 above */
    while (viommu_iova_alloc(h, 1, 0xffff, true, &pfn) == VIOMMU_IOVA_OK) {
        CHECK(pfn < 0xfee0 || pfn > 0xfeef);
        n++;
    }
    CHECK(n == 0xffff - 16);
    /* device 3 fails SAC once (6.6), then goes straight above 4 GiB */
    for (int i = 0; i < 4; i++) {
        CHECK(viommu_iova_map_dev(h, 3, ~0ull, 65536, &iova) == VIOMMU_IOVA_OK);
        CHECK(iova >= (1ull << 32));
    }
    CHECK(viommu_iova_counter(h, "failed_32bit") == 1);
    CHECK(viommu_iova_map_dev(h, 64, ~0ull, 65536, &iova) == VIOMMU_IOVA_BAD_ARG);
    viommu_iova_flush_caches(h);
    viommu_iova_flush_caches(h);
    CHECK(viommu_iova_counter(h, "cache_flushes") == 2);
    viommu_iova_reset_stats(h);
    CHECK(viommu_iova_counter(h, "cache_flushes") == 0 &&
          viommu_iova_counter(h, "failed_32bit") == 0 &&
          viommu_iova_counter(h, "bad_reserve") == 0);
    viommu_iova_destroy(h);

    /* sac-flush: the failed 32-bit attempt itself flushes every cache */
    cfg.sac_once = false;
    cfg.sac_flush = true;
    CHECK(viommu_iova_new(&cfg, &h) == VIOMMU_IOVA_OK);
    while (viommu_iova_alloc(h, 1, 0xffff, false, &pfn) == VIOMMU_IOVA_OK)
        ;
    CHECK(viommu_iova_map_dev(h, 0, ~0ull, 65536, &iova) == VIOMMU_IOVA_OK);
    CHECK(iova >= (1ull << 32));
    CHECK(viommu_iova_counter(h, "failed_32bit") == 1);
    CHECK(viommu_iova_counter(h, "rcache_flush_all") == 1);
    viommu_iova_destroy(h);
}

int main(void)
{
    ViommuIovaConfig bad = { .variant = "linux-2.4" };
    ViommuIova *h = NULL;
    static const char *policies[] = { "strict", "global-list", "percpu-defer", "flush-queue" };
    size_t n = viommu_iova_variant_count();

    CHECK(n >= 9 && viommu_iova_variant_name(n) == NULL);
    CHECK(viommu_iova_new(&bad, &h) == VIOMMU_IOVA_BAD_VARIANT && h == NULL);
    CHECK(viommu_iova_alloc(NULL, 1, 100, true, NULL) == VIOMMU_IOVA_BAD_ARG);
    CHECK(viommu_iova_new(NULL, NULL) == VIOMMU_IOVA_BAD_ARG);
    CHECK(strcmp(viommu_iova_status_name(VIOMMU_IOVA_NO_SPACE), "no_space") == 0);
    /* every call takes a NULL handle without harm */
    CHECK(viommu_iova_set_cpu(NULL, 0) == VIOMMU_IOVA_BAD_ARG);
    CHECK(viommu_iova_set_time(NULL, 0) == VIOMMU_IOVA_BAD_ARG);
    CHECK(viommu_iova_advance(NULL, 0) == VIOMMU_IOVA_BAD_ARG);
    CHECK(viommu_iova_now(NULL) == 0);
    CHECK(viommu_iova_reserve(NULL, 1, 1) == VIOMMU_IOVA_BAD_ARG);
    CHECK(viommu_iova_map_dev(NULL, 0, ~0ull, 1, NULL) == VIOMMU_IOVA_BAD_ARG);
    CHECK(viommu_iova_map_extent(NULL, 4096) == 0);
    CHECK(viommu_iova_pending(NULL) == 0);
    viommu_iova_flush_caches(NULL);
    viommu_iova_reset_stats(NULL);
    viommu_iova_destroy(NULL);
    for (size_t i = 0; i < n; i++)
        exercise(viommu_iova_variant_name(i), policies[i % 4]);
    manual_clock();
    flush_callbacks();
    additions();
    printf("%d checks passed\n", checks);
    return 0;
}
