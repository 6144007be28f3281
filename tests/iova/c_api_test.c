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
    viommu_iova_destroy(NULL);
    for (size_t i = 0; i < n; i++)
        exercise(viommu_iova_variant_name(i), policies[i % 4]);
    printf("%d checks passed\n", checks);
    return 0;
}
