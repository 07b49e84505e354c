/*
 * btl-ofi endpoints: the modex (our address and proof word, published once)
 * and add_procs/del_procs (address-vector insertion, one endpoint per peer).
 */

#include "btl_ofi_endpoint.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "opal/class/opal_bitmap.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/hwloc/hwloc-internal.h"
#include "opal/version.h"

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
    endpoint->rail = NULL;
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
 * The modex key of a rail's data: the component's for the first rail, else the component's
 * name with the rail's suffix ("<component>-local" for the node-local rail, seen by the
 * processes of this node only; "<component>-nic<k>" for the k-th further NIC).
 */
static const mca_base_component_t *mca_btl_ofi_modex_key(const mca_btl_ofi_rail_t *rail)
{
    static mca_base_component_t keys[MCA_BTL_OFI_SLOTS];
    const mca_base_component_t *component = &rail->config.hooks.btl->btl_component->btl_version;
    mca_base_component_t *key = &keys[rail->config.index];

    if ('\0' == rail->config.modex_suffix[0]) {
        return component;
    }
    if ('\0' == key->mca_component_name[0]) {
        /* made once, at init (each rail publishes before any peer is added) */
        *key = *component;
        snprintf(key->mca_component_name, sizeof(key->mca_component_name), "%.48s%s",
                 component->mca_component_name, rail->config.modex_suffix);
    }
    return key;
}

int mca_btl_ofi_modex_send(mca_btl_ofi_rail_t *rail)
{
    size_t addrlen = 0;
    mca_btl_ofi_modex_t *msg;
    int rc;

    rc = fi_getname(&rail->ep->fid, NULL, &addrlen);
    if (-FI_ETOOSMALL != rc && 0 != rc) {
        mca_btl_ofi_decline_fi_call(rail->info->fabric_attr->prov_name, "fi_getname", rc);
        return OPAL_ERROR;
    }
    msg = calloc(1, sizeof(*msg) + addrlen);
    if (NULL == msg) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rc = fi_getname(&rail->ep->fid, msg->addr, &addrlen);
    if (0 != rc) {
        mca_btl_ofi_decline_fi_call(rail->info->fabric_attr->prov_name, "fi_getname", rc);
        free(msg);
        return OPAL_ERROR;
    }
    strncpy(msg->provider, rail->info->fabric_attr->prov_name, sizeof(msg->provider) - 1);
    msg->proof_handle = rail->proof_reg->handle;
    msg->addrlen = (uint32_t)addrlen;

    rc = mca_btl_ofi_compat_modex_send(mca_btl_ofi_modex_key(rail), msg, sizeof(*msg) + addrlen,
                                       rail->config.publish_on_node);
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
static mca_btl_base_endpoint_t *mca_btl_ofi_endpoint_create(mca_btl_ofi_rail_t *rail,
                                                            struct opal_proc_t *proc)
{
    mca_btl_ofi_modex_t *msg = NULL;
    mca_btl_base_endpoint_t *endpoint;
    size_t size = 0;
    fi_addr_t addr;
    int rc;

    OPAL_MODEX_RECV(rc, mca_btl_ofi_modex_key(rail), &proc->proc_name, (void **)&msg, &size);
    if (OPAL_SUCCESS != rc || NULL == msg || size < sizeof(*msg) ||
        size != sizeof(*msg) + msg->addrlen) {
        opal_output_verbose(10, mca_btl_ofi_output, MCA_BTL_OFI_LOG "no usable modex data from %s",
                            OPAL_NAME_PRINT(proc->proc_name));
        free(msg);
        return NULL;
    }
    if (0 != strncmp(msg->provider, rail->info->fabric_attr->prov_name, sizeof(msg->provider))) {
        opal_output_verbose(
            1, mca_btl_ofi_output,
            MCA_BTL_OFI_LOG "peer %s uses provider %.64s, this process %s: unreachable",
            OPAL_NAME_PRINT(proc->proc_name), msg->provider, rail->info->fabric_attr->prov_name);
        free(msg);
        return NULL;
    }
    rc = fi_av_insert(rail->av, msg->addr, 1, &addr, 0, NULL);
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
        endpoint->rail = rail;
        endpoint->peer_addr = addr;
        if (rail->config.count_local) {
            mca_btl_ofi_count(MCA_BTL_OFI_CNT_LOCAL_PEERS, 1);
        }
        endpoint->proof_handle = msg->proof_handle;
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_PEERS, 1);
    }
    free(msg);
    return endpoint;
}

