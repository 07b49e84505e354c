/*
 * btl-ofi stripes: a large put or get to a peer on another node split over the
 * network rail and the further NICs, one callback for Open MPI once every part
 * is done; a part whose NIC fails moves to the first NIC. Flush covers every
 * NIC a peer's parts took.
 */

#include "btl_ofi_stripe.h"

#include <stdlib.h>

#include "btl_ofi_endpoint.h"
#include "btl_ofi_fault.h"
#include "btl_ofi_ops.h"
#include "btl_ofi_pvar.h"
#include "btl_ofi_rdma.h"

/* A put or a get split over the NICs: one callback for Open MPI once every part is done.
 * Each part keeps what it takes to post it again on the first NIC where its own fails
 * (btl_ofi_fault.c): the parts of a transfer then complete all the same. */
struct mca_btl_ofi_stripe_t;
typedef struct mca_btl_ofi_part_t {
    struct mca_btl_ofi_stripe_t *stripe;
    int nic; /**< 0: the first NIC (module->network), k: module->nics[k - 1] */
    size_t offset, len;
} mca_btl_ofi_part_t;

typedef struct mca_btl_ofi_stripe_t {
    mca_btl_ofi_rail_rma_fn_t rma; /**< mca_btl_ofi_rail_put or _get */
    mca_btl_ofi_module_t *module;
    struct mca_btl_base_endpoint_t *endpoint;
    char *local_address;
    uint64_t remote_address;
    struct mca_btl_base_registration_handle_t *local_handle, *remote_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc; /**< NULL: the caller relies on flush */
    void *cbcontext, *cbdata;
    atomic_int pending; /**< parts posted and not done, plus one while posting */
    atomic_int status;  /**< the first error of a part */
    mca_btl_ofi_part_t parts[MCA_BTL_OFI_STRIPES_MAX];
} mca_btl_ofi_stripe_t;

static void mca_btl_ofi_stripe_release(mca_btl_ofi_stripe_t *stripe)
{
    if (1 != atomic_fetch_sub(&stripe->pending, 1)) {
        return;
    }
    if (NULL != stripe->cbfunc) {
        stripe->cbfunc(&stripe->module->super, stripe->endpoint, stripe->local_address,
                       stripe->local_handle, stripe->cbcontext, stripe->cbdata,
                       atomic_load(&stripe->status));
    }
    free(stripe);
}

static void mca_btl_ofi_stripe_part_done(struct mca_btl_base_module_t *btl,
                                         struct mca_btl_base_endpoint_t *endpoint,
                                         void *local_address,
                                         struct mca_btl_base_registration_handle_t *local_handle,
                                         void *context, void *cbdata, int status);

/* Post one part on its NIC. wait: a full queue is waited out (every module progresses
 * meanwhile); else OUT_OF_RESOURCE comes back. */
static int mca_btl_ofi_stripe_post(mca_btl_ofi_part_t *part, bool wait)
{
    mca_btl_ofi_stripe_t *stripe = part->stripe;
    const int slot = 0 == part->nic ? 0 : 1 + part->nic;
    mca_btl_ofi_rail_t *nic = mca_btl_ofi_module_rail(stripe->module, slot);
    struct mca_btl_base_endpoint_t *to =
        0 == part->nic ? stripe->endpoint : stripe->endpoint->stripe[part->nic - 1];
    int rc;

    for (;;) {
        rc = stripe->rma(nic, to, stripe->local_address + part->offset,
                         stripe->remote_address + part->offset, stripe->local_handle,
                         stripe->remote_handle + slot, part->len, mca_btl_ofi_stripe_part_done,
                         part, NULL);
        if (OPAL_ERR_OUT_OF_RESOURCE != rc || !wait) {
            return rc;
        }
        (void)mca_btl_ofi_progress_wait(nic);
    }
}

