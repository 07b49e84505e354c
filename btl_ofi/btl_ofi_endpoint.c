/*
 * btl-ofi endpoints: the modex (our address and proof word, published once)
 * and add_procs/del_procs (address-vector insertion, one endpoint per peer).
 */

#include "btl_ofi_endpoint.h"

#include <string.h>

#include "opal/class/opal_bitmap.h"
#include "opal/mca/hwloc/hwloc-internal.h"

#include "btl_ofi_pvar.h"
#include "btl_ofi_report.h"

#define MCA_BTL_OFI_PROV_NAME_MAX 64

/** What each process publishes. The libfabric address follows the header. */
typedef struct mca_btl_ofi_modex_t {
    char provider[MCA_BTL_OFI_PROV_NAME_MAX];
    mca_btl_base_registration_handle_t proof_handle;
    uint32_t addrlen;
    uint8_t addr[];
} mca_btl_ofi_modex_t;

static void mca_btl_ofi_endpoint_construct(mca_btl_base_endpoint_t *endpoint)
{
    endpoint->proc = NULL;
    endpoint->module = NULL;
    endpoint->twin = NULL;
    endpoint->stripes = 0;
    endpoint->peer_addr = FI_ADDR_NOTAVAIL;
    atomic_store(&endpoint->unproven, false);
    endpoint->batch = NULL;
    atomic_store(&endpoint->co_in_flight, 0);
    endpoint->co_bursty = false;
}

OBJ_CLASS_INSTANCE(mca_btl_base_endpoint_t, opal_object_t, mca_btl_ofi_endpoint_construct, NULL);

/*
 * The modex key of a module's data. A module beside the one Open MPI sees publishes under
 * a name of its own: "<component>-local" (the node-local one, seen by the processes of
 * this node only), "<component>-nic<k>" (the k-th further NIC).
 */
static const mca_base_component_t *mca_btl_ofi_modex_key(const mca_btl_ofi_module_t *module)
{
    static mca_base_component_t keys[MCA_BTL_OFI_SLOTS];
    mca_base_component_t *key = &keys[module->slot];
    const char *name = module->super.btl_component->btl_version.mca_component_name;

    if (0 == module->slot) {
        return &module->super.btl_component->btl_version;
    }
    if ('\0' == key->mca_component_name[0]) {
        /* made once, at init (each module publishes before any peer is added) */
        *key = module->super.btl_component->btl_version;
        if (mca_btl_ofi_node_local(module)) {
            snprintf(key->mca_component_name, sizeof(key->mca_component_name), "%.48s-local",
                     name);
        } else {
            snprintf(key->mca_component_name, sizeof(key->mca_component_name), "%.48s-nic%d",
                     name, module->slot - 1);
        }
    }
    return key;
}

int mca_btl_ofi_modex_send(mca_btl_ofi_module_t *module)
{
    size_t addrlen = 0;
    mca_btl_ofi_modex_t *msg;
    int rc;

    rc = fi_getname(&module->ep->fid, NULL, &addrlen);
    if (-FI_ETOOSMALL != rc && 0 != rc) {
        mca_btl_ofi_decline_fi_call(module->info->fabric_attr->prov_name, "fi_getname", rc);
        return OPAL_ERROR;
    }
    msg = calloc(1, sizeof(*msg) + addrlen);
    if (NULL == msg) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rc = fi_getname(&module->ep->fid, msg->addr, &addrlen);
    if (0 != rc) {
        mca_btl_ofi_decline_fi_call(module->info->fabric_attr->prov_name, "fi_getname", rc);
        free(msg);
        return OPAL_ERROR;
    }
    strncpy(msg->provider, module->info->fabric_attr->prov_name, sizeof(msg->provider) - 1);
    msg->proof_handle = module->proof_reg->handle;
    msg->addrlen = (uint32_t)addrlen;

    rc = mca_btl_ofi_compat_modex_send(mca_btl_ofi_modex_key(module), msg, sizeof(*msg) + addrlen,
                                       mca_btl_ofi_node_local(module));
    free(msg);
    return rc;
}

