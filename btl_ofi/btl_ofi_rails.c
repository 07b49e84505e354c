/*
 * btl-ofi with several domains in one module: the module Open MPI sees carries
 * the peers on other nodes over the network provider; a second module of its
 * own, opened on a node-local provider (shm) and published in the modex for
 * this node only, carries the peers on this node; further modules on the
 * network provider's other domains (NICs) carry parts of large puts and gets
 * to peers on other nodes (striping). Each peer's endpoint names the module
 * that reaches it (endpoint->module) and its endpoints on the further NICs
 * (endpoint->stripe), and the calls below send each operation there.
 *
 * Registration handles hold every domain's handle, one after the other
 * (btl_registration_handle_size grows by slots): the network one first, so
 * that everything that reads a handle of the module Open MPI sees reads it as
 * before; a module beside it is handed the handle of its slot.
 *
 * Atomics from this node and from other nodes on one word must stay atomic
 * with each other (NOTES.txt section 2c). With software providers (tcp,
 * sockets, ofi_rxm) and btl-ofi's atomics as messages, both domains' atomics
 * are applied at the target by its CPU with atomic instructions, so they may
 * travel apart; a NIC's own atomics are not atomic with the CPU's, so there
 * the atomics to peers on this node take the network domain too
 * (btl_ofi_local_atomics).
 */

#include "btl_ofi_rails.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opal/util/proc.h"

#include "btl_ofi_atomics.h"
#include "btl_ofi_compat.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_fault.h"
#include "btl_ofi_mr.h"
#include "btl_ofi_ops.h"
#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"
#include "btl_ofi_rdma.h"

/* Every slot of a registration travels together (mca_btl_ofi_reg_t). */
_Static_assert(offsetof(mca_btl_ofi_reg_t, rail_handle) ==
                   offsetof(mca_btl_ofi_reg_t, handle) + sizeof(mca_btl_base_registration_handle_t),
               "the other domains' handles must follow the network one");

static bool mca_btl_ofi_rails_none(const char *provider)
{
    return NULL == provider || '\0' == provider[0] || 0 == strcasecmp(provider, "none");
}

/* A job with processes on other nodes than this one: the same answer in every process. */
static bool mca_btl_ofi_rails_across_nodes(const mca_btl_ofi_module_t *module)
{
    uint32_t job_size = mca_btl_ofi_compat_job_size();

    return !module->local_only && 0 != job_size &&
           job_size > (uint32_t)opal_process_info.num_local_peers + 1;
}

const char *mca_btl_ofi_rails_wanted(const mca_btl_ofi_module_t *module)
{
    const char *provider = mca_btl_ofi_params.local_provider;

    if (mca_btl_ofi_rails_none(provider) ||
        0 == strcasecmp(provider, module->info->fabric_attr->prov_name) ||
        !mca_btl_ofi_rails_across_nodes(module)) {
        return NULL;
    }
    return provider;
}

bool mca_btl_ofi_rails_stripes_wanted(const mca_btl_ofi_module_t *module)
{
    return 0 < mca_btl_ofi_params.stripe_min && mca_btl_ofi_rails_across_nodes(module);
}

/* The providers whose atomics the target's CPU applies with atomic instructions (libfabric's
 * util atomics under ofi_rxm, tcp and shm): every part of the provider's name is one. */
static bool mca_btl_ofi_cpu_atomics(const mca_btl_ofi_module_t *module)
{
    static const char *const software[] = {"tcp", "sockets", "udp", "net", "shm",
                                           "ofi_rxm", "ofi_rxd", NULL};
    const char *part = module->info->fabric_attr->prov_name;

    if (module->atomics_as_messages) {
        return true;
    }
    while (NULL != part && '\0' != *part) {
        const char *end = strchr(part, ';');
        size_t len = end ? (size_t)(end - part) : strlen(part);
        bool known = false;

        for (int i = 0; NULL != software[i] && !known; ++i) {
            known = strlen(software[i]) == len && 0 == strncasecmp(part, software[i], len);
        }
        if (!known) {
            return false;
        }
        part = end ? end + 1 : NULL;
    }
    return true;
}

