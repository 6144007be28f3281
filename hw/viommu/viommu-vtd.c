/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * viommu-vtd: a VT-d compatible DMA remapping unit for q35.
 *
 * The architecture (registers, tables, caches, invalidation, faults) lives in
 * the viommu-lab engine behind include/viommu/vtd.h; this file is the QOM
 * glue.  The device subclasses intel-iommu only so that q35 accepts it and
 * the DMAR ACPI table describes it (with interrupt remapping when intremap
 * is on); none of intel-iommu's code runs, its interrupt remapping
 * included: viommu-vtd-ir.c serves the interrupt windows, the IOAPIC and
 * X86IOMMUClass.int_remap from the engine.
 *
 * This file is the device: QOM type, properties, realize, reset,
 * migration and the register window.  The host services the engine calls
 * are in viommu-vtd-host.c, the per-device address spaces and IOMMU
 * notifiers in viommu-vtd-as.c.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "exec/address-spaces.h"
#include "hw/i386/pc.h"
#include "hw/pci-host/q35.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "qemu/main-loop.h"
#include "system/kvm.h"
#include "system/runstate.h"
#include "system/system.h"
#include "kvm/kvm_i386.h"
#include "viommu-vtd-internal.h"
#include "trace.h"

/* Registers */

static uint64_t viommu_vtd_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    ViommuVtdState *s = opaque;
    uint64_t val = vtd_engine_mmio_read(s->engine, addr, size);

    trace_viommu_vtd_mmio_read(addr, size, val);
    return val;
}

/*
 * The engine processes the invalidation queue in bounded slices, so that
 * no register write holds the BQL for long whatever the guest queued: a
 * write runs the first slice, this bottom half one further slice per run
 * (the main loop serves everything else in between) until the queue is
 * done.  IQH shows the guest how far it got.  Only while the VM runs:
 * a slice writes guest memory and sends interrupts, which must not happen
 * in a stopped VM (its state may be being saved) nor, after an incoming
 * migration, before the devices it touches are loaded; the VM's start
 * kicks it again.
 */
static void viommu_vtd_queue_kick(ViommuVtdState *s)
{
    if (runstate_is_running() && vtd_engine_queue_pending(s->engine)) {
        qemu_bh_schedule(s->queue_bh);
    }
}

static void viommu_vtd_vm_state_change(void *opaque, bool running,
                                       RunState state)
{
    if (running) {
        viommu_vtd_queue_kick(opaque);
    }
}

static void viommu_vtd_queue_bh(void *opaque)
{
    ViommuVtdState *s = opaque;

    /* scheduled before the VM stopped: the start kicks it again */
    if (!runstate_is_running()) {
        return;
    }
    vtd_engine_process_queue(s->engine);
    viommu_vtd_process_pending(s);
    viommu_vtd_queue_kick(s);
}

static void viommu_vtd_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                                  unsigned size)
{
    ViommuVtdState *s = opaque;

    trace_viommu_vtd_mmio_write(addr, size, val);
    vtd_engine_mmio_write(s->engine, addr, val, size);
    viommu_vtd_process_pending(s);
    viommu_vtd_queue_kick(s);
}

static const MemoryRegionOps viommu_vtd_mmio_ops = {
    .read = viommu_vtd_mmio_read,
    .write = viommu_vtd_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .impl = {
        .min_access_size = 4,
        .max_access_size = 8,
    },
    .valid = {
        .min_access_size = 4,
        .max_access_size = 8,
    },
};

/* Device */

static char *viommu_vtd_get_stats(Object *obj, Error **errp)
{
    ViommuVtdState *s = VIOMMU_VTD(obj);
    char *json, *ret;

    if (!s->engine) {
        error_setg(errp, "viommu-vtd is not realized");
        return NULL;
    }
    json = vtd_engine_stats_json(s->engine);
    if (!json) {
        error_setg(errp, "viommu-vtd: statistics are not available");
        return NULL;
    }
    ret = g_strdup(json);
    free(json);
    return ret;
}

/*
 * Inherited intel-iommu properties for features the engine does not model:
 * a value other than `ok` is an error, never ignored.
 */