/* A part that its NIC's failure ended (status OPAL_ERR_UNREACH, whether the failure came
 * while the part was in flight or before it was posted): that NIC's provider is stopped
 * (btl_ofi_fault.h) and nothing of the part moves there any more, so the first NIC carries
 * it again (the same bytes to the same place). The status of that post, or status where the
 * part stays. */
static int mca_btl_ofi_stripe_move(mca_btl_ofi_part_t *part, int status)
{
    mca_btl_ofi_stripe_t *stripe = part->stripe;

    if (OPAL_ERR_UNREACH != status || 0 == part->nic ||
        !mca_btl_ofi_nic_failed(stripe->module->nics[part->nic - 1])) {
        return status;
    }
    part->nic = 0;
    status = mca_btl_ofi_stripe_post(part, true);
    if (OPAL_SUCCESS == status) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_STRIPE_MOVED, 1);
    }
    return status;
}

static void mca_btl_ofi_stripe_part_done(struct mca_btl_base_module_t *btl,
                                         struct mca_btl_base_endpoint_t *endpoint,
                                         void *local_address,
                                         struct mca_btl_base_registration_handle_t *local_handle,
                                         void *context, void *cbdata, int status)
{
    mca_btl_ofi_part_t *part = context;
    mca_btl_ofi_stripe_t *stripe = part->stripe;
    int ok = OPAL_SUCCESS;

    (void)btl, (void)endpoint, (void)local_address, (void)local_handle, (void)cbdata;
    if (OPAL_ERR_UNREACH == status) {
        status = mca_btl_ofi_stripe_move(part, status);
        if (OPAL_SUCCESS == status) {
            return; /* posted again: its completion comes back here */
        }
    }
    if (OPAL_SUCCESS != status) {
        (void)atomic_compare_exchange_strong(&stripe->status, &ok, status);
    }
    mca_btl_ofi_stripe_release(stripe);
}

/*
 * A put or get of size bytes split into one part per NIC that has not failed (the first on
 * this module, the others on endpoint->stripe), each part a multiple of 4 KiB but the last.
 * Nothing is posted when the first part meets a full queue (OUT_OF_RESOURCE: Open MPI tries
 * again); a later part that meets one waits for room (every module's progress runs
 * meanwhile), so that a call that posted something always completes, through cbfunc where
 * there is one, with the first error of a part if one failed. Without cbfunc (osc/rdma's
 * puts: flush tells it they are done) the flush of that peer covers every NIC, and the
 * first NIC again after a part moved there.
 */
/* Post the parts of a transfer over the NICs nics[0..parts): OPAL_SUCCESS; the first part's
 * error, with nothing posted; or a later part's error (the ones before it posted). */
static int mca_btl_ofi_stripe_parts(mca_btl_ofi_stripe_t *stripe, const int *nics, int parts,
                                    size_t size, bool *posted)
{
    const size_t part = ((size / (size_t)parts) + 4095) & ~(size_t)4095;

    *posted = false;
    for (int i = 0; i < parts && (size_t)i * part < size; ++i) {
        mca_btl_ofi_part_t *each = &stripe->parts[i];
        int rc;

        *each = (mca_btl_ofi_part_t){
            .stripe = stripe,
            .nic = nics[i],
            .offset = (size_t)i * part,
            .len = size - (size_t)i * part < part ? size - (size_t)i * part : part,
        };
        atomic_fetch_add(&stripe->pending, 1);
        /* a further NIC that fails while the parts go out (its queue full, every rail
         * progressing) refuses its part, which the first NIC then takes */
        rc = mca_btl_ofi_stripe_move(each, mca_btl_ofi_stripe_post(each, 0 != i));
        if (OPAL_SUCCESS != rc) {
            atomic_fetch_sub(&stripe->pending, 1);
            return rc;
        }
        *posted = true;
    }
    return OPAL_SUCCESS;
}

