/*
 * btl-ofi routes: the calls Open MPI makes on the module. Each peer's
 * endpoint names the rail that reaches it (endpoint->rail), the endpoint on the
 * network rail that carries its atomics where those take the network
 * (endpoint->twin), and its endpoints on the further NICs (endpoint->stripe);
 * every call below goes to its rail with that rail's slot of the handles.
 *
 * Registration handles hold every rail's handle, one after the other
 * (btl_registration_handle_size grows by slots): the network rail's first, so
 * that a module with that rail alone reads its handles as before.
 */

#include "btl_ofi_route.h"

#include "opal/class/opal_bitmap.h"
#include "opal/util/proc.h"

#include "btl_ofi_atomics.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_fault.h"
#include "btl_ofi_register.h"
#include "btl_ofi_rdma.h"
#include "btl_ofi_stripe.h"

/* Every slot of a registration travels together (mca_btl_ofi_reg_t). */
_Static_assert(offsetof(mca_btl_ofi_reg_t, rail_handle) ==
                   offsetof(mca_btl_ofi_reg_t, handle) + sizeof(mca_btl_base_registration_handle_t),
               "the other rails' handles must follow the network one");

/* ---- peers ---------------------------------------------------------------- */

/* A peer on another node: its endpoints on the further NICs, in order, as far as it
 * published addresses there (set once; under the network rail's endpoint lock, add_procs may
 * run in several threads). */
static void mca_btl_ofi_route_stripes(mca_btl_ofi_module_t *module,
                                      mca_btl_base_endpoint_t *endpoint)
{
    mca_btl_base_endpoint_t *stripe[MCA_BTL_OFI_STRIPES_MAX - 1];
    int count = 0;

    if (0 != endpoint->stripes) {
        return;
    }
    for (int i = 0; i < module->nic_count; ++i) {
        stripe[count] = mca_btl_ofi_endpoint_get(module->nics[i], endpoint->proc);
        if (NULL == stripe[count]) {
            break; /* the parts go to the NICs in order: stop at the first the peer lacks */
        }
        ++count;
    }
    OPAL_THREAD_LOCK(&module->network->endpoint_lock);
    if (0 == endpoint->stripes) {
        memcpy(endpoint->stripe, stripe, sizeof(stripe[0]) * (size_t)count);
        endpoint->stripes = count;
    }
    OPAL_THREAD_UNLOCK(&module->network->endpoint_lock);
}

/* A peer on this node through the node-local rail, with its endpoint on the network rail
 * beside it when atomics travel there (!local_atomics); NULL when the peer published no
 * node-local address (it runs without one) or either endpoint cannot be made. */
static mca_btl_base_endpoint_t *mca_btl_ofi_route_on_node(mca_btl_ofi_module_t *module,
                                                          struct opal_proc_t *proc)
{
    mca_btl_base_endpoint_t *endpoint = mca_btl_ofi_endpoint_get(module->local, proc);

    if (NULL == endpoint || module->local_atomics || NULL != endpoint->twin) {
        return endpoint;
    }
    /* set once, by the first add_procs that meets this peer (endpoints live to finalize) */
    endpoint->twin = mca_btl_ofi_endpoint_get(module->network, proc);
    return NULL != endpoint->twin ? endpoint : NULL;
}

/* The endpoint Open MPI gets for proc, or NULL where btl-ofi does not reach it. */
static mca_btl_base_endpoint_t *mca_btl_ofi_route_peer(mca_btl_ofi_module_t *module,
                                                       struct opal_proc_t *proc)
{
    const bool on_node = OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags);
    mca_btl_base_endpoint_t *endpoint = NULL;

    if ((module->network->local_only && !on_node) || mca_btl_ofi_peer_unsent(proc, on_node)) {
        return NULL;
    }
    if (NULL != module->local && on_node) {
        /* a peer on this node: the node-local rail, where that peer has one */
        endpoint = mca_btl_ofi_route_on_node(module, proc);
    }
    if (NULL == endpoint) {
        endpoint = mca_btl_ofi_endpoint_get(module->network, proc);
        if (NULL != endpoint && 0 != module->nic_count && !on_node) {
            mca_btl_ofi_route_stripes(module, endpoint);
        }
    }
    return endpoint;
}