static const struct {
    const char *name;
    size_t offset;                  /* bool in IntelIOMMUState */
    bool ok;
    const char *why;
} viommu_vtd_unsupported[] = {
    { "stale-tm", offsetof(IntelIOMMUState, stale_tm), false,
      "transient mappings are reserved since VT-d 3.2 and not implemented "
      "(machine types before 9.2 set stale-tm=on: use a newer q35 or "
      "stale-tm=off)" },
    { "x-buggy-eim", offsetof(IntelIOMMUState, buggy_eim), false,
      "the compatibility behaviour of machine types before 2.8 (EIM "
      "without KVM's x2APIC support) is not modelled: use intremap=on,eim=on" },
    { "dma-drain", offsetof(IntelIOMMUState, dma_drain), true,
      "read/write draining is always advertised (DMA is synchronous; "
      "machine types before 4.0 set dma-drain=off: use a newer q35 or "
      "dma-drain=on)" },
    { "dma-translation", offsetof(IntelIOMMUState, dma_translation), true,
      "DMA translation is the device's only function" },
};

static bool viommu_vtd_check_config(ViommuVtdState *s, Error **errp)
{
    IntelIOMMUState *is = &s->parent_obj;
    X86IOMMUState *x86 = X86_IOMMU_DEVICE(s);
    g_autoptr(GString) refused = g_string_new(NULL);
    unsigned i;

    /* all at once: an old machine type sets several */
    for (i = 0; i < ARRAY_SIZE(viommu_vtd_unsupported); i++) {
        bool v = *(bool *)((char *)is + viommu_vtd_unsupported[i].offset);

        if (v != viommu_vtd_unsupported[i].ok) {
            g_string_append_printf(refused, "%s%s=%s: %s",
                                   refused->len ? "; nor " : "",
                                   viommu_vtd_unsupported[i].name,
                                   v ? "on" : "off",
                                   viommu_vtd_unsupported[i].why);
        }
    }
    if (refused->len) {
        error_setg(errp, "viommu-vtd does not support %s", refused->str);
        return false;
    }
    /* As intel-iommu decides it (x86-iommu has settled intremap). */
    if (is->intr_eim == ON_OFF_AUTO_ON && !x86_iommu_ir_supported(x86)) {
        error_setg(errp, "viommu-vtd: eim=on needs intremap=on");
        return false;
    }
    if (is->intr_eim == ON_OFF_AUTO_AUTO) {
        is->intr_eim = kvm_irqchip_in_kernel() && x86_iommu_ir_supported(x86) ?
                       ON_OFF_AUTO_ON : ON_OFF_AUTO_OFF;
    }
    if (is->intr_eim == ON_OFF_AUTO_ON && kvm_irqchip_is_split() &&
        !kvm_enable_x2apic()) {
        error_setg(errp, "viommu-vtd: eim=on needs KVM's x2APIC API "
                   "(KVM_CAP_X2APIC_API, Linux 4.7 or later)");
        return false;
    }
    /* Scalable mode: intel-iommu's rules, then the stages (see realize). */
    if (is->flts && !is->scalable_mode) {
        error_setg(errp, "viommu-vtd: x-flts=on needs x-scalable-mode=on");
        return false;
    }
    if (is->pasid && !is->scalable_mode) {
        error_setg(errp, "viommu-vtd: x-pasid-mode=on needs x-scalable-mode=on");
        return false;
    }
    if (s->second_stage != ON_OFF_AUTO_AUTO && !is->scalable_mode) {
        error_setg(errp, "viommu-vtd: second-stage=%s needs x-scalable-mode=on",
                   s->second_stage == ON_OFF_AUTO_ON ? "on" : "off");
        return false;
    }
    if (s->second_stage == ON_OFF_AUTO_OFF && !is->flts) {
        error_setg(errp, "viommu-vtd: second-stage=off needs x-flts=on "
                   "(scalable mode needs at least one stage)");
        return false;
    }
    if (is->version) {
        error_setg(errp, "viommu-vtd does not support version=%" PRIu32
                   ": the engine reports its own VER_REG", is->version);
        return false;
    }
    if (is->aw_bits != VTD_HOST_AW_39BIT && is->aw_bits != VTD_HOST_AW_48BIT &&
        is->aw_bits != VIOMMU_VTD_AW_57BIT) {
        error_setg(errp, "viommu-vtd does not support aw-bits=%u: "
                   "supported values are %d, %d and %d", is->aw_bits,
                   VTD_HOST_AW_39BIT, VTD_HOST_AW_48BIT, VIOMMU_VTD_AW_57BIT);
        return false;
    }
    return true;
}

/*
 * DeviceClass realize: runs before x86-iommu decides intremap=auto.  Here
 * auto means off: interrupt remapping is what a user asks for with
 * intremap=on (x86-iommu then refuses kernel-irqchip=on).
 */
