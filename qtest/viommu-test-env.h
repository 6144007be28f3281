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
void vt_stop(VtEnv *e);
char *vt_cmdline(const char *iommu, const char *iommu_opts, int ndma,
                 uint64_t ram_mb, const char *extra);
uint16_t vt_sid(int i);
void vt_map_rings(VtEnv *e, VtdDomain *d, int i);

#endif