static uint64_t mca_btl_ofi_name_key(const opal_process_name_t *name)
{
    uint64_t key = 0;

    memcpy(&key, name, sizeof(*name) < sizeof(key) ? sizeof(*name) : sizeof(key));
    return key;
}

/* Build the endpoint for one peer from its modex data; NULL when it is unreachable. */
static mca_btl_base_endpoint_t *mca_btl_ofi_endpoint_create(mca_btl_ofi_module_t *module,
                                                            struct opal_proc_t *proc)
{
    mca_btl_ofi_modex_t *msg = NULL;
    mca_btl_base_endpoint_t *endpoint;
    size_t size = 0;
    fi_addr_t addr;
    int rc;

    OPAL_MODEX_RECV(rc, mca_btl_ofi_modex_key(module), &proc->proc_name, (void **)&msg, &size);
    if (OPAL_SUCCESS != rc || NULL == msg || size < sizeof(*msg) ||
        size != sizeof(*msg) + msg->addrlen) {
        opal_output_verbose(10, mca_btl_ofi_output, MCA_BTL_OFI_LOG "no usable modex data from %s",
                            OPAL_NAME_PRINT(proc->proc_name));
        free(msg);
        return NULL;
    }
    if (0 != strncmp(msg->provider, module->info->fabric_attr->prov_name, sizeof(msg->provider))) {
        opal_output_verbose(
            1, mca_btl_ofi_output,
            MCA_BTL_OFI_LOG "peer %s uses provider %.64s, this process %s: unreachable",
            OPAL_NAME_PRINT(proc->proc_name), msg->provider, module->info->fabric_attr->prov_name);
        free(msg);
        return NULL;
    }
    rc = fi_av_insert(module->av, msg->addr, 1, &addr, 0, NULL);
    if (1 != rc) {
        opal_output_verbose(1, mca_btl_ofi_output, MCA_BTL_OFI_LOG "fi_av_insert for %s failed: %s",
                            OPAL_NAME_PRINT(proc->proc_name),
                            fi_strerror(rc < 0 ? -rc : FI_EINVAL));
        free(msg);
        return NULL;
    }
    endpoint = OBJ_NEW(mca_btl_base_endpoint_t);
    if (NULL != endpoint) {
        endpoint->proc = proc;
        endpoint->module = module;
        endpoint->peer_addr = addr;
        if (mca_btl_ofi_node_local(module)) {
            mca_btl_ofi_count(MCA_BTL_OFI_CNT_LOCAL_PEERS, 1);
        }
        endpoint->proof_handle = msg->proof_handle;
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_PEERS, 1);
    }
    free(msg);
    return endpoint;
}

static mca_btl_base_endpoint_t *mca_btl_ofi_endpoint_get(mca_btl_ofi_module_t *module,
                                                         struct opal_proc_t *proc)
{
    uint64_t key = mca_btl_ofi_name_key(&proc->proc_name);
    mca_btl_base_endpoint_t *endpoint = NULL;

    OPAL_THREAD_LOCK(&module->endpoint_lock);
    if (OPAL_SUCCESS !=
        opal_hash_table_get_value_uint64(&module->endpoints, key, (void **)&endpoint)) {
        endpoint = mca_btl_ofi_endpoint_create(module, proc);
        if (NULL != endpoint) {
            opal_hash_table_set_value_uint64(&module->endpoints, key, endpoint);
        }
    }
    OPAL_THREAD_UNLOCK(&module->endpoint_lock);
    return endpoint;
}

/*
 * A peer on another node: its endpoints on the further NICs, in order, as far as it
 * published addresses there (set once; under the endpoint lock, add_procs may run in
 * several threads).
 */