int mca_btl_ofi_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                          struct opal_bitmap_t *reachable)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;

    for (size_t i = 0; i < nprocs; ++i) {
        peers[i] = mca_btl_ofi_route_peer(module, procs[i]);
        if (NULL != peers[i] && NULL != reachable) {
            (void)opal_bitmap_set_bit(reachable, (int)i);
        }
    }
    return OPAL_SUCCESS;
}

int mca_btl_ofi_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers)
{
    (void)btl, (void)nprocs, (void)procs, (void)peers;
    return OPAL_SUCCESS;
}

/* ---- operations ------------------------------------------------------------ */

/* A put or a get: to the rail of its peer, with that rail's handle; split over the NICs
 * when it is large and the peer is reached through several. Inlined into put and get, which
 * then call their rail function directly. */
static inline __opal_attribute_always_inline__ int
mca_btl_ofi_route_rma(mca_btl_ofi_rail_rma_fn_t rma, mca_btl_ofi_module_t *module,
                      struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                      uint64_t remote_address,
                      struct mca_btl_base_registration_handle_t *local_handle,
                      struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                      mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    /* no endpoint: the network rail refuses it, counted (mca_btl_ofi_remote_target) */
    mca_btl_ofi_rail_t *rail = NULL == endpoint ? module->network : endpoint->rail;

    if (rail != module->network) {
        remote_handle = NULL == remote_handle ? NULL : remote_handle + rail->config.index;
    } else if (NULL != endpoint && 0 != endpoint->stripes && NULL != remote_handle &&
               module->stripe_min <= size && 0 != module->stripe_min) {
        return mca_btl_ofi_stripe_rma(rma, module, endpoint, local_address, remote_address,
                                      local_handle, remote_handle, size, cbfunc, cbcontext, cbdata);
    }
    return rma(rail, endpoint, local_address, remote_address, local_handle, remote_handle, size,
               cbfunc, cbcontext, cbdata);
}

int mca_btl_ofi_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata)
{
    (void)flags, (void)order;
    return mca_btl_ofi_route_rma(mca_btl_ofi_rail_put, (mca_btl_ofi_module_t *)btl, endpoint,
                                 local_address, remote_address, local_handle, remote_handle, size,
                                 cbfunc, cbcontext, cbdata);
}

int mca_btl_ofi_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata)
{
    (void)flags, (void)order;
    return mca_btl_ofi_route_rma(mca_btl_ofi_rail_get, (mca_btl_ofi_module_t *)btl, endpoint,
                                 local_address, remote_address, local_handle, remote_handle, size,
                                 cbfunc, cbcontext, cbdata);
}

/* The rail that carries an atomic to this endpoint, with the endpoint and remote handle it
 * takes there: a peer on this node whose atomics travel on the network goes there (twin). */
static mca_btl_ofi_rail_t *
mca_btl_ofi_route_atomic(mca_btl_ofi_module_t *module, struct mca_btl_base_endpoint_t **endpoint,
                         struct mca_btl_base_registration_handle_t **remote_handle)
{
    mca_btl_ofi_rail_t *rail = NULL == *endpoint ? module->network : (*endpoint)->rail;

    /* no endpoint: the network rail refuses it, counted (mca_btl_ofi_remote_target) */
    if (OPAL_LIKELY(rail == module->network)) {
        return rail;
    }
    if (NULL != (*endpoint)->twin) {
        *endpoint = (*endpoint)->twin;
        return module->network;
    }
    *remote_handle = NULL == *remote_handle ? NULL : *remote_handle + rail->config.index;
    return rail;
}

int mca_btl_ofi_aop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *remote_handle,
                    mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_rail_t *rail;

    (void)order;
    rail = mca_btl_ofi_route_atomic((mca_btl_ofi_module_t *)btl, &endpoint, &remote_handle);
    return mca_btl_ofi_rail_aop(rail, endpoint, remote_address, remote_handle, op, operand, flags,
                                cbfunc, cbcontext, cbdata);
}

int mca_btl_ofi_afop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle,
                     mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_rail_t *rail;

    (void)order;
    rail = mca_btl_ofi_route_atomic((mca_btl_ofi_module_t *)btl, &endpoint, &remote_handle);
    return mca_btl_ofi_rail_afop(rail, endpoint, local_address, remote_address, local_handle,
                                 remote_handle, op, operand, flags, cbfunc, cbcontext, cbdata);
}

