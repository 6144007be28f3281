// SPDX-License-Identifier: GPL-2.0-or-later
// VT-d remapping-unit register offsets and bit fields (legacy mode), named
// after the Intel VT-d specification, chapter 11 ("Register Descriptions").
#pragma once

#include <cstdint>

namespace viommu::vtd {

constexpr uint64_t bit(unsigned n)
{
    return n < 64 ? uint64_t{1} << n : 0;
}
// Bits hi..lo set; empty when lo > hi or lo > 63.
constexpr uint64_t mask(unsigned hi, unsigned lo)
{
    if (lo > hi || lo > 63)
        return 0;
    return (hi >= 63 ? ~uint64_t{0} : (bit(hi + 1) - 1)) & ~(bit(lo) - 1);
}
constexpr uint64_t field(uint64_t v, unsigned hi, unsigned lo)
{
    return (v & mask(hi, lo)) >> lo;
}

namespace reg {
constexpr uint32_t VER = 0x00, CAP = 0x08, ECAP = 0x10, GCMD = 0x18, GSTS = 0x1c, RTADDR = 0x20,
                   CCMD = 0x28, FSTS = 0x34, FECTL = 0x38, FEDATA = 0x3c, FEADDR = 0x40,
                   FEUADDR = 0x44, AFLOG = 0x58, PMEN = 0x64, PLMBASE = 0x68, PLMLIMIT = 0x6c,
                   PHMBASE = 0x70, PHMLIMIT = 0x78, IQH = 0x80, IQT = 0x88, IQA = 0x90, ICS = 0x9c,
                   IECTL = 0xa0, IEDATA = 0xa4, IEADDR = 0xa8, IEUADDR = 0xac, IQER = 0xb0,
                   IRTA = 0xb8;
// Placement of the IOTLB registers (ECAP.IRO) and fault recording registers
// (CAP.FRO) is implementation-defined; both sit above the fixed registers.
constexpr uint32_t IVA = 0x100, IOTLB = 0x108;
constexpr uint32_t FRCD = 0x200;
constexpr uint32_t FRCD_LEN = 16;
}  // namespace reg

constexpr uint32_t VERSION = 0x10;  // 1.0

namespace cap {
constexpr unsigned ND = 0, AFL = 3, RWBF = 4, PLMR = 5, PHMR = 6, CM = 7, SAGAW = 8, MGAW = 16,
                   ZLR = 22, FRO = 24, SLLPS_2M = 34, SLLPS_1G = 35, PSI = 39, NFR = 40, MAMV = 48,
                   DWD = 54, DRD = 55, FS1GP = 56, FS5LP = 60;
constexpr uint64_t SAGAW_39 = 2, SAGAW_48 = 4, SAGAW_57 = 8;
}  // namespace cap

namespace ecap {
constexpr unsigned C = 0, QI = 1, DT = 2, IR = 3, EIM = 4, PT = 6, SC = 7, IRO = 8, MHMV = 20,
                   NEST = 26, SRS = 31, EAFS = 34, PSS = 35, PASID = 40, SMTS = 43, SLTS = 46,
                   FLTS = 47, SMPWC = 48, RPS = 49;
}

// RTADDR_REG.TTM (bits 11:10): 00b legacy mode, 01b scalable mode; 10b and
// 11b are not offered (the bit 11 stays clear).
namespace rtaddr {
constexpr uint64_t TTM_SCALABLE = bit(10);
}

namespace gcmd {  // same positions in GSTS
constexpr uint32_t TE = 1u << 31, SRTP = 1u << 30, SFL = 1u << 29, EAFL = 1u << 28, WBF = 1u << 27,
                   QIE = 1u << 26, IRE = 1u << 25, SIRTP = 1u << 24, CFI = 1u << 23;
}

// IRTA_REG: table address, extended interrupt mode, size (2^(S+1) entries).
namespace irta {
constexpr uint64_t ADDR = mask(63, 12), EIME = bit(11), S = mask(3, 0);
}

namespace fsts {
constexpr uint32_t PFO = 1u << 0, PPF = 1u << 1, AFO = 1u << 2, APF = 1u << 3, IQE = 1u << 4,
                   ICE = 1u << 5, ITE = 1u << 6;
constexpr unsigned FRI = 8;
constexpr uint32_t W1C = PFO | IQE | ICE | ITE;
}  // namespace fsts

// FECTL and IECTL.
constexpr uint32_t ECTL_IM = 1u << 31, ECTL_IP = 1u << 30;
constexpr uint32_t ICS_IWC = 1;

namespace ccmd {
constexpr uint64_t ICC = bit(63);
constexpr unsigned CIRG = 61, CAIG = 59, FM = 32, SID = 16, DID = 0;
constexpr uint64_t WRITABLE = ICC | mask(62, 61) | mask(33, 32) | mask(31, 0);
}  // namespace ccmd

namespace iotlb_reg {
constexpr uint64_t IVT = bit(63), DR = bit(49), DW = bit(48);
constexpr unsigned IIRG = 60, IAIG = 57, DID = 32;
constexpr uint64_t WRITABLE = IVT | mask(61, 60) | DR | DW | mask(47, 32);
}  // namespace iotlb_reg

namespace iva {
constexpr uint64_t ADDR = mask(63, 12), IH = bit(6), AM = mask(5, 0);
}

// Invalidation granularities shared by CCMD, the IOTLB register and
// descriptors (the encodings coincide).
enum class Granularity : uint8_t { Invalid = 0, Global = 1, Domain = 2, Selective = 3 };

namespace iq {
constexpr uint64_t IQA_BASE = mask(63, 12), IQA_DW = bit(11), IQA_QS = mask(2, 0);
constexpr uint64_t IQT_QT = mask(18, 4);
constexpr unsigned DESC_SHIFT = 4;      // 128-bit descriptors
constexpr unsigned DESC_SHIFT_256 = 5;  // 256-bit descriptors (IQA.DW)
constexpr uint64_t IQT_QT_256_RSVD = bit(4);
}  // namespace iq

// Root, context and second-level entries (legacy mode).
namespace entry {
constexpr uint64_t PRESENT = 1;
constexpr uint64_t ROOT_LO_RSVD = mask(11, 1);
constexpr uint64_t CTX_LO_FPD = bit(1), CTX_LO_TT = mask(3, 2), CTX_LO_RSVD = mask(11, 4);
constexpr uint64_t CTX_HI_AW = mask(2, 0), CTX_HI_RSVD = bit(7) | mask(63, 24);
constexpr unsigned CTX_HI_DID = 8;
constexpr uint64_t ADDR = mask(63, 12);
constexpr uint64_t SL_R = bit(0), SL_W = bit(1), SL_PS = bit(7), SL_SNP = bit(11), SL_TM = bit(62);
constexpr uint64_t SL_IGNORED = mask(61, 52) | bit(63);
}  // namespace entry

enum class TranslationType : uint8_t {
    Untranslated = 0,
    DeviceTlb = 1,
    PassThrough = 2,
    Reserved = 3
};

constexpr unsigned PAGE_SHIFT = 12;
constexpr uint64_t PAGE_SIZE = uint64_t{1} << PAGE_SHIFT;
// Requests without PASID here are interrupt requests, never translated;
// no translation may produce an address here either.
constexpr uint64_t INTERRUPT_RANGE_FIRST = 0xfee00000, INTERRUPT_RANGE_LAST = 0xfeefffff;
constexpr unsigned LEVEL_STRIDE = 9;
constexpr unsigned level_shift(unsigned level)
{
    return PAGE_SHIFT + LEVEL_STRIDE * (level - 1);
}
constexpr unsigned level_aw(unsigned levels)
{
    return PAGE_SHIFT + LEVEL_STRIDE * levels;
}

}  // namespace viommu::vtd
