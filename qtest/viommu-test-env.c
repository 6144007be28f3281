/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Machine setup shared by the viommu qtests and the benchmark.
 */
#include "qemu/osdep.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "viommu-test-env.h"

const char *vt_iommu_name(void)
{
    const char *s = getenv("VIOMMU_TEST_IOMMU");

    return s && *s ? s : "viommu-vtd";
}

bool vt_iommu_is(const char *name)
{
    return !strcmp(vt_iommu_name(), name);
}

bool vt_have_device(const char *name)
{
    QTestState *qts = qtest_init("-M none");
    QDict *resp = qtest_qmp(qts, "{'execute': 'qom-list-types',"
                            " 'arguments': {'implements': 'device'}}");
    QList *l = qdict_get_qlist(resp, "return");
    QListEntry *ent;
    bool found = false;

    QLIST_FOREACH_ENTRY(l, ent) {
        QDict *t = qobject_to(QDict, qlist_entry_obj(ent));
        if (!strcmp(qdict_get_str(t, "name"), name)) {
            found = true;
        }
    }
    qobject_unref(resp);
    qtest_quit(qts);
    return found;
}

/*
 * The +ds QEMU source has no firmware; Debian ships SeaBIOS and friends.
 * $VIOMMU_TEST_FIRMWARE_DIRS (colon-separated) overrides the search path.
 */
static void vt_append_firmware(GString *s)
{
    const char *dirs = getenv("VIOMMU_TEST_FIRMWARE_DIRS");
    g_auto(GStrv) v = g_strsplit(dirs ? dirs :
        "/usr/share/seabios:/usr/lib/ipxe/qemu:/usr/share/qemu", ":", -1);

    for (int i = 0; v[i]; i++) {
        if (*v[i] && g_file_test(v[i], G_FILE_TEST_IS_DIR)) {
            g_string_append_printf(s, " -L %s", v[i]);
        }
    }
}

uint16_t vt_sid(int i)
{
    return (VT_FIRST_SLOT + i) << 3;
}

char *vt_cmdline(const char *iommu, const char *iommu_opts, int ndma,
                 uint64_t ram_mb, const char *extra)
{
    GString *s = g_string_new(NULL);

    g_string_append_printf(s, "-M q35,kernel-irqchip=split -m %" PRIu64 "M "
                           "-nodefaults", ram_mb);
    if (iommu) {
        g_string_append_printf(s, " -device %s%s", iommu,
                               iommu_opts ? iommu_opts : "");
    }
    for (int i = 0; i < ndma; i++) {
        g_string_append_printf(s, " -device viommu-dma,addr=%02x.0",
                               VT_FIRST_SLOT + i);
    }
    if (extra) {
        g_string_append_printf(s, " %s", extra);
    }
    vt_append_firmware(s);
    return g_string_free(s, false);
}

static void vt_setup(VtEnv *e, bool fresh)
{
    e->bus = qpci_new_pc(e->qts, NULL);
    if (fresh) {
        vtd_guest_init(&e->g, e->qts, VT_MEM_START, e->ram);
    }
    for (int i = 0; i < e->ndma; i++) {
        vdma_init(&e->dma[i], e->bus, vt_sid(i));
        if (fresh) {
            e->ring[i] = vtd_alloc(&e->g, VT_RING_SIZE * VIOMMU_DMA_DESC_SIZE,
                                   4096);
            g_assert_true(vdma_queue_setup(&e->dma[i], 0, e->ring[i],
                                           e->ring[i], VT_RING_SIZE));
        }
    }
}

void vt_start(VtEnv *e, const char *iommu, const char *iommu_opts, int ndma,
              uint64_t ram_mb, const char *extra)
{
    g_autofree char *cmd = vt_cmdline(iommu, iommu_opts, ndma, ram_mb, extra);

    g_assert_cmpint(ndma, <=, VT_MAX_DMA);
    memset(e, 0, sizeof(*e));
    e->iommu = iommu;
    e->iommu_opts = g_strdup(iommu_opts);
    e->extra = g_strdup(extra);
    e->ram = ram_mb << 20;
    e->ndma = ndma;
    e->qts = qtest_init(cmd);
    vt_setup(e, true);
}

void vt_attach(VtEnv *e, QTestState *qts)
{
    e->qts = qts;
    e->g.qts = qts;
    e->bus = qpci_new_pc(qts, NULL);
    for (int i = 0; i < e->ndma; i++) {
        VdmaDev saved = e->dma[i];
        vdma_init(&e->dma[i], e->bus, vt_sid(i));
        memcpy(e->dma[i].q, saved.q, sizeof(saved.q));
    }
}

void vt_stop(VtEnv *e)
{
    for (int i = 0; i < e->ndma; i++) {
        vdma_free(&e->dma[i]);
    }
    if (e->bus) {
        qpci_free_pc(e->bus);
        e->bus = NULL;
    }
    if (e->qts) {
        qtest_quit(e->qts);
        e->qts = NULL;
    }
    g_clear_pointer(&e->g.sm_pasid_dir, g_hash_table_destroy);
    g_clear_pointer(&e->iommu_opts, g_free);
    g_clear_pointer(&e->extra, g_free);
}

