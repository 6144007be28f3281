// SPDX-License-Identifier: GPL-2.0-or-later
// Invalidation requests, whether they come from the register interface
// (CCMD, IOTLB/IVA) or from queued invalidation descriptors.
#pragma once

#include <cstdint>

#include "registers.hpp"

namespace viommu::vtd {

struct ContextInvalidation {
    Granularity granularity = Granularity::Global;
    uint16_t did = 0;
    uint16_t sid = 0;
    uint8_t function_mask = 0;  // FM: 0..3 low bits of the function number ignored
};

struct IotlbInvalidation {
    Granularity granularity = Granularity::Global;
    uint16_t did = 0;
    uint64_t addr = 0;  // page-selective: base, aligned to 2^am pages
    uint8_t am = 0;     // address mask: 2^am pages
    bool ih = false;    // invalidation hint: only leaf entries changed
};

// Interrupt entry cache: every entry, or the 2^im indexes from `index`
// with its low im bits ignored.
struct IecInvalidation {
    bool global = true;
    uint16_t index = 0;
    uint8_t im = 0;
};

// Scalable mode (256-bit descriptors).  PASIDs are 20 bits.
constexpr uint32_t PASID_BITS = 20;

// PASID-based-IOTLB Invalidate Descriptor (P_IOTLB): every mapping of
// (DID, PASID), or the 2^am pages at `addr` within it.
struct PasidIotlbInvalidation {
    bool page_selective = false;  // G=11b; G=10b: PASID-selective
    uint16_t did = 0;
    uint32_t pasid = 0;
    uint64_t addr = 0;
    uint8_t am = 0;
    bool ih = false;
};

// PASID-cache Invalidate Descriptor.
enum class PasidCacheGranularity : uint8_t { Domain = 0, Pasid = 1, Global = 3 };
struct PasidCacheInvalidation {
    PasidCacheGranularity granularity = PasidCacheGranularity::Global;
    uint16_t did = 0;
    uint32_t pasid = 0;
};

// PASID-based-Device-TLB Invalidate Descriptor: the untranslated range
// [first, last] of `pasid` (or of every PASID: `global`) in the device-TLB
// of `sid`.
struct PasidDeviceTlbInvalidation {
    uint16_t sid = 0, pfsid = 0;
    uint8_t mip = 0;
    uint32_t pasid = 0;
    bool global = false;
    uint64_t first = 0, last = 0;
};

class Invalidator {
public:
    virtual void invalidate_context(const ContextInvalidation &req) = 0;
    // Returns the IOTLB probes it made (the queue's slices are bounded by them).
    virtual uint64_t invalidate_iotlb(const IotlbInvalidation &req) = 0;
    // A device-IOTLB invalidate descriptor for source-id `sid` over the
    // untranslated range [first, last].
    virtual void invalidate_device_tlb(uint16_t sid, uint16_t pfsid, uint8_t mip, uint64_t first,
                                       uint64_t last) = 0;
    virtual void invalidate_interrupt_entries(const IecInvalidation &req) = 0;
    // Scalable mode.  Returns the IOTLB probes it made, as invalidate_iotlb().
    virtual uint64_t invalidate_pasid_iotlb(const PasidIotlbInvalidation &req) = 0;
    virtual void invalidate_pasid_cache(const PasidCacheInvalidation &req) = 0;
    virtual void invalidate_pasid_device_tlb(const PasidDeviceTlbInvalidation &req) = 0;

protected:
    ~Invalidator() = default;
};

}  // namespace viommu::vtd
