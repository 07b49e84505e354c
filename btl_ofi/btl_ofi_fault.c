/*
 * btl-ofi: a NIC that fails while operations are in flight on it. What is watched, when a
 * stall is a failure and what failing does: btl_ofi_fault.h.
 */

#include "btl_ofi_fault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "btl_ofi_device.h"
#include "btl_ofi_report.h"

/* Empty CQ reads with operations waiting between two looks at the clock. */
#define MCA_BTL_OFI_FAULT_CLOCK_EVERY 64
/* btl_ofi_nic_timeout -1: this many seconds where the provider progresses data itself. */
#define MCA_BTL_OFI_FAULT_AUTO_TIMEOUT 60

void mca_btl_ofi_fault_construct(mca_btl_ofi_module_t *module)
{
    module->watch = false;
    atomic_store(&module->failed, false);
    module->quarantined = false;
    OBJ_CONSTRUCT(&module->posted_lock, opal_mutex_t);
    module->posted = NULL;
    module->stall_since = 0;
    module->next_probe = 0;
    module->empty_reads = 0;
    module->stall_timeout = 0;
    module->stall_timeout_auto = false;
    module->link_state = NULL;
    module->error_cb = NULL;
}

/* The kernel's word for the link of the interface named name, or false where there is no
 * such interface in this network namespace. */
static bool mca_btl_ofi_fault_read_link(const char *path, char *state, size_t len)
{
    ssize_t got;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        return false;
    }
    got = read(fd, state, len - 1);
    close(fd);
    if (got <= 0) {
        return false;
    }
    state[got] = '\0';
    state[strcspn(state, "\n")] = '\0';
    return true;
}

void mca_btl_ofi_fault_init(mca_btl_ofi_module_t *module)
{
    const struct fi_info *info = module->info;
    const char *domain = info->domain_attr->name;
    char path[128], state[32];

    if (mca_btl_ofi_node_local(module)) {
        return; /* shared memory: no link, and a busy peer on this node is no fault */
    }
    module->stall_timeout = mca_btl_ofi_params.nic_timeout;
    if (module->stall_timeout < 0) {
        module->stall_timeout_auto = true;
        module->stall_timeout = FI_PROGRESS_AUTO == info->domain_attr->data_progress
                                    ? MCA_BTL_OFI_FAULT_AUTO_TIMEOUT
                                    : 0;
    }
    if (NULL != domain && NULL == strchr(domain, '/') && strlen(domain) < 64) {
        snprintf(path, sizeof(path), "/sys/class/net/%s/operstate", domain);
        if (mca_btl_ofi_fault_read_link(path, state, sizeof(state))) {
            module->link_state = strdup(path);
        }
    }
    module->watch = NULL != module->link_state || 0 < module->stall_timeout;
    opal_output_verbose(20, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "%s: NIC failure %s%s%s%s", domain,
                        module->watch ? "watched: " : "not watched (no link state, no "
                                                      "btl_ofi_nic_timeout)",
                        NULL != module->link_state ? "link state " : "",
                        NULL != module->link_state ? module->link_state : "",
                        0 < module->stall_timeout ? ", a stall that lasts the timeout" : "");
}

void mca_btl_ofi_fault_destruct(mca_btl_ofi_module_t *module)
{
    free(module->link_state);
    module->link_state = NULL;
    OBJ_DESTRUCT(&module->posted_lock);
}

void mca_btl_ofi_fault_list(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op)
{
    OPAL_THREAD_LOCK(&module->posted_lock);
    op->posted_prev = NULL;
    op->posted_next = module->posted;
    if (NULL != module->posted) {
        module->posted->posted_prev = op;
    }
    module->posted = op;
    op->listed = true;
    OPAL_THREAD_UNLOCK(&module->posted_lock);
}

/* Caller holds posted_lock. */
static void mca_btl_ofi_fault_unlink(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op)
{
    if (!op->listed) {
        return;
    }
    if (NULL != op->posted_prev) {
        op->posted_prev->posted_next = op->posted_next;
    } else {
        module->posted = op->posted_next;
    }
    if (NULL != op->posted_next) {
        op->posted_next->posted_prev = op->posted_prev;
    }
    op->posted_prev = op->posted_next = NULL;
    op->listed = false;
}

void mca_btl_ofi_fault_unlist(mca_btl_ofi_module_t *module, mca_btl_ofi_op_t *op)
{
    OPAL_THREAD_LOCK(&module->posted_lock);
    mca_btl_ofi_fault_unlink(module, op);
    OPAL_THREAD_UNLOCK(&module->posted_lock);
}

/* Whether an operation of the module may wait for a peer's CPU rather than its NIC: atomics
 * or gets as messages, gathered puts (acknowledged by the target's progress), questions
 * about registrations. A NIC that progresses by itself still waits for those as long as
 * the peer computes, so the default time limit does not count such a wait. */
static bool mca_btl_ofi_fault_waits_for_cpus(const mca_btl_ofi_module_t *module)
{
    return module->atomics_as_messages || module->gets_as_messages || module->coalesce ||
           0 != atomic_load_explicit(&module->locating, memory_order_relaxed);
}

