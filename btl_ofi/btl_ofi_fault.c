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

#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"
#include "btl_ofi_report.h"

/* Empty CQ reads with operations waiting between two looks at the clock. */
#define MCA_BTL_OFI_FAULT_CLOCK_EVERY 64
/* btl_ofi_nic_timeout -1: this many seconds where the provider progresses data itself. */
#define MCA_BTL_OFI_FAULT_AUTO_TIMEOUT 60

void mca_btl_ofi_fault_construct(mca_btl_ofi_rail_t *rail)
{
    rail->watch = false;
    atomic_store(&rail->failed, false);
    rail->quarantined = false;
    OBJ_CONSTRUCT(&rail->posted_lock, opal_mutex_t);
    rail->posted = NULL;
    rail->stall_since = 0;
    rail->next_probe = 0;
    rail->empty_reads = 0;
    rail->stall_timeout = 0;
    rail->stall_timeout_auto = false;
    rail->link_state = NULL;
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

void mca_btl_ofi_fault_init(mca_btl_ofi_rail_t *rail)
{
    const struct fi_info *info = rail->info;
    const char *domain = info->domain_attr->name;
    char path[128], state[32];

    if (!rail->config.watch_failures) {
        return; /* shared memory: no link, and a busy peer on this node is no fault */
    }
    rail->stall_timeout = mca_btl_ofi_params.nic_timeout;
    if (rail->stall_timeout < 0) {
        rail->stall_timeout_auto = true;
        rail->stall_timeout = FI_PROGRESS_AUTO == info->domain_attr->data_progress
                                  ? MCA_BTL_OFI_FAULT_AUTO_TIMEOUT
                                  : 0;
    }
    if (NULL != domain && NULL == strchr(domain, '/') && strlen(domain) < 64) {
        snprintf(path, sizeof(path), "/sys/class/net/%s/operstate", domain);
        if (mca_btl_ofi_fault_read_link(path, state, sizeof(state))) {
            rail->link_state = strdup(path);
        }
    }
    rail->watch = NULL != rail->link_state || 0 < rail->stall_timeout;
    opal_output_verbose(20, mca_btl_ofi_output, MCA_BTL_OFI_LOG "%s: NIC failure %s%s%s%s", domain,
                        rail->watch ? "watched: "
                                    : "not watched (no link state, no "
                                      "btl_ofi_nic_timeout)",
                        NULL != rail->link_state ? "link state " : "",
                        NULL != rail->link_state ? rail->link_state : "",
                        0 < rail->stall_timeout ? ", a stall that lasts the timeout" : "");
}

void mca_btl_ofi_fault_destruct(mca_btl_ofi_rail_t *rail)
{
    free(rail->link_state);
    rail->link_state = NULL;
    OBJ_DESTRUCT(&rail->posted_lock);
}

void mca_btl_ofi_fault_list(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op)
{
    OPAL_THREAD_LOCK(&rail->posted_lock);
    op->posted_prev = NULL;
    op->posted_next = rail->posted;
    if (NULL != rail->posted) {
        rail->posted->posted_prev = op;
    }
    rail->posted = op;
    op->listed = true;
    OPAL_THREAD_UNLOCK(&rail->posted_lock);
}

/* Caller holds posted_lock. */
static void mca_btl_ofi_fault_unlink(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op)
{
    if (!op->listed) {
        return;
    }
    if (NULL != op->posted_prev) {
        op->posted_prev->posted_next = op->posted_next;
    } else {
        rail->posted = op->posted_next;
    }
    if (NULL != op->posted_next) {
        op->posted_next->posted_prev = op->posted_prev;
    }
    op->posted_prev = op->posted_next = NULL;
    op->listed = false;
}

void mca_btl_ofi_fault_unlist(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op)
{
    OPAL_THREAD_LOCK(&rail->posted_lock);
    mca_btl_ofi_fault_unlink(rail, op);
    OPAL_THREAD_UNLOCK(&rail->posted_lock);
}

/* Whether an operation of the rail may wait for a peer's CPU rather than its NIC: atomics
 * or gets as messages, gathered puts (acknowledged by the target's progress), questions
 * about registrations. A NIC that progresses by itself still waits for those as long as
 * the peer computes, so the default time limit does not count such a wait. */
static bool mca_btl_ofi_fault_waits_for_cpus(const mca_btl_ofi_rail_t *rail)
{
    return rail->atomics_as_messages || rail->gets_as_messages || rail->coalesce ||
           0 != atomic_load_explicit(&rail->locating, memory_order_relaxed);
}

void mca_btl_ofi_fault_empty_read(mca_btl_ofi_rail_t *rail)
{
    char why[160], state[32], param[64];
    double now;

    if (0 == atomic_load_explicit(&rail->outstanding, memory_order_relaxed)) {
        rail->stall_since = 0;
        return;
    }
    if (++rail->empty_reads < MCA_BTL_OFI_FAULT_CLOCK_EVERY) {
        return;
    }
    rail->empty_reads = 0;
    now = mca_btl_ofi_now();
    if (0 == rail->stall_since) {
        rail->stall_since = now;
        rail->next_probe = now + 1.0;
        return;
    }
    if (NULL != rail->link_state && now >= rail->next_probe) {
        rail->next_probe = now + 1.0;
        if (!mca_btl_ofi_fault_read_link(rail->link_state, state, sizeof(state))) {
            snprintf(why, sizeof(why), "the interface is gone (%s)", rail->link_state);
            mca_btl_ofi_nic_fail(rail, why);
            return;
        }
        if (0 == strcmp(state, "down") || 0 == strcmp(state, "lowerlayerdown") ||
            0 == strcmp(state, "notpresent")) {
            snprintf(why, sizeof(why), "its link is %s (%s) and nothing completed for %.0f s",
                     state, rail->link_state, now - rail->stall_since);
            mca_btl_ofi_nic_fail(rail, why);
            return;
        }
    }
    if (0 < rail->stall_timeout && now - rail->stall_since >= rail->stall_timeout &&
        !(rail->stall_timeout_auto && mca_btl_ofi_fault_waits_for_cpus(rail))) {
        snprintf(why, sizeof(why), "nothing completed for %d s while operations waited (%s)",
                 rail->stall_timeout, mca_btl_ofi_param_name("nic_timeout", param, sizeof(param)));
        mca_btl_ofi_nic_fail(rail, why);
    }
}

void mca_btl_ofi_nic_fail(mca_btl_ofi_rail_t *rail, const char *why)
{
    const mca_btl_ofi_rail_hooks_t *hooks = &rail->config.hooks;

    if (atomic_exchange(&rail->failed, true)) {
        return;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_NIC_FAILURES, 1);
    /* the owner says what this means (the job ends, or the rail's work moves) and shuts the
     * rail (mca_btl_ofi_rail_shut) */
    if (NULL != hooks->failed) {
        hooks->failed(hooks->owner, rail, why, (long)atomic_load(&rail->outstanding));
    } else {
        mca_btl_ofi_fault_fail_posted(rail);
    }
}

void mca_btl_ofi_fault_fail_posted(mca_btl_ofi_rail_t *rail)
{
    opal_list_t dropped;
    mca_btl_ofi_op_t *op;

    /* Deferred posts are listed operations (failed below) or receive buffers (owned by
     * the messages, freed at finalize): none goes out again. */
    OBJ_CONSTRUCT(&dropped, opal_list_t);
    mca_btl_ofi_list_take(&dropped, &rail->deferred, &rail->deferred_lock);
    while (NULL != opal_list_remove_first(&dropped)) {
    }
    OBJ_DESTRUCT(&dropped);

    /* Each operation as an error completion would complete it. A handler may release
     * other listed operations (a put and its proof read), which leave the list themselves;
     * one it does not release stays off the list, so it is failed once. */
    for (;;) {
        OPAL_THREAD_LOCK(&rail->posted_lock);
        op = rail->posted;
        if (NULL != op) {
            mca_btl_ofi_fault_unlink(rail, op);
        }
        OPAL_THREAD_UNLOCK(&rail->posted_lock);
        if (NULL == op) {
            break;
        }
        mca_btl_ofi_op_complete(rail, op, OPAL_ERR_UNREACH);
    }
}