int mca_btl_ofi_stripe_rma(mca_btl_ofi_rail_rma_fn_t rma, mca_btl_ofi_module_t *module,
                           struct mca_btl_base_endpoint_t *endpoint, char *local_address,
                           uint64_t remote_address,
                           struct mca_btl_base_registration_handle_t *local_handle,
                           struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                           mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    int nics[MCA_BTL_OFI_STRIPES_MAX], parts = 1, rc;
    mca_btl_ofi_stripe_t *stripe;
    bool posted;

    nics[0] = 0;
    for (int i = 0; i < endpoint->stripes; ++i) {
        if (!mca_btl_ofi_nic_failed(module->nics[i])) {
            nics[parts++] = i + 1;
        }
    }
    if (1 == parts) {
        /* every further NIC failed */
        return rma(module->network, endpoint, local_address, remote_address, local_handle,
                   remote_handle, size, cbfunc, cbcontext, cbdata);
    }
    stripe = malloc(sizeof(*stripe));
    if (NULL == stripe) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    *stripe = (mca_btl_ofi_stripe_t){
        .rma = rma,
        .module = module,
        .endpoint = endpoint,
        .local_address = local_address,
        .remote_address = remote_address,
        .local_handle = local_handle,
        .remote_handle = remote_handle,
        .cbfunc = cbfunc,
        .cbcontext = cbcontext,
        .cbdata = cbdata,
    };
    atomic_store(&stripe->pending, 1);
    atomic_store(&stripe->status, OPAL_SUCCESS);
    rc = mca_btl_ofi_stripe_parts(stripe, nics, parts, size, &posted);
    if (!posted) {
        free(stripe);
        return rc;
    }
    if (OPAL_SUCCESS != rc) {
        atomic_store(&stripe->status, rc);
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_STRIPED, 1);
    mca_btl_ofi_stripe_release(stripe);
    /* with a callback, that carries a later part's failure; without, the caller hears it
     * now (the parts posted before it are covered by its flush) */
    return NULL != cbfunc ? OPAL_SUCCESS : rc;
}

/* The flush of a further NIC (the k-th). One that failed holds nothing: its parts moved to
 * the first NIC (mca_btl_ofi_stripe_part_done), which is flushed again after them. */
static int mca_btl_ofi_flush_nic(mca_btl_ofi_module_t *module, int k,
                                 struct mca_btl_base_endpoint_t *endpoint)
{
    int rc = mca_btl_ofi_rail_flush(module->nics[k], endpoint);

    return OPAL_ERR_UNREACH == rc && mca_btl_ofi_nic_failed(module->nics[k]) ? OPAL_SUCCESS : rc;
}

/* After the further NICs' flush: where parts moved to the first NIC meanwhile (the count
 * moved since the flush began), the first NIC's flush again. */
static int mca_btl_ofi_flush_moved(mca_btl_ofi_module_t *module,
                                   struct mca_btl_base_endpoint_t *endpoint, uint64_t moved, int rc)
{
    int again;

    if (moved == mca_btl_ofi_counter_read(MCA_BTL_OFI_CNT_STRIPE_MOVED)) {
        return rc;
    }
    again = mca_btl_ofi_rail_flush(module->network, endpoint);
    return OPAL_SUCCESS != rc ? rc : again;
}

int mca_btl_ofi_stripe_flush(mca_btl_ofi_module_t *module, struct mca_btl_base_endpoint_t *endpoint,
                             int rc)
{
    const uint64_t moved = mca_btl_ofi_counter_read(MCA_BTL_OFI_CNT_STRIPE_MOVED);
    const int nics = NULL == endpoint ? module->nic_count : endpoint->stripes;
    int each;

    for (int i = 0; i < nics; ++i) {
        each = mca_btl_ofi_flush_nic(module, i, NULL == endpoint ? NULL : endpoint->stripe[i]);
        rc = OPAL_SUCCESS != rc ? rc : each;
    }
    return mca_btl_ofi_flush_moved(module, endpoint, moved, rc);
}