/* ---- the calls Open MPI makes, sent to the peer's module ----------------- */

/* The handle of a module beside the one Open MPI sees, in a handle of that one. */
static struct mca_btl_base_registration_handle_t *
mca_btl_ofi_rails_slot(struct mca_btl_base_registration_handle_t *handle,
                       const mca_btl_ofi_module_t *beside)
{
    return NULL == handle ? NULL : handle + beside->slot;
}

/* The module beside this one whose handles are in slot (1..). */
static mca_btl_ofi_module_t *mca_btl_ofi_rails_of_slot(const mca_btl_ofi_module_t *module,
                                                       int slot)
{
    return 1 == slot ? module->local : module->nics[slot - 2];
}

static int mca_btl_ofi_rails_deregister_mem(struct mca_btl_base_module_t *btl,
                                            struct mca_btl_base_registration_handle_t *handle)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;
    mca_btl_ofi_reg_t *reg;

    if (NULL == handle) {
        return OPAL_ERR_BAD_PARAM;
    }
    reg = container_of(handle, mca_btl_ofi_reg_t, handle);
    for (int slot = 1; slot < MCA_BTL_OFI_SLOTS; ++slot) {
        if (NULL != reg->rail_reg[slot - 1]) {
            (void)mca_btl_ofi_deregister_mem(&mca_btl_ofi_rails_of_slot(module, slot)->super,
                                             &reg->rail_reg[slot - 1]->handle);
            reg->rail_reg[slot - 1] = NULL;
        }
    }
    return mca_btl_ofi_deregister_mem(btl, handle);
}

/* Memory for peers is registered in every domain, each handle in its slot. */
static struct mca_btl_base_registration_handle_t *
mca_btl_ofi_rails_register_mem(struct mca_btl_base_module_t *btl,
                               struct mca_btl_base_endpoint_t *endpoint, void *base, size_t size,
                               uint32_t flags)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;
    struct mca_btl_base_registration_handle_t *handle, *other;
    mca_btl_ofi_module_t *beside[MCA_BTL_OFI_SLOTS - 1];
    mca_btl_ofi_reg_t *reg;
    int count = 0;

    handle = mca_btl_ofi_register_mem(btl, endpoint, base, size, flags);
    if (NULL == handle || 0 == (flags & MCA_BTL_OFI_REG_FLAGS_REMOTE)) {
        /* a buffer only this process touches: the other domains register it per operation
         * where they need a descriptor (mca_btl_ofi_op_desc) */
        return handle;
    }
    if (NULL != module->local) {
        beside[count++] = module->local;
    }
    for (int i = 0; i < module->nic_count; ++i) {
        if (!mca_btl_ofi_nic_failed(module->nics[i])) {
            beside[count++] = module->nics[i]; /* a failed one is not called again */
        }
    }
    reg = container_of(handle, mca_btl_ofi_reg_t, handle);
    for (int i = 0; i < count; ++i) {
        other = mca_btl_ofi_register_mem(&beside[i]->super, endpoint, base, size, flags);
        if (NULL == other) {
            (void)mca_btl_ofi_rails_deregister_mem(btl, handle);
            return NULL;
        }
        reg->rail_reg[beside[i]->slot - 1] = container_of(other, mca_btl_ofi_reg_t, handle);
        reg->rail_handle[beside[i]->slot - 1] = *other;
    }
    return handle;
}

/* A put or a get split over the NICs: one callback for Open MPI once every part is done.
 * Each part keeps what it takes to post it again on the first NIC where its own fails
 * (btl_ofi_fault.c): the parts of a transfer then complete all the same. */
struct mca_btl_ofi_stripe_t;
typedef struct mca_btl_ofi_part_t {
    struct mca_btl_ofi_stripe_t *stripe;
    int nic; /**< 0: the first NIC (module), k: module->nics[k - 1] */
    size_t offset, len;
} mca_btl_ofi_part_t;

