// SPDX-License-Identifier: GPL-2.0-or-later
// Migration: the architectural state as a VtdState (include/viommu/vtd.h),
// which the host describes field by field in its own format.  set_state()
// checks every value against what the modelled unit could hold, and
// changes nothing unless all of it is acceptable.
#include <algorithm>
#include <type_traits>

#include "engine.hpp"
#include "registers.hpp"

namespace viommu::vtd {

// No padding: a state's bytes are its value (tests and fuzzers compare them).
static_assert(std::has_unique_object_representations_v<VtdState>);

void Engine::get_state(VtdState &st) const
{
    st = {};
    st.cap = f_.cap;
    st.ecap = f_.ecap;
    const InterruptRemapping::State is = ir_.save();
    st.gsts = gsts_ | is.status;
    st.irta = is.irta;
    st.irta_latched = is.latched;
    st.rtaddr = rtaddr_;
    st.root_table = root_table_.load();
    st.ccmd = ccmd_;
    st.iva = iva_;
    st.iotlb = iotlb_reg_;
    const FaultRecorder::State fs = faults_.save();
    st.fsts = fs.fsts;
    st.fectl = fs.fectl;
    st.fedata = fs.fedata;
    st.feaddr = fs.feaddr;
    st.feuaddr = fs.feuaddr;
    st.n_fault_records = static_cast<uint32_t>(fs.records.size());
    for (size_t i = 0; i < fs.records.size() && i < VTD_MAX_FAULT_RECORDS; i++)
        st.fault_records[i] = {fs.records[i][0], fs.records[i][1]};
    const InvalidationQueue::State qs = queue_.save();
    st.iqh = qs.iqh;
    st.iqt = qs.iqt;
    st.iqa = qs.iqa;
    st.ics = qs.ics;
    st.iectl = qs.iectl;
    st.iedata = qs.iedata;
    st.ieaddr = qs.ieaddr;
    st.ieuaddr = qs.ieuaddr;
    st.iqercd = qs.iqercd;
    st.fault_oldest = fs.oldest;
}

VtdStateError Engine::set_state(const VtdState &st)
{
    if (st.cap != f_.cap || st.ecap != f_.ecap || st.n_fault_records != f_.fault_records)
        return VTD_STATE_BAD_MODEL;
    // Register values the device itself could never hold.  RTADDR and the
    // latched root are checked as their registers store them; the root
    // table is a plain address.
    // RTADDR.TTM and the latched table's TTM (scalable mode) only with
    // ECAP.SMTS.
    const uint32_t ir_bits = f_.intremap ? InterruptRemapping::STATUS_BITS : 0;
    if ((st.gsts & ~(gcmd::TE | gcmd::SRTP | gcmd::QIE | ir_bits)) ||
        (st.rtaddr & ~rtaddr_writable(f_)) || (st.root_table & ~rtaddr_writable(f_)) ||
        (!(st.gsts & gcmd::SRTP) && st.root_table))
        return VTD_STATE_BAD_GLOBAL;
    if ((st.ccmd & ~(ccmd::WRITABLE | mask(60, ccmd::CAIG))) || (st.ccmd & ccmd::ICC) ||
        (st.iva & ~(iva::ADDR | iva::IH | iva::AM)) ||
        (st.iotlb & ~(iotlb_reg::WRITABLE | mask(58, iotlb_reg::IAIG))) ||
        (st.iotlb & iotlb_reg::IVT))
        return VTD_STATE_BAD_REGISTER_INVAL;

    const InterruptRemapping::State is{st.irta, st.irta_latched, st.gsts & ir_bits};
    if (!ir_.valid(is))
        return VTD_STATE_BAD_INTERRUPT_REMAPPING;

    FaultRecorder::State fs{st.fsts,    st.fectl, st.fedata,      st.feaddr,
                            st.feuaddr, {},       st.fault_oldest};
    fs.records.resize(st.n_fault_records);
    for (size_t i = 0; i < fs.records.size(); i++)
        fs.records[i] = {st.fault_records[i].lo, st.fault_records[i].hi};
    // A record holds the page address (FI: 63:12) and F, T, FR and SID,
    // and with PASIDs (ECAP.PASID) PP, PRIV and PV.
    const uint64_t pasid_bits = f_.pasid_bits ? mask(59, 40) | bit(31) | bit(29) : 0;
    const bool records_ok = std::all_of(
        fs.records.begin(), fs.records.end(), [pasid_bits](const std::array<uint64_t, 2> &r) {
            return !(r[0] & ~mask(63, PAGE_SHIFT)) &&
                   !(r[1] & ~(mask(63, 62) | mask(39, 32) | mask(15, 0) | pasid_bits));
        });
    const bool unused_zero =
        std::all_of(st.fault_records + st.n_fault_records, st.fault_records + VTD_MAX_FAULT_RECORDS,
                    [](const VtdFaultRecord &r) { return !r.lo && !r.hi; });
    if (!records_ok || !unused_zero || st.reserved)
        return VTD_STATE_BAD_FAULTS;

    const InvalidationQueue::State qs{bool(st.gsts & gcmd::QIE),
                                      st.iqh,
                                      st.iqt,
                                      st.iqa,
                                      st.ics,
                                      st.iectl,
                                      st.iedata,
                                      st.ieaddr,
                                      st.ieuaddr,
                                      st.iqercd};

    // The fault recorder and the queue check their parts as they load
    // them; a refusal of the queue's puts the recorder's back.
    const FaultRecorder::State old_faults = faults_.save();
    if (!faults_.load(fs))
        return VTD_STATE_BAD_FAULTS;
    if (!queue_.load(qs)) {
        faults_.load(old_faults);
        return VTD_STATE_BAD_QUEUE;
    }
    // Accepted: the caches start empty, as after a reset.
    reset();
    faults_.load(fs);
    queue_.load(qs);
    ir_.load(is);
    gsts_ = st.gsts & ~ir_bits;
    rtaddr_ = st.rtaddr;
    ccmd_ = st.ccmd;
    iva_ = st.iva;
    iotlb_reg_ = st.iotlb;
    root_table_.store(st.root_table);
    te_.store(st.gsts & gcmd::TE);
    translations_changed();
    return VTD_STATE_OK;
}

}  // namespace viommu::vtd