static void viommu_vtd_device_realize(DeviceState *dev, Error **errp)
{
    X86IOMMUState *x86 = X86_IOMMU_DEVICE(dev);

    if (x86->intr_supported == ON_OFF_AUTO_AUTO) {
        x86->intr_supported = ON_OFF_AUTO_OFF;
    }
    VIOMMU_VTD_GET_CLASS(dev)->parent_realize(dev, errp);
}

/*
 * Each device once the machine is ready.  Device assignment mirrors the
 * guest's tables into the host's through MAP notifications, which need
 * caching mode; VFIO takes a refused notifier as fatal once the guest
 * enables translation, so refuse the machine at start instead, as
 * intel-iommu does (pc_hotplug_allowed() refuses a hot-plugged one, for
 * the parent type and so for this one).
 */
static int viommu_vtd_check_device(Object *obj, void *opaque)
{
    ViommuVtdState *s = opaque;

    if (object_dynamic_cast(obj, "vfio-pci") && !s->parent_obj.caching_mode) {
        error_report("viommu-vtd: device assignment (%s) needs caching-mode=on",
                     object_get_canonical_path(obj));
        exit(1);
    }
    /*
     * Without PASIDs a pass-through context sends a device's requests with
     * PASID through the alias untranslated (docs/viommu-vtd.rst); without
     * ECAP.PT the guest can make none.
     */
    if (object_dynamic_cast(obj, "viommu-dma") && !s->parent_obj.pasid &&
        X86_IOMMU_DEVICE(s)->pt_supported &&
        !pci_bus_bypass_iommu(pci_get_bus(PCI_DEVICE(obj))) &&
        object_property_get_bool(obj, "pasid", NULL)) {
        g_autofree char *path = object_get_canonical_path(obj);

        warn_report("viommu-vtd: %s sends requests with PASID, which a "
                    "pass-through context lets through untranslated without "
                    "x-pasid-mode=on", path);
    }
    return 0;
}

/*
 * Devices take their DMA address space when the machine is ready, but VFIO
 * (and viommu-dma's stand-in for it) looks it up when it is created: one
 * created before the unit would keep the host's memory, untranslated and
 * unnotified, for good.
 */
static int viommu_vtd_find_early_listener(Object *obj, void *opaque)
{
    Object **early = opaque;

    if (!object_dynamic_cast(obj, TYPE_PCI_DEVICE) || !DEVICE(obj)->realized ||
        pci_bus_bypass_iommu(pci_get_bus(PCI_DEVICE(obj)))) {
        return 0;
    }
    if (object_dynamic_cast(obj, "vfio-pci") ||
        (object_dynamic_cast(obj, "viommu-dma") &&
         object_property_get_bool(obj, "x-map-notifier", NULL))) {
        *early = obj;
        return 1;
    }
    return 0;
}

static bool viommu_vtd_check_order(Error **errp)
{
    Object *early = NULL;

    object_child_foreach_recursive(object_get_root(),
                                   viommu_vtd_find_early_listener, &early);
    if (early) {
        g_autofree char *path = object_get_canonical_path(early);

        error_setg(errp, "viommu-vtd: %s (%s) was created before viommu-vtd "
                   "and took its DMA address space without it: put -device "
                   "viommu-vtd before it on the command line",
                   object_get_typename(early), path);
        return false;
    }
    return true;
}

static void viommu_vtd_machine_done(Notifier *notifier, void *unused)
{
    ViommuVtdState *s = container_of(notifier, ViommuVtdState, machine_done);

    object_child_foreach_recursive(object_get_root(), viommu_vtd_check_device,
                                   s);
}

/*
 * The engine names VtdConfig's fields in its reasons; the sizes it checks
 * are properties of the same name, dashed.
 */
static char *viommu_vtd_property_names(char *reason)
{
    static const char *const fields[] = {
        "iotlb_entries", "context_entries", "fault_records",
    };
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(fields); i++) {
        size_t len = strlen(fields[i]);

        if (!strncmp(reason, fields[i], len)) {
            reason[strcspn(reason, "_")] = '-';
        }
    }
    return reason;
}

