/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Regression test for patches/qemu/0002: accesses through a
 * MemoryRegionCache behind an IOMMU must be translated IOVA page by IOVA
 * page.
 *
 * virtio reaches its rings through MemoryRegionCaches; behind an IOMMU
 * such a cache holds the IOMMU region and every access takes the memory
 * core's cached slow path.  Without the patch, that path translates the
 * first byte of an access and carries on linearly in guest-physical
 * memory, so the part of an access beyond the end of its first IOVA page
 * lands on the guest page that follows the first one's, not on the page
 * the second IOVA page maps to.
 *
 * viommu-dma with x-cached-copy=on copies through such caches.  Here one
 * COPY reads two IOVA pages mapped to guest frames 0 and 2 of a run of
 * three and writes two IOVA pages mapped the same way, each access
 * straddling its IOVA page boundary (at a different offset for the read
 * and the write); frame 1 between them holds a decoy and must stay
 * untouched.  The outcome does not depend on timing: the copy either uses
 * the mapped frames or it does not.  It runs against viommu-vtd and
 * QEMU's intel-iommu (the bug and the fix are in the memory core).
 */
#include "qemu/osdep.h"
#include "viommu-test-env.h"

#define SRC_IOVA    0x40000000ULL
#define DST_IOVA    0x50000000ULL
#define SRC_OFF     2048            /* the read crosses into page 2 here */
#define DST_OFF     1024            /* the write crosses at 4096 - 1024 */
#define LEN         4096            /* one cached chunk of viommu-dma */
#define DECOY       0xdd

static uint8_t src_byte(int frame, int i)
{
    return frame == 0 ? (i * 7 + 1) & 0x7f : 0x80 | ((i * 13 + 5) & 0x7f);
}

static void test_cached_copy(const void *data)
{
    const char *iommu = data;
    VtEnv e;
    VtdDomain *dom;
    uint64_t src, dst;
    uint8_t frame[4096], want[LEN], got[LEN];
    uint32_t res;

    if (!vt_have_device(iommu)) {
        g_test_skip("this QEMU has no such IOMMU");
        return;
    }
    vt_start(&e, iommu, NULL, 1, 256, "-global viommu-dma.x-cached-copy=on");
    vtd_set_root_table(&e.g);
    vtd_qi_enable(&e.g, 0);
    dom = vtd_domain_new(&e.g, 1, 4);
    vt_map_rings(&e, dom, 0);
    vtd_attach(dom, vt_sid(0));

    /* three contiguous frames each; IOVA pages 0 and 1 -> frames 0 and 2 */
    src = vtd_alloc(&e.g, 3 * 4096, 4096);
    dst = vtd_alloc(&e.g, 3 * 4096, 4096);
    for (int p = 0; p < 2; p++) {
        vtd_map(dom, SRC_IOVA + p * 4096, src + 2 * p * 4096, 4096,
                VTD_PTE_RW, VTD_PAGE_4K);
        vtd_map(dom, DST_IOVA + p * 4096, dst + 2 * p * 4096, 4096,
                VTD_PTE_RW, VTD_PAGE_4K);
    }
    for (int f = 0; f < 3; f += 2) {
        for (int i = 0; i < 4096; i++) {
            frame[i] = src_byte(f, i);
        }
        qtest_memwrite(e.qts, src + f * 4096, frame, sizeof(frame));
    }
    qtest_memset(e.qts, src + 4096, DECOY, 4096);
    qtest_memset(e.qts, dst, 0, 3 * 4096);
    vtd_flush_all(&e.g);
    vtd_enable_translation(&e.g);

    g_assert_cmphex(vdma_copy(&e.dma[0], SRC_IOVA + SRC_OFF,
                              DST_IOVA + DST_OFF, LEN, &res), ==,
                    VIOMMU_DMA_ST_OK);
    g_assert_cmpuint(res, ==, LEN);

    /* what IOVA [SRC_IOVA + SRC_OFF, + LEN) holds: frame 0's tail, frame 2 */
    for (int i = 0; i < LEN; i++) {
        want[i] = i < 4096 - SRC_OFF ? src_byte(0, SRC_OFF + i)
                                     : src_byte(2, i - (4096 - SRC_OFF));
    }
    /* ... must be at IOVA DST_IOVA + DST_OFF: frame 0's tail, frame 2 */
    qtest_memread(e.qts, dst + DST_OFF, got, 4096 - DST_OFF);
    qtest_memread(e.qts, dst + 2 * 4096, got + 4096 - DST_OFF,
                  LEN - (4096 - DST_OFF));
    g_assert_cmpmem(got, LEN, want, LEN);
    /* and nothing on the frames between or around */
    qtest_memread(e.qts, dst + 4096, frame, 4096);
    for (int i = 0; i < 4096; i++) {
        g_assert_cmphex(frame[i], ==, 0);
    }
    qtest_memread(e.qts, dst, frame, DST_OFF);
    for (int i = 0; i < DST_OFF; i++) {
        g_assert_cmphex(frame[i], ==, 0);
    }
    g_assert_cmphex(qtest_readb(e.qts, dst + 2 * 4096 + LEN - (4096 - DST_OFF)),
                    ==, 0);

    g_free(dom);
    vt_stop(&e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_data_func("/viommu/cached-slow-path/viommu-vtd", "viommu-vtd",
                        test_cached_copy);
    qtest_add_data_func("/viommu/cached-slow-path/intel-iommu", "intel-iommu",
                        test_cached_copy);
    return g_test_run();
}