mca_btl_base_endpoint_t *mca_btl_ofi_endpoint_get(mca_btl_ofi_rail_t *rail,
                                                  struct opal_proc_t *proc)
{
    uint64_t key = mca_btl_ofi_name_key(&proc->proc_name);
    mca_btl_base_endpoint_t *endpoint = NULL;

    OPAL_THREAD_LOCK(&rail->endpoint_lock);
    if (OPAL_SUCCESS !=
        opal_hash_table_get_value_uint64(&rail->endpoints, key, (void **)&endpoint)) {
        endpoint = mca_btl_ofi_endpoint_create(rail, proc);
        if (NULL != endpoint) {
            opal_hash_table_set_value_uint64(&rail->endpoints, key, endpoint);
        }
    }
    OPAL_THREAD_UNLOCK(&rail->endpoint_lock);
    return endpoint;
}

mca_btl_base_endpoint_t *mca_btl_ofi_endpoint_by_name(mca_btl_ofi_rail_t *rail,
                                                      const opal_process_name_t *name)
{
    mca_btl_base_endpoint_t *endpoint = NULL;
    struct opal_proc_t *proc;

    OPAL_THREAD_LOCK(&rail->endpoint_lock);
    (void)opal_hash_table_get_value_uint64(&rail->endpoints, mca_btl_ofi_name_key(name),
                                           (void **)&endpoint);
    OPAL_THREAD_UNLOCK(&rail->endpoint_lock);
    if (NULL != endpoint) {
        return endpoint;
    }
    proc = opal_proc_for_name(*name);
    return (NULL == proc) ? NULL : mca_btl_ofi_endpoint_get(rail, proc);
}

/* Open MPI's BTL for processes of one node */
#if OPAL_MAJOR_VERSION >= 5
#define MCA_BTL_OFI_NODE_BTL "sm"
#else
#define MCA_BTL_OFI_NODE_BTL "vader"
#endif

/* BTLs that send only to processes of their own node (or to this process alone) */
static bool mca_btl_ofi_sends_on_node_only(const char *name)
{
    static const char *const names[] = {"self", "vader", "sm", "smcuda"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
        if (0 == strcmp(name, names[i])) {
            return true;
        }
    }
    return false;
}

static int mca_btl_ofi_find_libmpi(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (NULL != info->dlpi_name && NULL != strstr(info->dlpi_name, "/libmpi.so")) {
        *(void **)data = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
        return 1;
    }
    return 0;
}

/* The pml Open MPI selected, or NULL before it did or where libmpi is not found (a
 * program's own libmpi is in the global scope; one that Python's mpi4py loaded is not,
 * so it is looked for among the loaded objects). */
static const mca_base_component_t *mca_btl_ofi_selected_pml(void)
{
    static const char symbol[] = "mca_pml_base_selected_component";
    void *pml = dlsym(RTLD_DEFAULT, symbol), *libmpi = NULL;

    if (NULL == pml) {
        (void)dl_iterate_phdr(mca_btl_ofi_find_libmpi, &libmpi);
        if (NULL != libmpi) {
            pml = dlsym(libmpi, symbol);
            dlclose(libmpi); /* NOLOAD took a reference to a library that stays loaded */
        }
    }
    return (const mca_base_component_t *)pml;
}