/* X86IOMMUClass realize, called by x86-iommu once the machine is checked. */
static void viommu_vtd_realize(DeviceState *dev, Error **errp)
{
    ViommuVtdState *s = VIOMMU_VTD(dev);
    IntelIOMMUState *is = &s->parent_obj;
    X86IOMMUState *x86 = X86_IOMMU_DEVICE(dev);
    PCMachineState *pcms = PC_MACHINE(qdev_get_machine());
    VtdConfig cfg;
    char err[256] = "";

    if (!viommu_vtd_check_config(s, errp) || !viommu_vtd_check_order(errp)) {
        return;
    }
    vtd_config_default(&cfg);
    cfg.aw_bits = is->aw_bits;
    cfg.pass_through = x86->pt_supported;
    cfg.caching_mode = is->caching_mode;
    cfg.device_iotlb = x86->dt_supported;
    cfg.superpage_1g = s->superpage_1g;
    cfg.iotlb_entries = s->iotlb_entries;
    cfg.context_entries = s->context_entries;
    cfg.fault_records = s->fault_records;
    cfg.intremap = x86_iommu_ir_supported(x86);
    cfg.eim = is->intr_eim == ON_OFF_AUTO_ON;
    /*
     * As intel-iommu: x-scalable-mode=on offers second-stage tables, x-flts=on
     * first-stage tables instead; second-stage=on adds the second stage to
     * x-flts=on, and with both stages nested translation (ECAP.NEST).
     */
    cfg.scalable_mode = is->scalable_mode;
    cfg.snoop_control = is->snoop_control;
    cfg.first_stage = is->flts;
    cfg.second_stage = is->scalable_mode &&
                       (s->second_stage == ON_OFF_AUTO_ON ||
                        (s->second_stage == ON_OFF_AUTO_AUTO && !is->flts));
    cfg.fs1gp = is->flts && is->fs1gp;
    cfg.pasid_bits = is->pasid ? VIOMMU_VTD_PASID_BITS : 0;
    s->first_stage = cfg.first_stage;
    s->intremap = cfg.intremap;
    s->engine = vtd_engine_new(&cfg, &viommu_vtd_host_ops, s, err, sizeof(err));
    if (!s->engine) {
        error_setg(errp, "viommu-vtd: %s",
                   err[0] ? viommu_vtd_property_names(err) :
                   "invalid configuration");
        return;
    }
    s->queue_bh = qemu_bh_new_guarded(viommu_vtd_queue_bh, s,
                                      &dev->mem_reentrancy_guard);

    memory_region_init_io(&s->mmio, OBJECT(s), &viommu_vtd_mmio_ops, s,
                          "viommu-vtd", VTD_MMIO_SIZE);
    memory_region_add_subregion(get_system_memory(), Q35_HOST_BRIDGE_IOMMU_ADDR,
                                &s->mmio);
    s->spaces = viommu_vtd_spaces_new();
    QLIST_INIT(&s->notified);
    s->by_domain = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                         g_free);
    QLIST_INIT(&s->pasid_faulted);
    s->bridges.unrealize = viommu_vtd_device_unrealized;
    device_listener_register(&s->bridges);
    s->machine_done.notify = viommu_vtd_machine_done;
    qemu_add_machine_init_done_notifier(&s->machine_done);
    qemu_add_vm_change_state_handler(viommu_vtd_vm_state_change, s);
    pci_setup_iommu(pcms->pcibus, &viommu_vtd_pci_ops, s);
    if (s->intremap) {
        viommu_vtd_ir_realize(s, pcms->pcibus);
    }
    trace_viommu_vtd_realize(cfg.aw_bits, cfg.caching_mode, cfg.pass_through,
                             cfg.device_iotlb, cfg.intremap, cfg.eim);
    trace_viommu_vtd_realize_scalable(cfg.scalable_mode, cfg.first_stage,
                                      cfg.second_stage, cfg.fs1gp,
                                      cfg.pasid_bits);
}

static void viommu_vtd_reset_exit(Object *obj, ResetType type)
{
    ViommuVtdState *s = VIOMMU_VTD(obj);

    if (!s->engine) {
        return;
    }
    trace_viommu_vtd_reset();
    vtd_engine_reset(s->engine);
    viommu_vtd_resync(s);
}

static void viommu_vtd_finalize(Object *obj)
{
    ViommuVtdState *s = VIOMMU_VTD(obj);

    g_clear_pointer(&s->queue_bh, qemu_bh_delete);
    g_clear_pointer(&s->by_domain, g_hash_table_destroy);
    vtd_engine_free(s->engine);
}

/*
 * Migration: the engine's architectural state (VtdState), field by field.
 * pre_save copies it out of the engine into s->mig, post_load hands it
 * back; the engine refuses a state the unit could never be in (another
 * configuration, impossible register values) and says why.  Optional
 * features add subsections (interrupt remapping: below).
 */