typedef struct mca_btl_ofi_stripe_t {
    mca_btl_base_module_put_fn_t rma; /**< mca_btl_ofi_put or _get */
    mca_btl_ofi_module_t *module;     /**< the module Open MPI sees (the first NIC) */
    struct mca_btl_base_endpoint_t *endpoint;
    char *local_address;
    uint64_t remote_address;
    struct mca_btl_base_registration_handle_t *local_handle, *remote_handle;
    int flags, order;
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
    mca_btl_ofi_module_t *nic = 0 == part->nic ? stripe->module : stripe->module->nics[part->nic - 1];
    struct mca_btl_base_endpoint_t *to =
        0 == part->nic ? stripe->endpoint : stripe->endpoint->stripe[part->nic - 1];
    int rc;

    for (;;) {
        rc = stripe->rma(&nic->super, to, stripe->local_address + part->offset,
                         stripe->remote_address + part->offset, stripe->local_handle,
                         mca_btl_ofi_rails_slot(stripe->remote_handle, nic), part->len,
                         stripe->flags, stripe->order, mca_btl_ofi_stripe_part_done, part, NULL);
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
static int mca_btl_ofi_rails_striped(mca_btl_base_module_put_fn_t rma, mca_btl_ofi_module_t *module,
                                     struct mca_btl_base_endpoint_t *endpoint, char *local_address,
                                     uint64_t remote_address,
                                     struct mca_btl_base_registration_handle_t *local_handle,
                                     struct mca_btl_base_registration_handle_t *remote_handle,
                                     size_t size, int flags, int order,
                                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                     void *cbdata)
{
    int nics[MCA_BTL_OFI_STRIPES_MAX], parts = 1, failed = OPAL_SUCCESS;
    mca_btl_ofi_stripe_t *stripe;
    size_t part;

    nics[0] = 0;
    for (int i = 0; i < endpoint->stripes; ++i) {
        if (!mca_btl_ofi_nic_failed(module->nics[i])) {
            nics[parts++] = i + 1;
        }
    }
    if (1 == parts) {
        /* every further NIC failed */
        return rma(&module->super, endpoint, local_address, remote_address, local_handle,
                   remote_handle, size, flags, order, cbfunc, cbcontext, cbdata);
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
        .flags = flags,
        .order = order,
        .cbfunc = cbfunc,
        .cbcontext = cbcontext,
        .cbdata = cbdata,
    };
    atomic_store(&stripe->pending, 1);
    atomic_store(&stripe->status, OPAL_SUCCESS);
    part = ((size / (size_t)parts) + 4095) & ~(size_t)4095;
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
        /* a further NIC that fails while the parts go out (its queue full, every module
         * progressing) refuses its part, which the first NIC then takes */
        rc = mca_btl_ofi_stripe_move(each, mca_btl_ofi_stripe_post(each, 0 != i));
        if (OPAL_SUCCESS != rc) {
            atomic_fetch_sub(&stripe->pending, 1);
            if (0 == i) {
                free(stripe);
                return rc;
            }
            failed = rc;
            atomic_store(&stripe->status, rc);
            break;
        }
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_STRIPED, 1);
    mca_btl_ofi_stripe_release(stripe);
    /* with a callback, that carries a later part's failure; without, the caller hears it
     * now (the parts posted before it are covered by its flush) */
    return NULL != cbfunc ? OPAL_SUCCESS : failed;
}

/* A put or a get (one signature): to the module of its peer, with that module's handle;
 * split over the NICs when it is large and the peer is reached through several. */
static int mca_btl_ofi_rails_rma(mca_btl_base_module_put_fn_t rma,
                                 struct mca_btl_base_module_t *btl,
                                 struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                                 uint64_t remote_address,
                                 struct mca_btl_base_registration_handle_t *local_handle,
                                 struct mca_btl_base_registration_handle_t *remote_handle,
                                 size_t size, int flags, int order,
                                 mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                 void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;

    if (NULL != endpoint && endpoint->module != module) {
        btl = &endpoint->module->super;
        remote_handle = mca_btl_ofi_rails_slot(remote_handle, endpoint->module);
    } else if (NULL != endpoint && 0 != endpoint->stripes && NULL != remote_handle &&
               module->stripe_min <= size && 0 != module->stripe_min) {
        return mca_btl_ofi_rails_striped(rma, module, endpoint, local_address, remote_address,
                                         local_handle, remote_handle, size, flags, order, cbfunc,
                                         cbcontext, cbdata);
    }
    return rma(btl, endpoint, local_address, remote_address, local_handle, remote_handle, size,
               flags, order, cbfunc, cbcontext, cbdata);
}

/* btl_put and btl_get: one signature, one path (mca_btl_ofi_rails_rma). */
#define MCA_BTL_OFI_RAILS_RMA(name, fn)                                                            \
    static int name(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,   \
                    void *local_address, uint64_t remote_address,                                  \
                    struct mca_btl_base_registration_handle_t *local_handle,                       \
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,         \
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,                \
                    void *cbcontext, void *cbdata)                                                 \
    {                                                                                              \
        return mca_btl_ofi_rails_rma(fn, btl, endpoint, local_address, remote_address,             \
                                     local_handle, remote_handle, size, flags, order, cbfunc,      \
                                     cbcontext, cbdata);                                           \
    }

MCA_BTL_OFI_RAILS_RMA(mca_btl_ofi_rails_put, mca_btl_ofi_put)
MCA_BTL_OFI_RAILS_RMA(mca_btl_ofi_rails_get, mca_btl_ofi_get)

/*
 * Where an atomic to this endpoint goes: the module to call, with the endpoint and remote
 * handle it takes. A peer on this node whose atomics travel on the network (twin) goes there.
 */
static mca_btl_base_module_t *
mca_btl_ofi_rails_atomic_route(mca_btl_ofi_module_t *module,
                               struct mca_btl_base_endpoint_t **endpoint,
                               struct mca_btl_base_registration_handle_t **remote_handle)
{
    if (NULL == *endpoint || (*endpoint)->module == module) {
        return &module->super;
    }
    if (NULL != (*endpoint)->twin) {
        *endpoint = (*endpoint)->twin;
        return &module->super;
    }
    *remote_handle = mca_btl_ofi_rails_slot(*remote_handle, (*endpoint)->module);
    return &(*endpoint)->module->super;
}

static int mca_btl_ofi_rails_aop(struct mca_btl_base_module_t *btl,
                                 struct mca_btl_base_endpoint_t *endpoint, uint64_t remote_address,
                                 struct mca_btl_base_registration_handle_t *remote_handle,
                                 mca_btl_base_atomic_op_t op, uint64_t operand, int flags,
                                 int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                                 void *cbcontext, void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;
    mca_btl_base_module_t *to = mca_btl_ofi_rails_atomic_route(module, &endpoint, &remote_handle);

    return mca_btl_ofi_aop(to, endpoint, remote_address, remote_handle, op, operand, flags, order,
                           cbfunc, cbcontext, cbdata);
}

static int mca_btl_ofi_rails_afop(struct mca_btl_base_module_t *btl,
                                  struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                                  uint64_t remote_address,
                                  struct mca_btl_base_registration_handle_t *local_handle,
                                  struct mca_btl_base_registration_handle_t *remote_handle,
                                  mca_btl_base_atomic_op_t op, uint64_t operand, int flags,
                                  int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                                  void *cbcontext, void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;
    mca_btl_base_module_t *to = mca_btl_ofi_rails_atomic_route(module, &endpoint, &remote_handle);

    return mca_btl_ofi_afop(to, endpoint, local_address, remote_address, local_handle,
                            remote_handle, op, operand, flags, order, cbfunc, cbcontext, cbdata);
}

static int mca_btl_ofi_rails_acswap(struct mca_btl_base_module_t *btl,
                                    struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                                    uint64_t remote_address,
                                    struct mca_btl_base_registration_handle_t *local_handle,
                                    struct mca_btl_base_registration_handle_t *remote_handle,
                                    uint64_t compare, uint64_t value, int flags, int order,
                                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                    void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;
    mca_btl_base_module_t *to = mca_btl_ofi_rails_atomic_route(module, &endpoint, &remote_handle);

    return mca_btl_ofi_acswap(to, endpoint, local_address, remote_address, local_handle,
                              remote_handle, compare, value, flags, order, cbfunc, cbcontext,
                              cbdata);
}

/* The flush of a further NIC (the k-th). One that failed holds nothing: its parts moved to
 * the first NIC (mca_btl_ofi_stripe_part_done), which is flushed again after them. */
static int mca_btl_ofi_flush_nic(mca_btl_ofi_module_t *module, int k,
                                 struct mca_btl_base_endpoint_t *endpoint)
{
    int rc = mca_btl_ofi_flush(&module->nics[k]->super, endpoint);

    return OPAL_ERR_UNREACH == rc && mca_btl_ofi_nic_failed(module->nics[k]) ? OPAL_SUCCESS : rc;
}

/* After the further NICs' flush: where parts moved to the first NIC meanwhile (the count
 * moved since the flush began), the first NIC's flush again. */
static int mca_btl_ofi_flush_moved(mca_btl_ofi_module_t *module,
                                   struct mca_btl_base_endpoint_t *endpoint, uint64_t moved, int rc)
{
    int again;

    if (moved == atomic_load(&mca_btl_ofi_counters[MCA_BTL_OFI_CNT_STRIPE_MOVED])) {
        return rc;
    }
    again = mca_btl_ofi_flush(&module->super, endpoint);
    return OPAL_SUCCESS != rc ? rc : again;
}

/* A flush covers every domain the operations to that peer (or to all) took. */
static int mca_btl_ofi_rails_flush(struct mca_btl_base_module_t *btl,
                                   struct mca_btl_base_endpoint_t *endpoint)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;
    const uint64_t moved = atomic_load(&mca_btl_ofi_counters[MCA_BTL_OFI_CNT_STRIPE_MOVED]);
    int rc = OPAL_SUCCESS, each;

    if (NULL == endpoint) {
        rc = mca_btl_ofi_flush(btl, NULL);
        if (NULL != module->local) {
            each = mca_btl_ofi_flush(&module->local->super, NULL);
            rc = OPAL_SUCCESS != rc ? rc : each;
        }
        for (int i = 0; i < module->nic_count; ++i) {
            each = mca_btl_ofi_flush_nic(module, i, NULL);
            rc = OPAL_SUCCESS != rc ? rc : each;
        }
        return mca_btl_ofi_flush_moved(module, NULL, moved, rc);
    }
    if (endpoint->module != module) {
        /* a peer on this node, and where its atomics take the network, that endpoint too */
        rc = mca_btl_ofi_flush(&endpoint->module->super, endpoint);
        if (NULL != endpoint->twin) {
            each = mca_btl_ofi_flush(btl, endpoint->twin);
            rc = OPAL_SUCCESS != rc ? rc : each;
        }
        return rc;
    }
    rc = mca_btl_ofi_flush(btl, endpoint);
    for (int i = 0; i < endpoint->stripes; ++i) {
        each = mca_btl_ofi_flush_nic(module, i, endpoint->stripe[i]);
        rc = OPAL_SUCCESS != rc ? rc : each;
    }
    return mca_btl_ofi_flush_moved(module, endpoint, moved, rc);
}

