/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * MSI storm through interrupt remapping (/viommu/bench/msi-storm): a
 * viommu-dma device sends one MSI-X message in remappable format per
 * descriptor (NOP with the IRQ flag), remapped through one IRTE to CPU 0,
 * behind viommu-vtd and intel-iommu (both intremap=on, interrupt remapping
 * enabled as Linux does it), and, as the baseline of what the device and
 * the LAPIC cost without remapping, behind viommu-vtd without intremap
 * (compatibility-format messages straight to the LAPIC window).  Not a
 * test: it prints figures (docs/performance.rst).
 *
 * The three machines run in the same process, batches interleaved, so all
 * see the same host load.  A batch is RING - 1 descriptors made available
 * by one doorbell; the device runs them without a qtest round trip.  Per
 * machine: the median batch as interrupts/s (wall clock, from the doorbell
 * until HEAD reaches TAIL) and as the device's own CPU time per interrupt
 * (viommu-dma's BH_NS: its bottom half's thread CPU time, which includes
 * the MSI-X write, the remapping and the LAPIC delivery, and no qtest
 * polling); then the ratios viommu-vtd/intel-iommu (interrupts/s; above
 * 1: viommu-vtd faster) and intel-iommu/viommu-vtd (CPU per interrupt;
 * above 1: viommu-vtd cheaper), and each IOMMU's remapping cost over the
 * baseline (CPU ns per interrupt).
 *
 * $VIOMMU_BENCH_BATCHES  timed batches (default 31)
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "viommu-bench-common.h"

#define BATCH       (RING - 1)
#define VECTOR      0x40
#define NMACH       3

typedef struct Storm {
    VtEnv e;
    const char *name;
    uint64_t ring;
    uint32_t tail;
} Storm;

static void storm_start(Storm *m, const char *iommu, const char *opts,
                        bool ir, const char *name)
{
    VdmaDev *d;
    g_autofree uint8_t *buf = g_malloc0(RING * VIOMMU_DMA_DESC_SIZE);

    vt_start(&m->e, iommu, opts, 1, 512, NULL);
    m->name = name;
    d = &m->e.dma[0];
    if (ir) {
        uint64_t table;

        vtd_qi_enable(&m->e.g, 0);
        table = vtd_ir_enable(&m->e.g, 7, false, false);
        vtd_irte_set(&m->e.g, table, 0,
                     VTD_IRTE_P | VTD_IRTE_VECTOR(VECTOR) |
                     VTD_IRTE_DST_XAPIC(0),
                     VTD_IRTE_SVT(VTD_SVT_SID) | VTD_IRTE_SID(d->sid));
        vdma_msix_set_message(d, 1, VTD_MSI_REMAPPABLE(0, false), 0);
    } else {
        vdma_msix_set_message(d, 1, 0xfee00000, VECTOR);
    }
    for (int i = 0; i < RING; i++) {
        uint8_t *p = buf + i * VIOMMU_DMA_DESC_SIZE;
        p[VIOMMU_DMA_DESC_OP] = VIOMMU_DMA_OP_NOP;
        p[VIOMMU_DMA_DESC_FLAGS] = VIOMMU_DMA_FLAG_IRQ;
    }
    m->ring = vtd_alloc(&m->e.g, RING * VIOMMU_DMA_DESC_SIZE, 4096);
    big_write(m->e.qts, m->ring, buf, RING * VIOMMU_DMA_DESC_SIZE);
    g_assert_true(vdma_queue_setup(d, 1, m->ring, m->ring, RING));
    m->tail = 0;
}

/* one batch; returns wall-clock ns, *cpu_ns the device's CPU time */
static int64_t storm_batch(Storm *m, int64_t *cpu_ns)
{
    VdmaDev *d = &m->e.dma[0];
    uint32_t qb = VIOMMU_DMA_Q_BASE(1);
    uint64_t cpu0 = vdma_counter(d, VIOMMU_DMA_REG_BH_NS);
    int64_t t0, deadline;

    m->tail = (m->tail + BATCH) % RING;
    t0 = g_get_monotonic_time();
    deadline = t0 + POLL_NS / 1000;
    vdma_reg_write(d, qb + VIOMMU_DMA_Q_TAIL, m->tail);
    g_assert_true(queue_wait(d, 1, m->tail, deadline, m->name));
    t0 = g_get_monotonic_time() - t0;
    *cpu_ns = vdma_counter(d, VIOMMU_DMA_REG_BH_NS) - cpu0;
    return t0 * 1000;
}

