/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-vtd: a VT-d compatible DMA remapping unit for q35, backed by the
 * viommu-lab engine (include/viommu/vtd.h).
 */
#ifndef HW_VIOMMU_VIOMMU_VTD_H
#define HW_VIOMMU_VIOMMU_VTD_H

#include "hw/i386/intel_iommu.h"
#include "qom/object.h"

#define TYPE_VIOMMU_VTD "viommu-vtd"
#define TYPE_VIOMMU_VTD_IOMMU_MEMORY_REGION "viommu-vtd-iommu-memory-region"

OBJECT_DECLARE_TYPE(ViommuVtdState, ViommuVtdClass, VIOMMU_VTD)

#endif