/* ---- set up -------------------------------------------------------------- */

static void mca_btl_ofi_rails_record(const mca_btl_ofi_module_t *module,
                                     const mca_btl_ofi_module_t *local)
{
    const struct fi_info *info = local->info;
    char selected[512], *copy;

    /* read through MPI_T (btl_ofi_local_selected): the variable system frees it */
    snprintf(selected, sizeof(selected), "%s fabric %s domain %s", info->fabric_attr->prov_name,
             info->fabric_attr->name, info->domain_attr->name);
    if (NULL != (copy = strdup(selected))) {
        mca_btl_ofi_params.local_selected = copy;
    }
    opal_output_verbose(10, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "peers on this node over %s (fabric %s, domain %s), "
                                        "atomics to them over %s; other peers over %s",
                        info->fabric_attr->prov_name, info->fabric_attr->name,
                        info->domain_attr->name,
                        module->local_atomics ? info->fabric_attr->prov_name
                                              : module->info->fabric_attr->prov_name,
                        module->info->fabric_attr->prov_name);
}

/* What every domain in use takes. */
static void mca_btl_ofi_rails_limits(mca_btl_base_module_t *front, const mca_btl_ofi_module_t *m)
{
    if (m->super.btl_put_limit < front->btl_put_limit) {
        front->btl_put_limit = m->super.btl_put_limit;
    }
    if (m->super.btl_get_limit < front->btl_get_limit) {
        front->btl_get_limit = m->super.btl_get_limit;
    }
    if (m->super.btl_put_alignment > front->btl_put_alignment) {
        front->btl_put_alignment = m->super.btl_put_alignment;
    }
    if (m->super.btl_get_alignment > front->btl_get_alignment) {
        front->btl_get_alignment = m->super.btl_get_alignment;
    }
}