int mca_btl_ofi_acswap(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                       void *local_address, uint64_t remote_address,
                       struct mca_btl_base_registration_handle_t *local_handle,
                       struct mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                       uint64_t value, int flags, int order,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_rail_t *rail;

    (void)order;
    rail = mca_btl_ofi_route_atomic((mca_btl_ofi_module_t *)btl, &endpoint, &remote_handle);
    return mca_btl_ofi_rail_acswap(rail, endpoint, local_address, remote_address, local_handle,
                                   remote_handle, compare, value, flags, cbfunc, cbcontext, cbdata);
}

/* The first error of two results. */
static int mca_btl_ofi_first_error(int rc, int each)
{
    return OPAL_SUCCESS != rc ? rc : each;
}

int mca_btl_ofi_flush(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;
    mca_btl_ofi_rail_t *network = module->network;
    int rc;

    if (NULL != endpoint && endpoint->rail != network) {
        /* a peer on this node, and where its atomics take the network, that endpoint too */
        rc = mca_btl_ofi_rail_flush(endpoint->rail, endpoint);
        if (NULL != endpoint->twin) {
            rc = mca_btl_ofi_first_error(rc, mca_btl_ofi_rail_flush(network, endpoint->twin));
        }
        return rc;
    }
    rc = mca_btl_ofi_rail_flush(network, endpoint);
    if (NULL == endpoint && NULL != module->local) {
        rc = mca_btl_ofi_first_error(rc, mca_btl_ofi_rail_flush(module->local, NULL));
    }
    if (0 != module->nic_count) {
        rc = mca_btl_ofi_stripe_flush(module, endpoint, rc);
    }
    return rc;
}

/* ---- registrations --------------------------------------------------------- */

int mca_btl_ofi_deregister_mem(struct mca_btl_base_module_t *btl,
                               struct mca_btl_base_registration_handle_t *handle)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;
    mca_btl_ofi_reg_t *reg;

    if (NULL == handle) {
        return OPAL_ERR_BAD_PARAM;
    }
    reg = container_of(handle, mca_btl_ofi_reg_t, handle);
    for (int slot = 1; slot < MCA_BTL_OFI_SLOTS; ++slot) {
        if (NULL != reg->by_rail[slot]) {
            mca_btl_ofi_rail_deregister(mca_btl_ofi_module_rail(module, slot), reg->by_rail[slot]);
            reg->by_rail[slot] = NULL;
        }
    }
    mca_btl_ofi_rail_deregister(module->network, reg);
    return OPAL_SUCCESS;
}

/* Registers on one more rail the memory reg holds on the network rail, in its slot. */
static bool mca_btl_ofi_register_beside(mca_btl_ofi_rail_t *rail, mca_btl_ofi_reg_t *reg,
                                        void *base, size_t size, uint32_t flags)
{
    const int slot = rail->config.index;
    mca_btl_ofi_reg_t *other = mca_btl_ofi_rail_register(rail, base, size, flags);

    if (NULL == other) {
        return false;
    }
    reg->by_rail[slot] = other;
    reg->rail_handle[slot - 1] = other->handle;
    return true;
}

struct mca_btl_base_registration_handle_t *
mca_btl_ofi_register_mem(struct mca_btl_base_module_t *btl,
                         struct mca_btl_base_endpoint_t *endpoint, void *base, size_t size,
                         uint32_t flags)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;
    mca_btl_ofi_reg_t *reg = mca_btl_ofi_rail_register(module->network, base, size, flags);
    bool ok = true;

    (void)endpoint;
    if (NULL == reg || 0 == (flags & MCA_BTL_OFI_REG_FLAGS_REMOTE)) {
        /* a buffer only this process touches: the other rails register it per operation
         * where they need a descriptor (mca_btl_ofi_op_desc) */
        return NULL == reg ? NULL : &reg->handle;
    }
    if (NULL != module->local) {
        ok = mca_btl_ofi_register_beside(module->local, reg, base, size, flags);
    }
    for (int i = 0; ok && i < module->nic_count; ++i) {
        /* a failed one is not called again */
        ok = mca_btl_ofi_nic_failed(module->nics[i]) ||
             mca_btl_ofi_register_beside(module->nics[i], reg, base, size, flags);
    }
    if (!ok) {
        (void)mca_btl_ofi_deregister_mem(btl, &reg->handle);
        return NULL;
    }
    return &reg->handle;
}
