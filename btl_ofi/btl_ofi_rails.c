/*
 * btl-ofi with two domains in one module: the module Open MPI sees carries
 * the peers on other nodes over the network provider; a second module of its
 * own, opened on a node-local provider (shm) and published in the modex for
 * this node only, carries the peers on this node. Each peer's endpoint names
 * the module that reaches it (endpoint->module), and the calls below send
 * each operation there.
 *
 * Registration handles hold both domains' handles, one after the other
 * (btl_registration_handle_size doubles): the network one first, so that
 * everything that reads a handle of the module Open MPI sees reads it as
 * before; the node-local module is handed the second half.
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
#include "btl_ofi_mr.h"
#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"
#include "btl_ofi_rdma.h"

/* Both halves of a registration travel together (mca_btl_ofi_reg_t). */
_Static_assert(offsetof(mca_btl_ofi_reg_t, rail_handle) ==
                   offsetof(mca_btl_ofi_reg_t, handle) + sizeof(mca_btl_base_registration_handle_t),
               "the node-local handle must follow the network one");

static bool mca_btl_ofi_rails_none(const char *provider)
{
    return NULL == provider || '\0' == provider[0] || 0 == strcasecmp(provider, "none");
}

const char *mca_btl_ofi_rails_wanted(const mca_btl_ofi_module_t *module)
{
    const char *provider = mca_btl_ofi_params.local_provider;
    uint32_t job_size;

    if (mca_btl_ofi_rails_none(provider) || module->local_only ||
        0 == strcasecmp(provider, module->info->fabric_attr->prov_name)) {
        return NULL;
    }
    /* the same answer in every process of the job: all of them size handles alike */
    job_size = mca_btl_ofi_compat_job_size();
    if (0 == job_size || job_size <= (uint32_t)opal_process_info.num_local_peers + 1) {
        return NULL;
    }
    return provider;
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

/* The second half of a handle of the module Open MPI sees: the node-local domain's. */
static struct mca_btl_base_registration_handle_t *
mca_btl_ofi_rails_half(struct mca_btl_base_registration_handle_t *handle)
{
    return NULL == handle ? NULL : handle + 1;
}

static struct mca_btl_base_registration_handle_t *
mca_btl_ofi_rails_register_mem(struct mca_btl_base_module_t *btl,
                               struct mca_btl_base_endpoint_t *endpoint, void *base, size_t size,
                               uint32_t flags)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;
    struct mca_btl_base_registration_handle_t *handle, *local;
    mca_btl_ofi_reg_t *reg;

    handle = mca_btl_ofi_register_mem(btl, endpoint, base, size, flags);
    if (NULL == handle || NULL == module->local || 0 == (flags & MCA_BTL_OFI_REG_FLAGS_REMOTE)) {
        /* a buffer only this process touches: the node-local domain needs no descriptor */
        return handle;
    }
    local = mca_btl_ofi_register_mem(&module->local->super, endpoint, base, size, flags);
    if (NULL == local) {
        (void)mca_btl_ofi_deregister_mem(btl, handle);
        return NULL;
    }
    reg = container_of(handle, mca_btl_ofi_reg_t, handle);
    reg->rail_reg = container_of(local, mca_btl_ofi_reg_t, handle);
    reg->rail_handle = *local;
    return handle;
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
    if (NULL != reg->rail_reg) {
        (void)mca_btl_ofi_deregister_mem(&module->local->super, &reg->rail_reg->handle);
        reg->rail_reg = NULL;
    }
    return mca_btl_ofi_deregister_mem(btl, handle);
}

/* A put or a get (one signature): to the module of its peer, with that module's handle. */
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
    if (NULL != endpoint && endpoint->module != (mca_btl_ofi_module_t *)btl) {
        btl = &endpoint->module->super;
        remote_handle = mca_btl_ofi_rails_half(remote_handle);
    }
    return rma(btl, endpoint, local_address, remote_address, local_handle, remote_handle, size,
               flags, order, cbfunc, cbcontext, cbdata);
}