static const VMStateDescription viommu_vtd_fault_record_vmstate = {
    .name = "viommu-vtd/fault-record",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(lo, VtdFaultRecord),
        VMSTATE_UINT64(hi, VtdFaultRecord),
        VMSTATE_END_OF_LIST()
    }
};

static bool viommu_vtd_fault_records_fit(void *opaque, int version_id)
{
    VtdState *st = opaque;

    return st->n_fault_records <= VTD_MAX_FAULT_RECORDS;
}

/*
 * Interrupt remapping (intremap=on): IRTA and the table GCMD.SIRTP latched
 * (GSTS, in the main section, holds IRTPS/IRES/CFIS).  Sent once the guest
 * programmed any of it; absent, both are zero.
 */
static bool viommu_vtd_ir_needed(void *opaque)
{
    VtdState *st = opaque;

    return st->irta || st->irta_latched;
}

static const VMStateDescription viommu_vtd_ir_vmstate = {
    .name = "viommu-vtd/engine/interrupt-remapping",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = viommu_vtd_ir_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(irta, VtdState),
        VMSTATE_UINT64(irta_latched, VtdState),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * Scalable mode: IQERCD (the IQEI of a pending FSTS.IQE).  Sent while it
 * holds something; absent, it is zero.  The other scalable-mode state is
 * in registers the main section carries (RTADDR.TTM, the latched TTM,
 * IQA.DW).
 */
static bool viommu_vtd_sm_needed(void *opaque)
{
    VtdState *st = opaque;

    return st->iqercd;
}

static const VMStateDescription viommu_vtd_sm_vmstate = {
    .name = "viommu-vtd/engine/scalable-mode",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = viommu_vtd_sm_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(iqercd, VtdState),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * The record FSTS.FRI names while faults are pending, when it is not
 * record 0: the next record to fill (FSTS's FRI in the main section) does
 * not give it once the index restarted at 0 with older records pending.
 * Absent, it is zero.
 */
static bool viommu_vtd_fault_oldest_needed(void *opaque)
{
    VtdState *st = opaque;

    return st->fault_oldest;
}

static const VMStateDescription viommu_vtd_fault_oldest_vmstate = {
    .name = "viommu-vtd/engine/fault-oldest",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = viommu_vtd_fault_oldest_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(fault_oldest, VtdState),
        VMSTATE_END_OF_LIST()
    }
};

/* In register-offset order. */
static const VMStateDescription viommu_vtd_engine_vmstate = {
    .name = "viommu-vtd/engine",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(cap, VtdState),
        VMSTATE_UINT64(ecap, VtdState),
        VMSTATE_UINT32(gsts, VtdState),
        VMSTATE_UINT64(rtaddr, VtdState),
        VMSTATE_UINT64(root_table, VtdState),
        VMSTATE_UINT64(ccmd, VtdState),
        VMSTATE_UINT32(fsts, VtdState),
        VMSTATE_UINT32(fectl, VtdState),
        VMSTATE_UINT32(fedata, VtdState),
        VMSTATE_UINT32(feaddr, VtdState),
        VMSTATE_UINT32(feuaddr, VtdState),
        VMSTATE_UINT64(iqh, VtdState),
        VMSTATE_UINT64(iqt, VtdState),
        VMSTATE_UINT64(iqa, VtdState),
        VMSTATE_UINT32(ics, VtdState),
        VMSTATE_UINT32(iectl, VtdState),
        VMSTATE_UINT32(iedata, VtdState),
        VMSTATE_UINT32(ieaddr, VtdState),
        VMSTATE_UINT32(ieuaddr, VtdState),
        VMSTATE_UINT64(iva, VtdState),
        VMSTATE_UINT64(iotlb, VtdState),
        VMSTATE_UINT32(n_fault_records, VtdState),
        VMSTATE_VALIDATE("fault records fit", viommu_vtd_fault_records_fit),
        VMSTATE_STRUCT_VARRAY_UINT32(fault_records, VtdState, n_fault_records,
                                     1, viommu_vtd_fault_record_vmstate,
                                     VtdFaultRecord),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &viommu_vtd_ir_vmstate,
        &viommu_vtd_sm_vmstate,
        &viommu_vtd_fault_oldest_vmstate,
        NULL
    }
};

static int viommu_vtd_pre_save(void *opaque)
{
    ViommuVtdState *s = opaque;

    vtd_engine_get_state(s->engine, &s->mig);
    return 0;
}

static int viommu_vtd_pre_load(void *opaque)
{
    ViommuVtdState *s = opaque;

    /* records beyond n_fault_records must read as zero */
    memset(&s->mig, 0, sizeof(s->mig));
    return 0;
}

static int viommu_vtd_post_load(void *opaque, int version_id)
{
    ViommuVtdState *s = opaque;
    VtdStateError err = vtd_engine_set_state(s->engine, &s->mig);

    trace_viommu_vtd_post_load(err, vtd_state_error_str(err));
    if (err != VTD_STATE_OK) {
        error_report("viommu-vtd: migrated state refused: %s",
                     vtd_state_error_str(err));
        return -EINVAL;
    }
    viommu_vtd_resync(s);
    viommu_vtd_queue_kick(s);  /* a queue migrated mid-way, once the VM runs */
    return 0;
}

static const VMStateDescription viommu_vtd_vmstate = {
    .name = TYPE_VIOMMU_VTD,
    .version_id = 2,
    .minimum_version_id = 2,
    .priority = MIG_PRI_IOMMU,
    .pre_save = viommu_vtd_pre_save,
    .pre_load = viommu_vtd_pre_load,
    .post_load = viommu_vtd_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(mig, ViommuVtdState, 0, viommu_vtd_engine_vmstate,
                       VtdState),
        VMSTATE_END_OF_LIST()
    }
};

