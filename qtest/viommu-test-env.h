/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Machine setup shared by the viommu qtests and the benchmark: a q35
 * machine with one VT-d compatible IOMMU and N viommu-dma devices.
 */
#ifndef VIOMMU_TEST_ENV_H
#define VIOMMU_TEST_ENV_H

#include "libqtest.h"
#include "libqos/pci-pc.h"
#include "vtd-guest.h"
#include "viommu-dma-driver.h"

#define VT_MAX_DMA      16
#define VT_FIRST_SLOT   4
#define VT_RING_SIZE    256
#define VT_MEM_START    0x1000000ULL    /* allocator starts at 16 MiB */

typedef struct VtEnv {
    QTestState *qts;
    QPCIBus *bus;
    const char *iommu;          /* device name, NULL: no IOMMU */
    uint64_t ram;
    VtdGuest g;
    char *iommu_opts, *extra;   /* vt_start()'s, for vt_migrate() */
    int ndma;
    VdmaDev dma[VT_MAX_DMA];
    uint64_t ring[VT_MAX_DMA];  /* GPA of each device's queue-0 ring */
} VtEnv;

/* IOMMU under test: $VIOMMU_TEST_IOMMU, default viommu-vtd */
const char *vt_iommu_name(void);
bool vt_iommu_is(const char *name);
/* does this QEMU binary have the device? */
bool vt_have_device(const char *name);

/*
 * Start the machine.  iommu_opts is appended to "-device <iommu>", extra
 * to the command line.  Queue 0 of each DMA device gets a ring at an
 * identity IOVA (map it with vt_map_rings() when translating).
 */
void vt_start(VtEnv *e, const char *iommu, const char *iommu_opts, int ndma,
              uint64_t ram_mb, const char *extra);
/* attach to an already started QEMU (e.g. a migration target) */
void vt_attach(VtEnv *e, QTestState *qts);
/*
 * Live-migrate e's machine to a new QEMU started as vt_start() started it
 * (same IOMMU and options, DMA devices, RAM and extra arguments) with
 * -incoming on a UNIX socket: wait until the destination runs, let the
 * DMA devices go on the source (vdma_free: MSI-X disabled there), quit the
 * source and attach e to the destination (vt_attach), where the test goes
 * on with the same guest state (tables, allocator, queues).
 */
void vt_migrate(VtEnv *e);
void vt_stop(VtEnv *e);
char *vt_cmdline(const char *iommu, const char *iommu_opts, int ndma,
                 uint64_t ram_mb, const char *extra);
uint16_t vt_sid(int i);
void vt_map_rings(VtEnv *e, VtdDomain *d, int i);

/*
 * The functional suites run against viommu-vtd and, differentially, against
 * QEMU's intel-iommu ($VIOMMU_TEST_IOMMU).  vt_test_init() starts GLib's
 * test framework and says whether the IOMMU under test is built in (when it
 * is not, there is nothing to register).  vt_add_case() registers fn as
 * <prefix>/<iommu>/<path>; on intel-iommu a case with intel_aborts is
 * skipped with that reason (it aborts QEMU), one with intel_deviation runs
 * in a subprocess and must fail there (a fixed intel-iommu shows up as an
 * unexpected pass), and a vtd_only case is not registered at all.
 */
void vt_wait_migration(QTestState *src, QTestState *dst);
bool vt_test_init(int *argc, char ***argv);

/*
 * The check of a case with intel_deviation that intel-iommu fails: an
 * assertion of cond, which on failure also names the deviation id ("D1")
 * on stderr.  On intel-iommu the case passes only if its subprocess failed
 * at this check, so any other failure still fails the case.
 */
#define vt_assert_deviation(id, cond) \
    vt_check_deviation((id), (cond), #cond, __FILE__, __LINE__, G_STRFUNC)
void vt_check_deviation(const char *id, bool ok, const char *expr,
                        const char *file, int line, const char *func);
void vt_add_case(const char *prefix, const char *path, void (*fn)(void),
                 const char *intel_aborts, const char *intel_deviation,
                 bool vtd_only);

#endif
