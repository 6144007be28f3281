// SPDX-License-Identifier: GPL-2.0-or-later
// vtd_engine_save/load: round trip, malformed blobs reset the engine.
#include <cstddef>
#include <random>

#include "fake_host.hpp"

using namespace vtdtest;

namespace {

std::vector<uint8_t> save(FakeHost &h)
{
    size_t len = 0;
    uint8_t *p = vtd_engine_save(h.e, &len);
    std::vector<uint8_t> v(p, p + len);
    free(p);
    return v;
}

void dirty(FakeHost &h, uint64_t pt)
{
    h.set_context(0x8, pt, 1, 4);
    h.map(pt, 4, 0x1000, 0xa000, 3);
    h.enable_translation();
    h.enable_qi(1);
    h.submit(FakeHost::wait_desc(false, true, false, 0), 0);
    h.w32(FEDATA, 0x31);
    h.w32(FEADDR, 0xfee00000);
    h.translate(0x8, 0x2000, VTD_PERM_WRITE);
    h.translate(0x0500, 0, VTD_PERM_READ);
    h.w64(h.iva, 0x5000 | 3);
}

}  // namespace

TEST(Migration, RoundTrip)
{
    FakeHost src;
    uint64_t pt = src.alloc_page();
    dirty(src, pt);
    std::vector<uint8_t> blob = save(src);

    FakeHost dst;
    dst.ram = src.ram;
    ASSERT_EQ(vtd_engine_load(dst.e, blob.data(), blob.size()), 0);
    for (uint32_t off = 0; off < 0x1000; off += 4)
        EXPECT_EQ(dst.mmio32(off), src.mmio32(off)) << std::hex << off;
    VtdTranslation t{};
    EXPECT_EQ(dst.translate(0x8, 0x1000, VTD_PERM_READ, &t), VTD_FR_NONE);
    EXPECT_EQ(t.phys_base, 0xa000u);
    EXPECT_TRUE(vtd_engine_translation_enabled(dst.e));
    // The queue continues where it was.
    dst.queue = src.queue;
    dst.queue_qs = 1;
    dst.tail = src.tail;
    uint64_t status = dst.alloc_page();
    dst.submit(FakeHost::wait_desc(true, false, false, 3), status);
    EXPECT_EQ(dst.get32(status), 3u);
    EXPECT_EQ(save(dst).size(), blob.size());
}

TEST(Migration, MalformedBlobsResetTheEngine)
{
    FakeHost src;
    uint64_t pt = src.alloc_page();
    dirty(src, pt);
    std::vector<uint8_t> blob = save(src);

    auto expect_rejected = [&](const std::vector<uint8_t> &b, const char *what) {
        FakeHost dst;
        uint64_t p = dst.alloc_page();
        dirty(dst, p);
        EXPECT_EQ(vtd_engine_load(dst.e, b.data(), b.size()), -1) << what;
        EXPECT_EQ(dst.mmio32(GSTS), 0u) << what;
        EXPECT_EQ(dst.mmio32(FSTS), 0u) << what;
        EXPECT_EQ(dst.mmio64(IQA), 0u) << what;
        EXPECT_FALSE(vtd_engine_translation_enabled(dst.e)) << what;
    };
    expect_rejected({}, "empty");
    for (size_t n = 1; n < blob.size(); n += 7)
        expect_rejected(std::vector<uint8_t>(blob.begin(), blob.begin() + n), "truncated");
    auto extra = blob;
    extra.push_back(0);
    expect_rejected(extra, "trailing byte");
    auto bad_magic = blob;
    bad_magic[0] ^= 1;
    expect_rejected(bad_magic, "magic");
    auto bad_version = blob;
    bad_version[4] = 2;
    expect_rejected(bad_version, "version");
    auto bad_cap = blob;
    bad_cap[8 + 2] ^= 0x01;  // MGAW
    expect_rejected(bad_cap, "cap");
    // GSTS with an unsupported bit (IRES).
    auto bad_gsts = blob;
    bad_gsts[24 + 3] |= 0x02;
    expect_rejected(bad_gsts, "gsts");

    // A config mismatch (different number of fault records) is malformed too.
    VtdConfig c = FakeHost::default_config();
    c.fault_records = 9;
    FakeHost other(1 << 20, c);
    EXPECT_EQ(vtd_engine_load(other.e, blob.data(), blob.size()), -1);
    EXPECT_EQ(vtd_engine_load(other.e, nullptr, 5), -1);
}

TEST(Migration, RandomCorruptionNeverCrashes)
{
    FakeHost src;
    uint64_t pt = src.alloc_page();
    dirty(src, pt);
    std::vector<uint8_t> blob = save(src);
    std::mt19937_64 rng(42);
    FakeHost dst;
    unsigned accepted = 0;
    for (unsigned i = 0; i < 2000; i++) {
        auto b = blob;
        unsigned flips = 1 + rng() % 4;
        for (unsigned f = 0; f < flips; f++)
            b[rng() % b.size()] ^= 1u << (rng() % 8);
        int r = vtd_engine_load(dst.e, b.data(), b.size());
        if (r == 0) {
            accepted++;
        } else {
            EXPECT_EQ(dst.mmio32(GSTS), 0u);
        }
        // Whatever was loaded, the device keeps working.
        dst.translate(0x8, 0x1000, VTD_PERM_READ);
        dst.w32(IQT, 0x20);
    }
    EXPECT_LT(accepted, 2000u);
}

// Found by tests/fuzz (engine target, fixed-seed replay): a guest that
// shrinks IQA.QS below its queue head while the queue is on leaves the
// device in a state it must still migrate.  The queue then stops with IQE
// at the next attempt to run it, on the source and on the destination.
TEST(Migration, HeadBeyondShrunkQueueLoads)
{
    FakeHost src;
    src.enable_qi(1);  // 512 entries
    for (unsigned i = 0; i < 300; i++)
        src.push(FakeHost::wait_desc(false, false, false, 0), 0);
    src.kick();
    ASSERT_EQ(src.mmio64(IQH), 300u << 4);
    src.w64(IQA, src.queue | 0);  // 256 entries: IQH is past the end
    auto blob = save(src);
    FakeHost dst;
    ASSERT_EQ(vtd_engine_load(dst.e, blob.data(), blob.size()), 0);
    EXPECT_EQ(save(dst), blob);
    dst.w32(IQT, 0);
    EXPECT_TRUE(dst.mmio32(FSTS) & 0x10) << "IQE: the head is outside the queue";
    EXPECT_EQ(dst.mmio64(IQH), 300u << 4);
}
