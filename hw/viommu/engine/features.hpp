// SPDX-License-Identifier: GPL-2.0-or-later
// What the modelled remapping unit supports, derived once from VtdConfig:
// the CAP/ECAP values and the limits the decoders check against.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "viommu/vtd.h"

namespace viommu::vtd {

struct Features {
    unsigned aw_bits = 48;  // MGAW, also used as the host address width
    uint8_t sagaw = 0;      // CAP.SAGAW bit set: bit (levels - 2)
    bool pass_through = true;
    bool caching_mode = false;
    bool device_iotlb = false;
    bool superpage_1g = true;
    bool intremap = false;       // ECAP.IR
    bool eim = false;            // ECAP.EIM
    bool scalable_mode = false;  // ECAP.SMTS (and with it IQA.DW)
    bool snoop_control = false;  // ECAP.SC
    // What scalable mode offers.
    bool first_stage = false;   // ECAP.FLTS
    bool second_stage = false;  // ECAP.SLTS
    bool nested = false;        // ECAP.NEST: both stages
    bool fs1gp = false;         // CAP.FS1GP
    bool fs5lp = false;         // CAP.FS5LP: 5-level first stage (with aw_bits 57)
    unsigned pasid_bits = 0;    // ECAP.PASID and PSS + 1; 0: no requests with PASID
    bool supervisor = false;    // ECAP.SRS: supervisor requests (SRE)
    uint32_t iotlb_entries = 0;
    uint32_t context_entries = 0;
    unsigned fault_records = 8;
    unsigned mamv = 0;  // CAP.MAMV: largest address mask for PSI
    uint32_t iec_entries = 0;
    uint64_t cap = 0;
    uint64_t ecap = 0;

    // Bits of a table pointer or output address beyond the host address
    // width: aw_bits, at most 52 (entries carry addresses in bits 51:12;
    // 61:52 of a second-level entry are ignored, also with 57-bit MGAW).
    uint64_t above_haw() const { return ~uint64_t{0} << (aw_bits < 52 ? aw_bits : 52); }
    bool levels_supported(unsigned levels) const { return sagaw & (1u << (levels - 2)); }
    unsigned max_levels() const;

    static std::optional<Features> from_config(const VtdConfig &cfg, std::string &err);
};

}  // namespace viommu::vtd