static const Property viommu_vtd_properties[] = {
    DEFINE_PROP_UINT32("iotlb-entries", ViommuVtdState, iotlb_entries, 0),
    DEFINE_PROP_UINT32("context-entries", ViommuVtdState, context_entries, 0),
    DEFINE_PROP_UINT16("fault-records", ViommuVtdState, fault_records, 0),
    DEFINE_PROP_BOOL("superpage-1g", ViommuVtdState, superpage_1g, true),
    DEFINE_PROP_ON_OFF_AUTO("second-stage", ViommuVtdState, second_stage,
                            ON_OFF_AUTO_AUTO),
};

static void viommu_vtd_class_init(ObjectClass *oc, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);
    X86IOMMUClass *xc = X86_IOMMU_DEVICE_CLASS(oc);
    ResettableClass *rc = RESETTABLE_CLASS(oc);

    device_class_set_parent_realize(dc, viommu_vtd_device_realize,
                                    &VIOMMU_VTD_CLASS(oc)->parent_realize);
    xc->realize = viommu_vtd_realize;
    xc->int_remap = viommu_vtd_int_remap;
    rc->phases.exit = viommu_vtd_reset_exit;
    dc->vmsd = &viommu_vtd_vmstate;
    device_class_set_props(dc, viommu_vtd_properties);
    object_class_property_set_description(oc, "iotlb-entries",
        "IOTLB capacity in entries, at most 16777216, rounded up to a power "
        "of two and at least 4 (0: engine default)");
    object_class_property_set_description(oc, "context-entries",
        "context-cache capacity in entries (0: engine default)");
    object_class_property_set_description(oc, "fault-records",
        "number of fault recording registers, 1..224 (0: default 8)");
    object_class_property_set_description(oc, "superpage-1g",
        "advertise 1 GiB second-level pages (CAP.SLLPS)");
    object_class_property_set_description(oc, "second-stage",
        "scalable mode: offer second-stage tables (ECAP.SLTS); auto: unless "
        "x-flts=on; on with x-flts=on: both stages and nested translation");
    object_class_property_add_str(oc, "stats", viommu_vtd_get_stats, NULL);
    object_class_property_set_description(oc, "stats",
        "remapping statistics as a JSON document (read-only)");
    dc->hotpluggable = false;
    dc->desc = "VT-d compatible DMA remapping unit (viommu-lab engine)";
}


static const TypeInfo viommu_vtd_types[] = {
    {
        .name = TYPE_VIOMMU_VTD,
        .parent = TYPE_INTEL_IOMMU_DEVICE,
        .instance_size = sizeof(ViommuVtdState),
        .instance_finalize = viommu_vtd_finalize,
        .class_size = sizeof(ViommuVtdClass),
        .class_init = viommu_vtd_class_init,
    }, {
        .name = TYPE_VIOMMU_VTD_IOMMU_MEMORY_REGION,
        .parent = TYPE_IOMMU_MEMORY_REGION,
        .class_init = viommu_vtd_iommu_mr_class_init,
    },
};

DEFINE_TYPES(viommu_vtd_types)