static void mca_btl_ofi_stripes_get(mca_btl_ofi_module_t *module,
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
    OPAL_THREAD_LOCK(&module->endpoint_lock);
    if (0 == endpoint->stripes) {
        memcpy(endpoint->stripe, stripe, sizeof(stripe[0]) * (size_t)count);
        endpoint->stripes = count;
    }
    OPAL_THREAD_UNLOCK(&module->endpoint_lock);
}

/*
 * A peer on this node through the node-local module, with its endpoint on this module
 * beside it when atomics travel there (!local_atomics); NULL when the peer published no
 * node-local address (it runs without one) or either endpoint cannot be made.
 */
static mca_btl_base_endpoint_t *mca_btl_ofi_local_endpoint_get(mca_btl_ofi_module_t *module,
                                                               struct opal_proc_t *proc)
{
    mca_btl_base_endpoint_t *endpoint = mca_btl_ofi_endpoint_get(module->local, proc);

    if (NULL == endpoint || module->local_atomics || NULL != endpoint->twin) {
        return endpoint;
    }
    /* set once, by the first add_procs that meets this peer (endpoints live to finalize) */
    endpoint->twin = mca_btl_ofi_endpoint_get(module, proc);
    return NULL != endpoint->twin ? endpoint : NULL;
}

mca_btl_base_endpoint_t *mca_btl_ofi_endpoint_by_name(mca_btl_ofi_module_t *module,
                                                      const opal_process_name_t *name)
{
    mca_btl_base_endpoint_t *endpoint = NULL;
    struct opal_proc_t *proc;

    OPAL_THREAD_LOCK(&module->endpoint_lock);
    (void)opal_hash_table_get_value_uint64(&module->endpoints, mca_btl_ofi_name_key(name),
                                           (void **)&endpoint);
    OPAL_THREAD_UNLOCK(&module->endpoint_lock);
    if (NULL != endpoint) {
        return endpoint;
    }
    proc = opal_proc_for_name(*name);
    return (NULL == proc) ? NULL : mca_btl_ofi_endpoint_get(module, proc);
}

int mca_btl_ofi_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                          struct opal_bitmap_t *reachable)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;

    for (size_t i = 0; i < nprocs; ++i) {
        peers[i] = NULL;
        if (module->local_only && !OPAL_PROC_ON_LOCAL_NODE(procs[i]->proc_flags)) {
            continue;
        }
        if (NULL != module->local && OPAL_PROC_ON_LOCAL_NODE(procs[i]->proc_flags)) {
            /* a peer on this node: the node-local domain, where that peer has one */
            peers[i] = mca_btl_ofi_local_endpoint_get(module, procs[i]);
        }
        if (NULL == peers[i]) {
            peers[i] = mca_btl_ofi_endpoint_get(module, procs[i]);
            if (NULL != peers[i] && 0 != module->nic_count &&
                !OPAL_PROC_ON_LOCAL_NODE(procs[i]->proc_flags)) {
                mca_btl_ofi_stripes_get(module, peers[i]);
            }
        }
        if (NULL != peers[i] && NULL != reachable) {
            (void)opal_bitmap_set_bit(reachable, (int)i);
        }
    }
    return OPAL_SUCCESS;
}

int mca_btl_ofi_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers)
{
    /* Endpoints stay valid until finalize: osc/rdma may still hold them. */
    (void)btl;
    (void)nprocs;
    (void)procs;
    (void)peers;
    return OPAL_SUCCESS;
}

void mca_btl_ofi_endpoints_release(mca_btl_ofi_module_t *module)
{
    mca_btl_base_endpoint_t *endpoint;
    uint64_t key;

    OPAL_HASH_TABLE_FOREACH(key, uint64, endpoint, &module->endpoints)
    {
        OBJ_RELEASE(endpoint);
        mca_btl_ofi_uncount(MCA_BTL_OFI_CNT_PEERS, 1);
    }
    opal_hash_table_remove_all(&module->endpoints);
}