void mca_btl_ofi_fault_empty_read(mca_btl_ofi_module_t *module)
{
    char why[160], state[32], param[64];
    double now;

    if (0 == atomic_load_explicit(&module->outstanding, memory_order_relaxed)) {
        module->stall_since = 0;
        return;
    }
    if (++module->empty_reads < MCA_BTL_OFI_FAULT_CLOCK_EVERY) {
        return;
    }
    module->empty_reads = 0;
    now = mca_btl_ofi_now();
    if (0 == module->stall_since) {
        module->stall_since = now;
        module->next_probe = now + 1.0;
        return;
    }
    if (NULL != module->link_state && now >= module->next_probe) {
        module->next_probe = now + 1.0;
        if (!mca_btl_ofi_fault_read_link(module->link_state, state, sizeof(state))) {
            snprintf(why, sizeof(why), "the interface is gone (%s)", module->link_state);
            mca_btl_ofi_nic_fail(module, why);
            return;
        }
        if (0 == strcmp(state, "down") || 0 == strcmp(state, "lowerlayerdown") ||
            0 == strcmp(state, "notpresent")) {
            snprintf(why, sizeof(why), "its link is %s (%s) and nothing completed for %.0f s",
                     state, module->link_state, now - module->stall_since);
            mca_btl_ofi_nic_fail(module, why);
            return;
        }
    }
    if (0 < module->stall_timeout && now - module->stall_since >= module->stall_timeout &&
        !(module->stall_timeout_auto && mca_btl_ofi_fault_waits_for_cpus(module))) {
        snprintf(why, sizeof(why),
                 "nothing completed for %d s while operations waited (%s)", module->stall_timeout,
                 mca_btl_ofi_param_name("nic_timeout", param, sizeof(param)));
        mca_btl_ofi_nic_fail(module, why);
    }
}

void mca_btl_ofi_nic_fail(mca_btl_ofi_module_t *module, const char *why)
{
    const long waiting = (long)atomic_load(&module->outstanding);
    const bool further = 2 <= module->slot;
    const struct fi_info *info = module->info;
    char count[32], param[64];
    opal_list_t dropped;
    mca_btl_ofi_op_t *op;

    if (atomic_exchange(&module->failed, true)) {
        return;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_NIC_FAILURES, 1);
    snprintf(count, sizeof(count), "%ld", waiting);
    if (further) {
        mca_btl_ofi_report_now("nic-failed-moved", info->domain_attr->name,
                               info->fabric_attr->prov_name, info->fabric_attr->name, why, count,
                               NULL);
    } else {
        mca_btl_ofi_report_now(NULL != module->error_cb ? "nic-failed-fatal" : "nic-failed-stuck",
                               info->domain_attr->name, info->fabric_attr->prov_name,
                               info->fabric_attr->name, why, count,
                               mca_btl_ofi_param_name("domain_exclude", param, sizeof(param)),
                               NULL);
    }
    /* After this the provider writes nothing of ours: no buffer, no completion. One that
     * moves data only inside our calls is not called again (quarantined, see the header). */
    if (FI_PROGRESS_AUTO == info->domain_attr->data_progress) {
        mca_btl_ofi_device_close_ep(module);
    } else {
        module->quarantined = true;
    }

    /* Deferred posts are listed operations (failed below) or receive buffers (owned by
     * the messages, freed at finalize): none goes out again. */
    OBJ_CONSTRUCT(&dropped, opal_list_t);
    mca_btl_ofi_list_take(&dropped, &module->deferred, &module->deferred_lock);
    while (NULL != opal_list_remove_first(&dropped)) {
    }
    OBJ_DESTRUCT(&dropped);

    /* Each operation as an error completion would complete it. A handler may release
     * other listed operations (a put and its proof read), which leave the list themselves;
     * one it does not release stays off the list, so it is failed once. */
    for (;;) {
        OPAL_THREAD_LOCK(&module->posted_lock);
        op = module->posted;
        if (NULL != op) {
            mca_btl_ofi_fault_unlink(module, op);
        }
        OPAL_THREAD_UNLOCK(&module->posted_lock);
        if (NULL == op) {
            break;
        }
        mca_btl_ofi_op_complete(module, op, OPAL_ERR_UNREACH);
    }
    if (!further && NULL != module->error_cb) {
        char text[320];

        snprintf(text, sizeof(text),
                 "btl-ofi: NIC %s (%s) failed: %s; one-sided communication through it cannot go "
                 "on",
                 info->domain_attr->name, info->fabric_attr->prov_name, why);
        module->error_cb(&module->super, MCA_BTL_ERROR_FLAGS_FATAL, NULL, text);
    }
}

int mca_btl_ofi_register_error(struct mca_btl_base_module_t *btl,
                               mca_btl_base_module_error_cb_fn_t cbfunc)
{
    ((mca_btl_ofi_module_t *)btl)->error_cb = cbfunc;
    return OPAL_SUCCESS;
}
