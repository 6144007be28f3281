// SPDX-License-Identifier: GPL-2.0-or-later
#include "features.hpp"

#include "registers.hpp"

namespace viommu::vtd {

static constexpr uint32_t DEFAULT_IOTLB_ENTRIES = 131072;
static constexpr uint32_t DEFAULT_CONTEXT_ENTRIES = 1024;
static constexpr uint32_t MAX_IOTLB_ENTRIES = 1u << 24;  // 256 MiB of sets, 16 bytes an entry
static constexpr uint32_t MAX_CONTEXT_ENTRIES = 65536;   // one per source-id
static constexpr unsigned DEFAULT_FAULT_RECORDS = 8;
// CAP.NFR could say 256, but the 16-byte records follow FRO in the one
// 4 KiB register page: 224 of them fit, the C ABI's VTD_MAX_FAULT_RECORDS.
static constexpr unsigned MAX_FAULT_RECORDS = (VTD_MMIO_SIZE - reg::FRCD) / reg::FRCD_LEN;
static_assert(MAX_FAULT_RECORDS == VTD_MAX_FAULT_RECORDS && MAX_FAULT_RECORDS == 224);
static constexpr unsigned MAMV = 18;  // up to 1 GiB per page-selective request
static constexpr unsigned DOMAIN_ID_BITS = 16;
static constexpr uint32_t IEC_ENTRIES = 1024;
static constexpr unsigned MAX_HANDLE_MASK = 15;  // ECAP.MHMV: the field's largest value
static constexpr unsigned MAX_PASID_BITS = 20;

unsigned Features::max_levels() const
{
    for (unsigned levels = 5; levels >= 3; levels--)
        if (levels_supported(levels))
            return levels;
    return 3;
}

// The scalable-mode part of the configuration; false with `err` set when
// it is inconsistent.
static bool from_scalable_config(Features &f, const VtdConfig &cfg, std::string &err)
{
    if (!cfg.scalable_mode) {
        if (cfg.first_stage || cfg.second_stage || cfg.fs1gp || cfg.pasid_bits) {
            err = "first_stage, second_stage, fs1gp and pasid_bits need scalable_mode";
            return false;
        }
        return true;
    }
    if (!cfg.first_stage && !cfg.second_stage) {
        err = "scalable_mode needs first_stage or second_stage (or both)";
        return false;
    }
    if (cfg.fs1gp && !cfg.first_stage) {
        err = "fs1gp (1 GiB first-stage pages) needs first_stage";
        return false;
    }
    if (cfg.pasid_bits > MAX_PASID_BITS) {
        err = "pasid_bits must be 0 (no PASID) or 1.." + std::to_string(MAX_PASID_BITS);
        return false;
    }
    f.first_stage = cfg.first_stage;
    f.second_stage = cfg.second_stage;
    f.nested = cfg.first_stage && cfg.second_stage;
    f.fs1gp = cfg.fs1gp;
    // A 5-level first stage translates 57-bit inputs: only where the
    // second stage may be that wide too.
    f.fs5lp = cfg.first_stage && cfg.aw_bits == 57;
    f.pasid_bits = cfg.pasid_bits;
    // Supervisor requests come only with a PASID; every PASID-table entry
    // gates them with SRE (Linux sets it in second-stage and pass-through
    // entries when ECAP.SRS is set, and clears it in RID2PASID's to have
    // them blocked).
    f.supervisor = cfg.pasid_bits != 0;
    return true;
}

std::optional<Features> Features::from_config(const VtdConfig &cfg, std::string &err)
{
    Features f;
    switch (cfg.aw_bits) {
    case 39:
        f.sagaw = cap::SAGAW_39;
        break;
    case 48:
        f.sagaw = cap::SAGAW_39 | cap::SAGAW_48;
        break;
    case 57:
        f.sagaw = cap::SAGAW_39 | cap::SAGAW_48 | cap::SAGAW_57;
        break;
    default:
        err = "aw_bits must be 39, 48 or 57";
        return std::nullopt;
    }
    // Bits of SAGAW: 1 = 3-level, 2 = 4-level, 3 = 5-level; levels_supported
    // indexes them as (levels - 2).
    f.aw_bits = cfg.aw_bits;
    f.pass_through = cfg.pass_through;
    f.caching_mode = cfg.caching_mode;
    f.device_iotlb = cfg.device_iotlb;
    f.superpage_1g = cfg.superpage_1g;
    f.iotlb_entries = cfg.iotlb_entries ? cfg.iotlb_entries : DEFAULT_IOTLB_ENTRIES;
    f.context_entries = cfg.context_entries ? cfg.context_entries : DEFAULT_CONTEXT_ENTRIES;
    if (f.iotlb_entries > MAX_IOTLB_ENTRIES) {
        err = "iotlb_entries must be at most " + std::to_string(MAX_IOTLB_ENTRIES) +
              " (0: default " + std::to_string(DEFAULT_IOTLB_ENTRIES) + ")";
        return std::nullopt;
    }
    if (f.context_entries > MAX_CONTEXT_ENTRIES) {
        err = "context_entries must be at most " + std::to_string(MAX_CONTEXT_ENTRIES) +
              " (one per source-id; 0: default " + std::to_string(DEFAULT_CONTEXT_ENTRIES) + ")";
        return std::nullopt;
    }
    f.fault_records = cfg.fault_records ? cfg.fault_records : DEFAULT_FAULT_RECORDS;
    if (f.fault_records > MAX_FAULT_RECORDS) {
        err = "fault_records must be 1.." + std::to_string(MAX_FAULT_RECORDS) + " (0: default " +
              std::to_string(DEFAULT_FAULT_RECORDS) +
              "): the records must fit in the 4 KiB register page from FRO 0x200";
        return std::nullopt;
    }
    f.mamv = MAMV;
    if (cfg.eim && !cfg.intremap) {
        err = "eim needs intremap";
        return std::nullopt;
    }
    f.intremap = cfg.intremap;
    f.eim = cfg.eim;
    f.scalable_mode = cfg.scalable_mode;
    f.snoop_control = cfg.snoop_control;
    f.iec_entries = IEC_ENTRIES;
    if (!from_scalable_config(f, cfg, err))
        return std::nullopt;

    f.cap = uint64_t{(DOMAIN_ID_BITS - 4) / 2} << cap::ND | uint64_t{f.caching_mode} << cap::CM |
            uint64_t{f.sagaw} << cap::SAGAW | uint64_t{f.aw_bits - 1} << cap::MGAW |
            uint64_t{reg::FRCD / 16} << cap::FRO | bit(cap::SLLPS_2M) |
            uint64_t{f.superpage_1g} << cap::SLLPS_1G | bit(cap::PSI) |
            uint64_t{f.fault_records - 1} << cap::NFR | uint64_t{f.mamv} << cap::MAMV |
            bit(cap::DWD) | bit(cap::DRD);
    // Page-walk coherency (C): the engine reads guest memory directly, so
    // the guest need not flush CPU caches after editing tables.
    f.ecap = bit(ecap::C) | bit(ecap::QI) | uint64_t{f.device_iotlb} << ecap::DT |
             uint64_t{f.intremap} << ecap::IR | uint64_t{f.eim} << ecap::EIM |
             uint64_t{f.pass_through} << ecap::PT | uint64_t{f.snoop_control} << ecap::SC |
             uint64_t{reg::IVA / 16} << ecap::IRO;
    // MHMV: an IEC invalidation's index mask covers up to 2^15 entries;
    // Linux refuses multi-vector MSI (a block of 2^n IRTEs) beyond it.
    if (f.intremap)
        f.ecap |= uint64_t{MAX_HANDLE_MASK} << ecap::MHMV;
    if (f.scalable_mode) {
        // SMPWC: scalable-mode walks are coherent too (PWSNP may be set).
        // RPS: the context entry's RID_PASID is honoured (with PASIDs).
        // EAFS: the extended-accessed flag (EAFE) with the first stage.
        f.cap |= uint64_t{f.fs1gp} << cap::FS1GP | uint64_t{f.fs5lp} << cap::FS5LP;
        f.ecap |= bit(ecap::SMTS) | bit(ecap::SMPWC) | uint64_t{f.first_stage} << ecap::FLTS |
                  uint64_t{f.second_stage} << ecap::SLTS | uint64_t{f.nested} << ecap::NEST |
                  uint64_t{f.first_stage} << ecap::EAFS | uint64_t{f.supervisor} << ecap::SRS;
        if (f.pasid_bits)
            f.ecap |= bit(ecap::PASID) | uint64_t{f.pasid_bits - 1} << ecap::PSS | bit(ecap::RPS);
    }
    return f;
}

}  // namespace viommu::vtd