void vt_map_rings(VtEnv *e, VtdDomain *d, int i)
{
    vtd_map(d, e->ring[i], e->ring[i],
            ROUND_UP(VT_RING_SIZE * VIOMMU_DMA_DESC_SIZE, 4096), VTD_PTE_RW,
            VTD_PAGE_4K);
}

typedef struct VtTestCase {
    void (*fn)(void);
    const char *intel_aborts;
    const char *intel_deviation;
} VtTestCase;

static void vt_run_aborting_case(const void *data)
{
    const VtTestCase *c = data;
    g_autofree char *msg = g_strdup_printf("not run against intel-iommu: %s",
                                           c->intel_aborts);
    g_test_skip(msg);
}

static void vt_run_case(const void *data)
{
    ((const VtTestCase *)data)->fn();
}

void vt_check_deviation(const char *id, bool ok, const char *expr,
                        const char *file, int line, const char *func)
{
    if (!ok) {
        fprintf(stderr, "viommu-lab deviation %s at %s:%d\n", id, file, line);
        g_assertion_message_expr(G_LOG_DOMAIN, file, line, func, expr);
    }
}

static void vt_run_deviation_case(const void *data)
{
    const VtTestCase *c = data;
    g_autofree char *id = g_strndup(c->intel_deviation,
                                    strcspn(c->intel_deviation, ":"));
    g_autofree char *marker = g_strdup_printf("*viommu-lab deviation %s at *",
                                              id);

    if (g_test_subprocess()) {
        c->fn();
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    if (g_test_trap_has_passed()) {
        g_test_fail_printf("known intel-iommu deviation no longer "
                           "reproduces: %s", c->intel_deviation);
        return;
    }
    /* failed, and at the deviating check: anything else fails the case */
    g_test_trap_assert_stderr(marker);
    g_test_message("known intel-iommu deviation reproduced: %s",
                   c->intel_deviation);
}

bool vt_test_init(int *argc, char ***argv)
{
    const char *iommu = vt_iommu_name();

    g_test_init(argc, argv, NULL);
    if (!vt_have_device(iommu)) {
        g_test_message("%s is not built into this QEMU", iommu);
        return false;
    }
    return true;
}

void vt_add_case(const char *prefix, const char *path, void (*fn)(void),
                 const char *intel_aborts, const char *intel_deviation,
                 bool vtd_only)
{
    const char *iommu = vt_iommu_name();
    bool intel = !strcmp(iommu, "intel-iommu");
    g_autofree char *name = NULL;
    VtTestCase *c;

    if (vtd_only && strcmp(iommu, "viommu-vtd")) {
        return;
    }
    name = g_strdup_printf("%s/%s/%s", prefix, iommu, path);
    /* GLib keeps the pointer until the program ends */
    c = g_new(VtTestCase, 1);
    *c = (VtTestCase){ fn, intel_aborts, intel_deviation };
    if (intel && intel_aborts) {
        qtest_add_data_func(name, c, vt_run_aborting_case);
    } else if (intel && intel_deviation) {
        qtest_add_data_func(name, c, vt_run_deviation_case);
    } else {
        qtest_add_data_func(name, c, vt_run_case);
    }
}

/* Wait until the outgoing migration completed and the destination runs. */
void vt_wait_migration(QTestState *src, QTestState *dst)
{
    for (int i = 0; i < 100000; i++) {
        QDict *r = qtest_qmp(src, "{'execute': 'query-migrate'}");
        QDict *ret = qdict_get_qdict(r, "return");
        const char *st = qdict_haskey(ret, "status") ?
                         qdict_get_str(ret, "status") : "none";
        bool done = !strcmp(st, "completed");

        g_assert_cmpstr(st, !=, "failed");
        qobject_unref(r);
        if (done) {
            break;
        }
        g_usleep(1000);
    }
    for (int i = 0; i < 100000; i++) {
        QDict *r = qtest_qmp(dst, "{'execute': 'query-status'}");
        bool running = qdict_get_bool(qdict_get_qdict(r, "return"), "running");
        qobject_unref(r);
        if (running) {
            return;
        }
        g_usleep(1000);
    }
    g_assert_not_reached();
}

void vt_migrate(VtEnv *e)
{
    static int count;
    g_autofree char *sock = g_strdup_printf("%s/viommu-mig-%d-%d.sock",
                                            g_get_tmp_dir(), getpid(),
                                            count++);
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *inc = g_strdup_printf("%s -incoming %s",
                                           e->extra ? e->extra : "", uri);
    g_autofree char *cmd = vt_cmdline(e->iommu, e->iommu_opts, e->ndma,
                                      e->ram >> 20, inc);
    QTestState *dst = qtest_init(cmd);

    qtest_qmp_assert_success(e->qts, "{'execute': 'migrate',"
                             " 'arguments': {'uri': %s}}", uri);
    vt_wait_migration(e->qts, dst);
    for (int i = 0; i < e->ndma; i++) {
        vdma_free(&e->dma[i]);
    }
    qtest_quit(e->qts);
    e->qts = NULL;
    qpci_free_pc(e->bus);
    e->bus = NULL;
    vt_attach(e, dst);
    unlink(sock);
}
