/*
 * btl-ofi rail: one libfabric domain opened with everything that belongs to it
 * (its fids, operation contexts, registrations, the messages beside RMA, the
 * atomics it serves), published in the modex, and closed in the reverse order.
 */

#include "btl_ofi_rail_setup.h"

#include <stdlib.h>

#include "btl_ofi_am.h"
#include "btl_ofi_atomics.h"
#include "btl_ofi_coalesce.h"
#include "btl_ofi_device.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_fault.h"
#include "btl_ofi_locate.h"
#include "btl_ofi_mr.h"
#include "btl_ofi_msg.h"
#include "btl_ofi_ops.h"
#include "btl_ofi_params.h"
#include "btl_ofi_rcache.h"

/* How long closing a rail waits for operations still in flight before it gives up on them. */
#define MCA_BTL_OFI_DRAIN_SECONDS 10

static void mca_btl_ofi_rail_construct(mca_btl_ofi_rail_t *rail)
{
    OBJ_CONSTRUCT(&rail->ops, opal_free_list_t);
    OBJ_CONSTRUCT(&rail->endpoint_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&rail->endpoints, opal_hash_table_t);
    OBJ_CONSTRUCT(&rail->reg_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&rail->live_regs, opal_list_t);
    OBJ_CONSTRUCT(&rail->regs_by_key, opal_hash_table_t);
    OBJ_CONSTRUCT(&rail->word_slabs, opal_list_t);
    OBJ_CONSTRUCT(&rail->deferred_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&rail->deferred, opal_list_t);
    atomic_store(&rail->outstanding, 0);
    atomic_store(&rail->remote_regs, 0);
    atomic_store(&rail->locating, 0);
    atomic_store(&rail->pass_work, 0);
    mca_btl_ofi_fault_construct(rail);
}

/* After negotiation: under FI_MR_LOCAL the operations' words come from registered slabs. */
static int mca_btl_ofi_rail_lists_init(mca_btl_ofi_rail_t *rail)
{
    if (OPAL_SUCCESS != opal_hash_table_init(&rail->endpoints, 64) ||
        OPAL_SUCCESS != opal_hash_table_init(&rail->regs_by_key, 64)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    return opal_free_list_init(&rail->ops, sizeof(mca_btl_ofi_op_t), opal_cache_line_size,
                               OBJ_CLASS(mca_btl_ofi_op_t), 0, 0, 64,
                               mca_btl_ofi_params.op_free_list_max, 64, NULL, 0, NULL,
                               mca_btl_ofi_op_words_init, rail);
}

/* Receive buffers the messages post (0 without messages), no more than the queue holds. */
static int mca_btl_ofi_rail_receives(const mca_btl_ofi_rail_t *rail, bool messages)
{
    int receives = !messages        ? 0
                   : rail->coalesce ? mca_btl_ofi_coalesce_receive_buffers()
                                    : MCA_BTL_OFI_MSG_BUFFERS;

    if (0 != rail->info->rx_attr->size && (size_t)receives > rail->info->rx_attr->size) {
        receives = (int)rail->info->rx_attr->size;
    }
    return receives;
}

/* A CQ that overruns loses completions (fi_cq(3)); the provider fills it as operations
 * complete, whether or not progress has read it yet, so what may be in flight is bounded by
 * what it holds beside a completion for every posted receive (mca_btl_ofi_op_room): half for
 * new operations, half for what they and peers' requests post. 0: no bound. */
static int_fast64_t mca_btl_ofi_rail_op_limit(const mca_btl_ofi_rail_t *rail, int receives)
{
    if (0 == rail->cq_size) {
        return 0;
    }
    return rail->cq_size > (size_t)receives + 2
               ? (int_fast64_t)((rail->cq_size - (size_t)receives) / 2)
               : 1;
}

/* What the open fids carry: contexts, the registration cache, the proof word, messages. */
static int mca_btl_ofi_rail_services(mca_btl_ofi_rail_t *rail, bool messages)
{
    int receives, rc;

    mca_btl_ofi_fault_init(rail);
    rc = mca_btl_ofi_rail_lists_init(rail);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rail->initialized = true;
    mca_btl_ofi_rcache_init(rail);
    if (rail->mr_local && mca_btl_ofi_rcache_on(rail)) {
        /* With the cache, local buffers come to btl-ofi bare and it registers them by the
         * page, cached (btl_ofi_rcache.c). Otherwise osc/rdma would register a fragment per
         * window and keep it: at a NIC's registration limit those are what runs out, and
         * osc/rdma retries a refused one for ever (NOTES.txt 3d). */
        rail->caps.local_reg_threshold = SIZE_MAX;
    }
    /* The word that proof reads target; every peer may read it. */
    rail->proof_word = 0;
    rail->proof_reg = mca_btl_ofi_reg_create(rail, &rail->proof_word, sizeof(rail->proof_word));
    if (NULL == rail->proof_reg) {
        return OPAL_ERROR;
    }
    receives = mca_btl_ofi_rail_receives(rail, messages);
    if (messages) {
        mca_btl_ofi_msg_start(
            rail, rail->coalesce ? mca_btl_ofi_coalesce_message_size() : MCA_BTL_OFI_MSG_SMALL,
            receives);
    }
    rail->op_limit = mca_btl_ofi_rail_op_limit(rail, receives);
    mca_btl_ofi_coalesce_start(rail);
    mca_btl_ofi_locate_start(rail);
    return OPAL_SUCCESS;
}

/* The atomics it serves, and whether its owner's local handles do for it. */
static int mca_btl_ofi_rail_serve(mca_btl_ofi_rail_t *rail, bool *no_cswap)
{
    int rc = mca_btl_ofi_am_start(rail);

    if (OPAL_SUCCESS == rc) {
        rc = mca_btl_ofi_atomics_probe(rail, rail->config.casless_as_messages);
        *no_cswap = OPAL_ERR_NOT_SUPPORTED == rc;
    }
    if (OPAL_SUCCESS == rc && rail->config.shares_local_handles && rail->mr_local) {
        /* it is handed the first rail's local handles: none of its own */
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "node-local provider %s not used: it needs local "
                                            "registrations (FI_MR_LOCAL)",
                            rail->info->fabric_attr->prov_name);
        rc = OPAL_ERR_NOT_SUPPORTED;
    }
    return rc;
}