/* viommu-vtd's interrupt_remapping.remappable.remapped */
static int64_t vtd_remapped(Storm *m)
{
    return vtd_stat(m->e.qts, "interrupt_remapping/remappable", "remapped");
}

static void bench(void)
{
    const char *b = getenv("VIOMMU_BENCH_BATCHES");
    int batches = MAX(b ? atoi(b) : 31, 1);
    Storm m[NMACH];
    g_autofree int64_t *ns = g_new0(int64_t, NMACH * batches);
    g_autofree int64_t *cpu = g_new0(int64_t, NMACH * batches);
    double irq_s[NMACH], cpu_ns[NMACH];
    int64_t dummy;

    storm_start(&m[0], "viommu-vtd", ",intremap=on,id=vtd0", true,
                "viommu-vtd");
    storm_start(&m[1], "intel-iommu", ",intremap=on", true, "intel-iommu");
    storm_start(&m[2], "viommu-vtd", ",intremap=off", false, "no-IR");
    /* warm-up batch each: IEC filled, code paths hot */
    for (int i = 0; i < NMACH; i++) {
        storm_batch(&m[i], &dummy);
    }
    for (int k = 0; k < batches; k++) {
        for (int i = 0; i < NMACH; i++) {
            ns[i * batches + k] = storm_batch(&m[i], &cpu[i * batches + k]);
        }
    }
    /* every interrupt of viommu-vtd's machine was remapped, all reached CPU 0 */
    g_assert_cmpint(vtd_remapped(&m[0]), ==, (int64_t)(batches + 1) * BATCH);
    for (int i = 0; i < NMACH; i++) {
        g_assert_true(vtd_lapic_irr(m[i].e.qts, VECTOR));
        g_assert_cmpint(vtd_fault_count(&m[i].e.g), ==, 0);
    }
    for (int i = 0; i < NMACH; i++) {
        qsort(ns + i * batches, batches, sizeof(int64_t), cmp_i64);
        qsort(cpu + i * batches, batches, sizeof(int64_t), cmp_i64);
        irq_s[i] = BATCH / (ns[i * batches + batches / 2] / 1e9);
        cpu_ns[i] = (double)cpu[i * batches + batches / 2] / BATCH;
    }
    printf("# MSI-X storm: %d interrupts per batch (viommu-dma NOP+IRQ), "
           "median of %d batches\n", BATCH, batches);
    printf("# no-IR: viommu-vtd,intremap=off (compatibility format, no "
           "remapping)\n");
    printf("%-12s %12s %12s\n", "machine", "irq/s", "cpu-ns/irq");
    for (int i = 0; i < NMACH; i++) {
        printf("%-12s %12.0f %12.0f\n", m[i].name, irq_s[i], cpu_ns[i]);
    }
    printf("# ratio viommu-vtd/intel-iommu, interrupts/s (wall clock): "
           "%.2f\n", irq_s[0] / irq_s[1]);
    printf("# ratio intel-iommu/viommu-vtd, device CPU per interrupt: %.2f\n",
           cpu_ns[1] / cpu_ns[0]);
    printf("# remapping cost over no-IR, CPU ns per interrupt: viommu-vtd "
           "%.0f, intel-iommu %.0f\n", cpu_ns[0] - cpu_ns[2],
           cpu_ns[1] - cpu_ns[2]);
    fflush(stdout);
    for (int i = 0; i < NMACH; i++) {
        vt_stop(&m[i].e);
    }
}

int main(int argc, char **argv)
{
    return bench_main(argc, argv, "/viommu/bench/msi-storm", bench);
}