/*
 * Whether MPI's two-sided traffic (which osc/rdma's window creation needs too: its
 * collectives) has no BTL to a peer (on this node or not). pml ob1 sends through a BTL
 * with MCA_BTL_FLAGS_SEND, which btl-ofi is not; where none reaches a peer, ob1 (4.1 and
 * 5.0) still counts the peer reachable because btl-ofi reaches it, and crashes at its
 * first send there (an empty list of eager BTLs). A BTL list such as "self,ofirma", or
 * "self,vader,ofirma" across nodes, under ob1 is such a job: btl-ofi then leaves those
 * peers unreachable, so that Open MPI says so and ends the job cleanly. The pml is read
 * from libmpi where it is there (a BTL lives below it: looked up, not linked); under
 * another pml (cm, ucx) a BTL list of btl-ofi alone is fine: osc/rdma is its only user.
 */
static bool mca_btl_ofi_no_sender(bool on_node)
{
    static int senders = -1; /* bit 0: a BTL sends on this node, bit 1: to other nodes */
    const mca_base_component_t *pml;
    mca_btl_base_selected_module_t *sm;

    if (senders < 0) {
        pml = mca_btl_ofi_selected_pml();
        if (NULL == pml || 0 != strcmp(pml->mca_component_name, "ob1")) {
            return false; /* not known yet: asked again at the next add_procs */
        }
        senders = 0;
        OPAL_LIST_FOREACH(sm, &mca_btl_base_modules_initialized, mca_btl_base_selected_module_t)
        {
            const char *name = sm->btl_component->btl_version.mca_component_name;

            if (0 != (sm->btl_module->btl_flags & MCA_BTL_FLAGS_SEND) &&
                0 != strcmp(name, "self")) {
                senders |= mca_btl_ofi_sends_on_node_only(name) ? 1 : 3;
            }
        }
    }
    return 0 == (senders & (on_node ? 1 : 2));
}

/* No BTL sends to procs[i] under ob1: said once per process (by rank 0 where it is one
 * of them), at verbose 1 for the others. */
static void mca_btl_ofi_refuse_unsent(const struct opal_proc_t *proc, bool on_node)
{
    static bool said = false;
    const char *list = NULL;
    int index = mca_base_var_find("opal", "btl", NULL, NULL);
    char **btls = NULL; /* the parameter's storage */

    if (said) {
        return;
    }
    said = true;
    if (0 <= index && OPAL_SUCCESS == mca_base_var_get_value(index, &btls, NULL, NULL) &&
        NULL != btls) {
        list = *btls;
    }
    if (0 == OPAL_PROC_MY_NAME.vpid) {
        mca_btl_ofi_report_now("no-send-btl", NULL != list ? list : "(Open MPI's default)",
                               on_node ? "on this node" : "on other nodes",
                               "self," MCA_BTL_OFI_NODE_BTL ",tcp," MCA_BTL_OFI_COMPONENT_NAME,
                               NULL);
    } else {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "no BTL of \"%s\" sends to %s, as pml ob1 needs: "
                                            "left unreachable (rank %u)",
                            NULL != list ? list : "", OPAL_NAME_PRINT(proc->proc_name),
                            (unsigned)OPAL_PROC_MY_NAME.vpid);
    }
}

bool mca_btl_ofi_peer_unsent(const struct opal_proc_t *proc, bool on_node)
{
    if (proc == opal_proc_local_get() || !mca_btl_ofi_no_sender(on_node)) {
        return false;
    }
    mca_btl_ofi_refuse_unsent(proc, on_node);
    return true;
}

void mca_btl_ofi_endpoints_release(mca_btl_ofi_rail_t *rail)
{
    mca_btl_base_endpoint_t *endpoint;
    uint64_t key;

    OPAL_HASH_TABLE_FOREACH(key, uint64, endpoint, &rail->endpoints)
    {
        OBJ_RELEASE(endpoint);
        mca_btl_ofi_uncount(MCA_BTL_OFI_CNT_PEERS, 1);
    }
    opal_hash_table_remove_all(&rail->endpoints);
}