mca_btl_ofi_rail_t *mca_btl_ofi_rail_open(struct fi_info *info,
                                          const mca_btl_ofi_rail_config_t *config,
                                          const mca_btl_ofi_rail_caps_t *caps, bool *no_cswap)
{
    mca_btl_ofi_rail_t *rail = calloc(1, sizeof(*rail));
    bool messages;
    int rc;

    *no_cswap = false;
    if (NULL == rail) {
        fi_freeinfo(info);
        return NULL;
    }
    rail->config = *config;
    rail->caps = *caps;
    mca_btl_ofi_rail_construct(rail);
    /* messages want FI_MSG as well: it may replace info */
    messages = mca_btl_ofi_msg_prepare(&info);
    rail->coalesce = messages && mca_btl_ofi_coalesce_wanted(info);
    rc = mca_btl_ofi_device_open(rail, info);
    if (OPAL_SUCCESS == rc) {
        rc = mca_btl_ofi_rail_services(rail, messages);
    }
    if (OPAL_SUCCESS == rc) {
        rc = mca_btl_ofi_rail_serve(rail, no_cswap);
    }
    if (OPAL_SUCCESS == rc) {
        rc = mca_btl_ofi_modex_send(rail);
    }
    if (OPAL_SUCCESS != rc) {
        /* closing undoes whatever part of the opening happened */
        mca_btl_ofi_rail_close(rail);
        return NULL;
    }
    return rail;
}

void mca_btl_ofi_rail_drain(mca_btl_ofi_rail_t *rail)
{
    const double deadline = mca_btl_ofi_now() + MCA_BTL_OFI_DRAIN_SECONDS;

    /* a NIC that stops answering now fails nothing: the drain is bounded */
    rail->watch = false;
    if (!rail->initialized) {
        return;
    }
    while (atomic_load(&rail->outstanding) > 0 && mca_btl_ofi_now() < deadline) {
        (void)mca_btl_ofi_progress_wait(rail);
    }
    if (atomic_load(&rail->outstanding) > 0) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG
                            "finalize abandons %ld operations that did not complete",
                            (long)atomic_load(&rail->outstanding));
    }
}

void mca_btl_ofi_rail_close(mca_btl_ofi_rail_t *rail)
{
    mca_btl_ofi_rail_drain(rail);
    rail->initialized = false;

    /* Registrations and endpoints before the fids they belong to. */
    mca_btl_ofi_regs_release(rail);
    mca_btl_ofi_rcache_fini(rail);
    if (NULL != rail->proof_reg) {
        mca_btl_ofi_reg_destroy(rail->proof_reg);
        rail->proof_reg = NULL;
    }
    mca_btl_ofi_endpoints_release(rail);
    mca_btl_ofi_word_slabs_release(rail);
    mca_btl_ofi_msg_deregister(rail);
    mca_btl_ofi_device_close(rail);
    mca_btl_ofi_coalesce_stop(rail);
    mca_btl_ofi_locate_stop(rail);
    mca_btl_ofi_msg_stop(rail);

    mca_btl_ofi_fault_destruct(rail);
    OBJ_DESTRUCT(&rail->deferred);
    OBJ_DESTRUCT(&rail->deferred_lock);
    OBJ_DESTRUCT(&rail->regs_by_key);
    OBJ_DESTRUCT(&rail->live_regs);
    OBJ_DESTRUCT(&rail->word_slabs);
    OBJ_DESTRUCT(&rail->reg_lock);
    OBJ_DESTRUCT(&rail->endpoints);
    OBJ_DESTRUCT(&rail->endpoint_lock);
    OBJ_DESTRUCT(&rail->ops);
    free(rail);
}

void mca_btl_ofi_rail_shut(mca_btl_ofi_rail_t *rail)
{
    /* After this the provider writes nothing of ours: no buffer, no completion. One that
     * moves data only inside our calls is not called again (quarantined: btl_ofi_fault.h). */
    if (FI_PROGRESS_AUTO == rail->info->domain_attr->data_progress) {
        mca_btl_ofi_device_close_ep(rail);
    } else {
        rail->quarantined = true;
    }
    mca_btl_ofi_fault_fail_posted(rail);
}
