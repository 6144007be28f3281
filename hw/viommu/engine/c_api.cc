// SPDX-License-Identifier: GPL-2.0-or-later
// The extern "C" boundary (include/viommu/vtd.h).  No exception crosses it:
// the only throwing operations are allocations, caught here.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine.hpp"
#include "viommu/vtd.h"

using viommu::vtd::Engine;

struct VtdEngine {
    std::unique_ptr<Engine> engine;
};

static void copy_error(char *err, size_t err_len, const char *msg)
{
    if (err && err_len) {
        std::strncpy(err, msg, err_len - 1);
        err[err_len - 1] = '\0';
    }
}

extern "C" {

void vtd_config_default(VtdConfig *cfg)
{
    if (!cfg)
        return;
    *cfg = {};
    cfg->aw_bits = 48;
    cfg->pass_through = true;
    cfg->caching_mode = false;
    cfg->device_iotlb = false;
    cfg->superpage_1g = true;
}

VtdEngine *vtd_engine_new(const VtdConfig *cfg, const VtdHostOps *ops, void *opaque, char *err,
                          size_t err_len)
{
    if (!cfg || !ops) {
        copy_error(err, err_len, "config and host ops are mandatory");
        return nullptr;
    }
    try {
        std::string why;
        auto engine = Engine::create(*cfg, *ops, opaque, why);
        if (!engine) {
            copy_error(err, err_len, why.c_str());
            return nullptr;
        }
        return std::make_unique<VtdEngine>(VtdEngine{std::move(engine)}).release();
    } catch (const std::bad_alloc &) {
        copy_error(err, err_len, "out of memory");
        return nullptr;
    }
}

void vtd_engine_free(VtdEngine *e)
{
    std::unique_ptr<VtdEngine> owned(e);
}

void vtd_engine_reset(VtdEngine *e)
{
    e->engine->reset();
}

uint64_t vtd_engine_mmio_read(VtdEngine *e, uint64_t offset, unsigned size)
{
    return e->engine->mmio_read(offset, size);
}

void vtd_engine_mmio_write(VtdEngine *e, uint64_t offset, uint64_t value, unsigned size)
{
    e->engine->mmio_write(offset, value, size);
}

bool vtd_engine_queue_pending(VtdEngine *e)
{
    return e->engine->queue_pending();
}

bool vtd_engine_process_queue(VtdEngine *e)
{
    return e->engine->process_queue();
}

VtdFaultReason vtd_engine_translate(VtdEngine *e, uint16_t sid, uint64_t addr, unsigned access,
                                    bool record_fault, VtdTranslation *out)
{
    if (out)
        return e->engine->translate(sid, addr, access, record_fault, *out);
    VtdTranslation t;
    return e->engine->translate(sid, addr, access, record_fault, t);
}

VtdFaultReason vtd_engine_translate_pasid(VtdEngine *e, uint16_t sid, uint32_t pasid,
                                          bool privileged, uint64_t addr, unsigned access,
                                          bool record_fault, VtdTranslation *out)
{
    VtdTranslation t;
    return e->engine->translate_pasid(sid, pasid, privileged, addr, access, record_fault,
                                      out ? *out : t);
}

bool vtd_engine_translation_enabled(VtdEngine *e)
{
    return e->engine->translation_enabled();
}

bool vtd_engine_is_pass_through(VtdEngine *e, uint16_t sid)
{
    return e->engine->is_pass_through(sid);
}

bool vtd_engine_device_context(VtdEngine *e, uint16_t sid, VtdDeviceContext *out)
{
    VtdDeviceContext tmp;
    return e->engine->device_context(sid, out ? *out : tmp);
}

int vtd_engine_walk(VtdEngine *e, uint16_t sid, uint64_t start, uint64_t end, VtdWalkFn cb,
                    void *ctx)
{
    return e->engine->walk(sid, start, end, cb, ctx);
}

VtdIrResult vtd_engine_remap_interrupt(VtdEngine *e, uint16_t sid, uint64_t addr, uint32_t data,
                                       bool record_fault, VtdInterrupt *out)
{
    VtdInterrupt tmp;
    return e->engine->remap_interrupt(sid, addr, data, record_fault, out ? *out : tmp);
}

static char *to_c_string(const std::string &s)
{
    char *p = static_cast<char *>(std::malloc(s.size() + 1));
    if (p)
        std::memcpy(p, s.c_str(), s.size() + 1);
    return p;
}

char *vtd_engine_stats_json(VtdEngine *e)
{
    try {
        return to_c_string(e->engine->stats_json());
    } catch (const std::bad_alloc &) {
        return nullptr;
    }
}

void vtd_engine_stats_reset(VtdEngine *e)
{
    e->engine->stats_reset();
}

size_t vtd_engine_domain_state_bytes(VtdEngine *e)
{
    return e->engine->domain_state_bytes();
}

void vtd_engine_count_notify(VtdEngine *e, VtdNotifyKind kind, uint64_t events)
{
    e->engine->count_notify(kind, events);
}

void vtd_engine_get_state(VtdEngine *e, VtdState *st)
{
    if (st)
        e->engine->get_state(*st);
}

VtdStateError vtd_engine_set_state(VtdEngine *e, const VtdState *st)
{
    if (!st)
        return VTD_STATE_BAD_MODEL;
    return e->engine->set_state(*st);
}

const char *vtd_state_error_str(VtdStateError err)
{
    switch (err) {
    case VTD_STATE_OK:
        return "state accepted";
    case VTD_STATE_BAD_MODEL:
        return "the state is of another model (CAP, ECAP or number of fault records differ)";
    case VTD_STATE_BAD_GLOBAL:
        return "GSTS, RTADDR or the latched root table holds a value the unit cannot hold";
    case VTD_STATE_BAD_REGISTER_INVAL:
        return "CCMD, IVA or IOTLB holds a value the unit cannot hold";
    case VTD_STATE_BAD_FAULTS:
        return "a fault register or fault record holds a value the unit cannot hold";
    case VTD_STATE_BAD_QUEUE:
        return "a queued-invalidation register holds a value the unit cannot hold";
    case VTD_STATE_BAD_INTERRUPT_REMAPPING:
        return "IRTA or the latched interrupt remapping table holds a value the unit cannot hold";
    }
    return "unknown state error";
}

}  // extern "C"