static int mca_btl_ofi_rails_put(struct mca_btl_base_module_t *btl,
                                 struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                                 uint64_t remote_address,
                                 struct mca_btl_base_registration_handle_t *local_handle,
                                 struct mca_btl_base_registration_handle_t *remote_handle,
                                 size_t size, int flags, int order,
                                 mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                 void *cbdata)
{
    return mca_btl_ofi_rails_rma(mca_btl_ofi_put, btl, endpoint, local_address, remote_address,
                                 local_handle, remote_handle, size, flags, order, cbfunc,
                                 cbcontext, cbdata);
}

static int mca_btl_ofi_rails_get(struct mca_btl_base_module_t *btl,
                                 struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                                 uint64_t remote_address,
                                 struct mca_btl_base_registration_handle_t *local_handle,
                                 struct mca_btl_base_registration_handle_t *remote_handle,
                                 size_t size, int flags, int order,
                                 mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                 void *cbdata)
{
    return mca_btl_ofi_rails_rma(mca_btl_ofi_get, btl, endpoint, local_address, remote_address,
                                 local_handle, remote_handle, size, flags, order, cbfunc,
                                 cbcontext, cbdata);
}

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
    *remote_handle = mca_btl_ofi_rails_half(*remote_handle);
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

/* A flush covers every domain the operations to that peer (or to all) took. */
static int mca_btl_ofi_rails_flush(struct mca_btl_base_module_t *btl,
                                   struct mca_btl_base_endpoint_t *endpoint)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;
    int rc, rc_local = OPAL_SUCCESS;

    if (NULL != endpoint && endpoint->module == module) {
        return mca_btl_ofi_flush(btl, endpoint);
    }
    if (NULL != module->local) {
        rc_local = mca_btl_ofi_flush(&module->local->super, endpoint);
    }
    if (NULL == endpoint || NULL != endpoint->twin) {
        rc = mca_btl_ofi_flush(btl, endpoint ? endpoint->twin : NULL);
        return OPAL_SUCCESS != rc_local ? rc_local : rc;
    }
    return rc_local;
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

void mca_btl_ofi_rails_attach(mca_btl_ofi_module_t *module, mca_btl_ofi_module_t *local)
{
    mca_btl_base_module_t *front = &module->super;
    const uint32_t atomic_flags = front->btl_atomic_flags;
    const int choice = mca_btl_ofi_params.local_atomics;

    /* Handles of both domains, in every process of the job (mca_btl_ofi_rails_wanted), also
     * where this one has no node-local domain (its second half stays empty). */
    front->btl_registration_handle_size = 2 * sizeof(mca_btl_base_registration_handle_t);
    front->btl_register_mem = mca_btl_ofi_rails_register_mem;
    front->btl_deregister_mem = mca_btl_ofi_rails_deregister_mem;
    if (NULL == local) {
        return;
    }

    module->local_atomics =
        MCA_BTL_OFI_LOCAL_ATOMICS_LOCAL == choice ||
        (MCA_BTL_OFI_LOCAL_ATOMICS_AUTO == choice && mca_btl_ofi_cpu_atomics(module));
    if (module->local_atomics && (local->super.btl_atomic_flags & atomic_flags) != atomic_flags) {
        /* it lacks an atomic Open MPI will send: all of them take the network */
        module->local_atomics = false;
    }
    module->local = local;
    /* what both domains take */
    if (local->super.btl_put_limit < front->btl_put_limit) {
        front->btl_put_limit = local->super.btl_put_limit;
    }
    if (local->super.btl_get_limit < front->btl_get_limit) {
        front->btl_get_limit = local->super.btl_get_limit;
    }
    if (local->super.btl_put_alignment > front->btl_put_alignment) {
        front->btl_put_alignment = local->super.btl_put_alignment;
    }
    if (local->super.btl_get_alignment > front->btl_get_alignment) {
        front->btl_get_alignment = local->super.btl_get_alignment;
    }
    front->btl_put = mca_btl_ofi_rails_put;
    front->btl_get = mca_btl_ofi_rails_get;
    front->btl_atomic_op = mca_btl_ofi_rails_aop;
    front->btl_atomic_fop = mca_btl_ofi_rails_afop;
    front->btl_atomic_cswap = mca_btl_ofi_rails_acswap;
    front->btl_flush = mca_btl_ofi_rails_flush;
    mca_btl_ofi_rails_record(module, local);
}