void mca_btl_ofi_rails_attach(mca_btl_ofi_module_t *module, mca_btl_ofi_module_t *local,
                              mca_btl_ofi_module_t **nics, int nic_count, bool stripes)
{
    mca_btl_base_module_t *front = &module->super;
    const uint32_t atomic_flags = front->btl_atomic_flags;
    const int choice = mca_btl_ofi_params.local_atomics;

    /* Handles of every slot the job may use, in every process of the job (the conditions of
     * mca_btl_ofi_rails_wanted and _stripes_wanted are the same everywhere), also where this
     * one has fewer domains (those slots stay empty). */
    front->btl_registration_handle_size =
        (stripes ? MCA_BTL_OFI_SLOTS : 2) * sizeof(mca_btl_base_registration_handle_t);
    front->btl_register_mem = mca_btl_ofi_rails_register_mem;
    front->btl_deregister_mem = mca_btl_ofi_rails_deregister_mem;
    mca_btl_ofi_counter_set(MCA_BTL_OFI_CNT_NICS, 1 + (uint64_t)nic_count);
    if (NULL == local && 0 == nic_count) {
        return;
    }
    if (NULL != local) {
        module->local_atomics =
            MCA_BTL_OFI_LOCAL_ATOMICS_LOCAL == choice ||
            (MCA_BTL_OFI_LOCAL_ATOMICS_AUTO == choice && mca_btl_ofi_cpu_atomics(module));
        if (module->local_atomics &&
            (local->super.btl_atomic_flags & atomic_flags) != atomic_flags) {
            /* it lacks an atomic Open MPI will send: all of them take the network */
            module->local_atomics = false;
        }
        module->local = local;
        mca_btl_ofi_rails_limits(front, local);
        mca_btl_ofi_rails_record(module, local);
    }
    for (int i = 0; i < nic_count; ++i) {
        module->nics[i] = nics[i];
        mca_btl_ofi_rails_limits(front, nics[i]);
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "striping puts and gets of %d bytes or more to peers "
                                            "on other nodes over %s (fabric %s) too",
                            mca_btl_ofi_params.stripe_min, nics[i]->info->domain_attr->name,
                            nics[i]->info->fabric_attr->name);
    }
    module->nic_count = nic_count;
    module->stripe_min = (size_t)mca_btl_ofi_params.stripe_min;
    front->btl_put = mca_btl_ofi_rails_put;
    front->btl_get = mca_btl_ofi_rails_get;
    front->btl_atomic_op = mca_btl_ofi_rails_aop;
    front->btl_atomic_fop = mca_btl_ofi_rails_afop;
    front->btl_atomic_cswap = mca_btl_ofi_rails_acswap;
    front->btl_flush = mca_btl_ofi_rails_flush;
}
