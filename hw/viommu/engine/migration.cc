// SPDX-License-Identifier: GPL-2.0-or-later
// Migration blob: the architectural state, little-endian, versioned.
//
//   u32 magic "VTDE", u32 version, u64 CAP, u64 ECAP (must match the
//   destination's configuration), u32 GSTS, u64 RTADDR, u64 latched root
//   table address, u64 CCMD, u64 IVA, u64 IOTLB, u32 FSTS, u32 FECTL,
//   u32 FEDATA, u32 FEADDR, u32 FEUADDR, u16 n, n x (u64, u64) FRCD,
//   u8 QIES, u64 IQH, u64 IQT, u64 IQA, u32 ICS, u32 IECTL, u32 IEDATA,
//   u32 IEADDR, u32 IEUADDR.  Nothing may follow.
#include "engine.hpp"

#include "registers.hpp"

namespace viommu::vtd {

static constexpr uint32_t MAGIC = 0x45445456;  // "VTDE"
static constexpr uint32_t VERSION_1 = 1;

namespace {

class Writer {
public:
    std::vector<uint8_t> out;
    template <typename T>
    void put(T v)
    {
        for (size_t i = 0; i < sizeof(T); i++)
            out.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
    }
};

class Reader {
public:
    explicit Reader(std::span<const uint8_t> in) : in_(in) {}
    template <typename T>
    bool get(T &v)
    {
        if (in_.size() - pos_ < sizeof(T))
            return false;
        uint64_t x = 0;
        for (size_t i = 0; i < sizeof(T); i++)
            x |= uint64_t{in_[pos_ + i]} << (8 * i);
        pos_ += sizeof(T);
        v = static_cast<T>(x);
        return true;
    }
    bool done() const { return pos_ == in_.size(); }

private:
    std::span<const uint8_t> in_;
    size_t pos_ = 0;
};

}  // namespace

std::vector<uint8_t> Engine::save() const
{
    Writer w;
    w.put(MAGIC);
    w.put(VERSION_1);
    w.put(f_.cap);
    w.put(f_.ecap);
    w.put(gsts_);
    w.put(rtaddr_);
    w.put(root_table_.load());
    w.put(ccmd_);
    w.put(iva_);
    w.put(iotlb_reg_);
    auto fs = faults_.save();
    for (uint32_t v : {fs.fsts, fs.fectl, fs.fedata, fs.feaddr, fs.feuaddr})
        w.put(v);
    w.put(static_cast<uint16_t>(fs.records.size()));
    for (auto &r : fs.records) {
        w.put(r[0]);
        w.put(r[1]);
    }
    auto qs = queue_.save();
    w.put(static_cast<uint8_t>(qs.enabled));
    for (uint64_t v : {qs.iqh, qs.iqt, qs.iqa})
        w.put(v);
    for (uint32_t v : {qs.ics, qs.iectl, qs.iedata, qs.ieaddr, qs.ieuaddr})
        w.put(v);
    return std::move(w.out);
}

bool Engine::load(std::span<const uint8_t> blob)
{
    Reader r(blob);
    uint32_t magic = 0, version = 0, gsts = 0;
    uint64_t cap = 0, ecap = 0, rtaddr = 0, root = 0, ccmd = 0, iva = 0, iotlb = 0;
    FaultRecorder::State fs;
    InvalidationQueue::State qs;
    uint16_t n = 0;
    uint8_t qies = 0;

    bool ok = r.get(magic) && magic == MAGIC && r.get(version) && version == VERSION_1 &&
              r.get(cap) && cap == f_.cap && r.get(ecap) && ecap == f_.ecap && r.get(gsts) &&
              r.get(rtaddr) && r.get(root) && r.get(ccmd) && r.get(iva) && r.get(iotlb) &&
              r.get(fs.fsts) && r.get(fs.fectl) && r.get(fs.fedata) && r.get(fs.feaddr) &&
              r.get(fs.feuaddr) && r.get(n) && n == f_.fault_records;
    if (ok) {
        fs.records.resize(n);
        for (auto &rec : fs.records)
            ok = ok && r.get(rec[0]) && r.get(rec[1]);
    }
    ok = ok && r.get(qies) && qies <= 1 && r.get(qs.iqh) && r.get(qs.iqt) && r.get(qs.iqa) &&
         r.get(qs.ics) && r.get(qs.iectl) && r.get(qs.iedata) && r.get(qs.ieaddr) &&
         r.get(qs.ieuaddr) && r.done();
    qs.enabled = qies;
    // Register values the device itself could never hold are malformed.
    ok = ok && !(gsts & ~(gcmd::TE | gcmd::SRTP | gcmd::QIE)) &&
         bool(gsts & gcmd::QIE) == qs.enabled && !(rtaddr & ~mask(63, 12)) &&
         !(root & ~entry::ADDR) && !(ccmd & ~(ccmd::WRITABLE | mask(60, ccmd::CAIG))) &&
         !(ccmd & ccmd::ICC) && !(iva & ~(iva::ADDR | iva::IH | iva::AM)) &&
         !(iotlb & ~(iotlb_reg::WRITABLE | mask(58, iotlb_reg::IAIG))) && !(iotlb & iotlb_reg::IVT);
    reset();
    if (!ok || !faults_.load(fs) || !queue_.load(qs)) {
        reset();
        return false;
    }
    gsts_ = gsts;
    rtaddr_ = rtaddr;
    ccmd_ = ccmd;
    iva_ = iva;
    iotlb_reg_ = iotlb;
    root_table_.store(root);
    te_.store(gsts & gcmd::TE);
    translations_changed();
    return true;
}

}  // namespace viommu::vtd
