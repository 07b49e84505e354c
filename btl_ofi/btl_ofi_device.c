/*
 * btl-ofi device: fabric -> domain -> address vector -> completion queue ->
 * endpoint, opened in that order and closed in the reverse one.
 */

#include "btl_ofi_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "btl_ofi_coalesce.h"
#include "btl_ofi_fault.h"
#include "btl_ofi_locate.h"
#include "btl_ofi_mr.h"
#include "btl_ofi_msg.h"
#include "btl_ofi_ops.h"
#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"
#include "btl_ofi_rcache.h"
#include "btl_ofi_report.h"
#include "btl_ofi_wake.h"

static int mca_btl_ofi_device_error(const mca_btl_ofi_rail_t *rail, const char *call, int rc)
{
    mca_btl_ofi_decline_fi_call(rail->info->fabric_attr->prov_name, call, rc);
    return OPAL_ERROR;
}

/* A provider that cannot claim FI_REMOTE_COMM is treated as reaching this node only. */
static bool mca_btl_ofi_local_only(const struct fi_info *info)
{
    struct fi_info *hints = fi_dupinfo(info), *found = NULL;
    bool local_only = true;

    if (NULL == hints) {
        return true;
    }
    hints->caps |= FI_REMOTE_COMM;
    /* asked at the base API: FI_HMEM is not part of the question */
    hints->caps &= ~FI_HMEM;
    hints->domain_attr->mr_mode &= ~FI_MR_HMEM;
    free(hints->src_addr);
    hints->src_addr = NULL;
    hints->src_addrlen = 0;
    if (0 == fi_getinfo(MCA_BTL_OFI_FI_VERSION, NULL, NULL, 0, hints, &found)) {
        local_only = false;
        fi_freeinfo(found);
    }
    fi_freeinfo(hints);
    return local_only;
}

/*
 * The largest RMA the endpoint takes in one operation. libfabric 2.x lets a
 * provider state it apart from max_msg_size (fi_endpoint(3), FI_OPT_MAX_RMA_SIZE,
 * below it for some NICs); -FI_ENOPROTOOPT means max_msg_size is the limit.
 */
static size_t mca_btl_ofi_max_rma_size(const mca_btl_ofi_rail_t *rail)
{
    size_t limit = rail->info->ep_attr->max_msg_size;
#if defined(HAVE_DECL_FI_OPT_MAX_RMA_SIZE) && HAVE_DECL_FI_OPT_MAX_RMA_SIZE
    size_t rma = 0, len = sizeof(rma);

    if (0 == fi_getopt(&rail->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MAX_RMA_SIZE, &rma, &len) &&
        sizeof(rma) == len && 0 != rma && rma < limit) {
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "the endpoint takes RMA of up to %zu bytes "
                                            "(FI_OPT_MAX_RMA_SIZE; max_msg_size %zu)",
                            rma, limit);
        limit = rma;
    }
#endif
    return limit;
}

static void mca_btl_ofi_negotiated(mca_btl_ofi_rail_t *rail)
{
    const struct fi_info *info = rail->info;
    size_t key_size = info->domain_attr->mr_key_size;
    size_t max_rma;

    rail->virt_addr = !!(info->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
    rail->prov_key = !!(info->domain_attr->mr_mode & FI_MR_PROV_KEY);
    rail->mr_local = !!(info->domain_attr->mr_mode & FI_MR_LOCAL);
    rail->mr_endpoint = !!(info->domain_attr->mr_mode & FI_MR_ENDPOINT);
    if (rail->mr_local) {
        /* osc/rdma then registers (or copies into a registered fragment) every local buffer */
        rail->caps.local_reg_threshold = 0;
    }
    rail->delivery_complete = !!(info->tx_attr->op_flags & FI_DELIVERY_COMPLETE);
    rail->prove_remote =
        !rail->delivery_complete && MCA_BTL_OFI_COMPLETION_LOCAL != mca_btl_ofi_params.completion;
    if (!rail->delivery_complete && !rail->prove_remote) {
        /* the debug completion mode "local": callbacks prove nothing remote */
        rail->caps.flags &= ~MCA_BTL_OFI_FLAG_REMOTE_COMPLETION;
    }
    rail->local_only = mca_btl_ofi_local_only(info);
    /* BTL-chosen keys must fit the provider's key size; key 0 is never handed out. */
    rail->key_mask =
        (0 == key_size || key_size >= 8) ? UINT64_MAX : ((UINT64_C(1) << (8 * key_size)) - 1);
    atomic_store(&rail->next_key, 1);

    /* What the provider can move in one operation bounds what we advertise. */
    max_rma = mca_btl_ofi_max_rma_size(rail);
    if (rail->caps.put_limit > max_rma) {
        rail->caps.put_limit = max_rma;
    }
    if (rail->caps.get_limit > max_rma) {
        rail->caps.get_limit = max_rma;
    }
}

/*
 * libfabric's shm (1.17 and 2.x) names an endpoint's shared-memory region after the
 * process id ("fi_shm://<pid>", the file /dev/shm/<pid>:<uid>:<n>) unless the endpoint is
 * given a name. A region left under that name (a process killed with SIGKILL, or a job that
 * exited with its fabric open, leaves its file) refuses the next process the kernel hands
 * that pid: fi_enable fails with EBUSY ("shm file in use", smr_retry_map: the pid the
 * region names is alive, being this very process), and btl-ofi would be lost on that rank.
 * So btl-ofi names its shm endpoints itself, with the pid (to tell whose a left-over file
 * was) and the time (which no later process with that pid shares). Other providers, and a
 * name a user chose, are left alone (NOTES.txt section 8).
 */
#define MCA_BTL_OFI_SHM_PREFIX "fi_shm://"

static void mca_btl_ofi_name_shm(mca_btl_ofi_rail_t *rail)
{
    struct fi_info *info = rail->info;
    char name[64], own[32];
    struct timespec now;
    char *copy;

    snprintf(own, sizeof(own), MCA_BTL_OFI_SHM_PREFIX "%d", (int)getpid());
    /* exactly shm's default name, its terminating NUL included */
    if (FI_ADDR_STR != info->addr_format || NULL == info->src_addr ||
        strlen(own) + 1 != info->src_addrlen || 0 != memcmp(info->src_addr, own, strlen(own)) ||
        0 != clock_gettime(CLOCK_REALTIME, &now)) {
        return;
    }
    snprintf(name, sizeof(name), MCA_BTL_OFI_SHM_PREFIX "btl-ofi.%d.%llx", (int)getpid(),
             (unsigned long long)now.tv_sec * 1000000000ULL + (unsigned long long)now.tv_nsec);
    if (NULL == (copy = strdup(name))) {
        return;
    }
    free(info->src_addr);
    info->src_addr = copy;
    info->src_addrlen = strlen(copy) + 1;
    opal_output_verbose(10, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "naming the shm endpoint %s (a region named after the "
                                        "pid alone may be a dead process's)",
                        copy);
}

/* rail's CQ, opened with cq_attr (its size set here). Room for the completions of four
 * transmit queues and a receive queue (fi_cq(3): a CQ that overruns loses completions): new
 * operations may fill two transmit queues while completions wait to be read, and what they
 * post on their own two more (mca_btl_ofi_op_room). A NIC whose CQs cannot be that large:
 * two and one transmit queues, then its own size (0, which bounds nothing here).
 * @return 0, or fi_cq_open's error at the last size tried */
static int mca_btl_ofi_cq_open(mca_btl_ofi_rail_t *rail, struct fi_cq_attr *cq_attr)
{
    const size_t tx = rail->info->tx_attr->size, rx = rail->info->rx_attr->size;
    int rc;

    cq_attr->size = tx && rx ? 4 * tx + rx : 0;
    for (size_t queues = 4;; queues /= 2) {
        rc = fi_cq_open(rail->domain, cq_attr, &rail->cq, NULL);
        if (0 == rc) {
            return 0;
        }
        rail->cq = NULL;
        if (0 == cq_attr->size) {
            return rc;
        }
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "a CQ of %zu entries was refused", cq_attr->size);
        cq_attr->size = queues > 1 ? queues / 2 * tx + rx : 0;
    }
}

static int mca_btl_ofi_open_fids(mca_btl_ofi_rail_t *rail)
{
    struct fi_av_attr av_attr = {
        .type = (FI_AV_UNSPEC == rail->info->domain_attr->av_type)
                    ? FI_AV_TABLE
                    : rail->info->domain_attr->av_type,
    };
    struct fi_cq_attr cq_attr = {
        .format = FI_CQ_FORMAT_CONTEXT,
        /* a descriptor to poll through io_uring (btl_ofi_wake.h), where wanted and offered */
        .wait_obj = mca_btl_ofi_wake_wanted(rail) ? FI_WAIT_FD : FI_WAIT_NONE,
    };
    int rc;

    if (0 != (rc = fi_fabric(rail->info->fabric_attr, &rail->fabric, NULL))) {
        return mca_btl_ofi_device_error(rail, "fi_fabric", rc);
    }
    if (0 != (rc = fi_domain(rail->fabric, rail->info, &rail->domain, NULL))) {
        return mca_btl_ofi_device_error(rail, "fi_domain", rc);
    }
    if (0 != (rc = fi_av_open(rail->domain, &av_attr, &rail->av, NULL))) {
        return mca_btl_ofi_device_error(rail, "fi_av_open", rc);
    }
    rc = mca_btl_ofi_cq_open(rail, &cq_attr);
    if (0 != rc && FI_WAIT_FD == cq_attr.wait_obj) {
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "%s: no CQ with a wait descriptor (FI_WAIT_FD): "
                                            "read at the pace alone",
                            rail->info->domain_attr->name);
        cq_attr.wait_obj = FI_WAIT_NONE;
        rc = mca_btl_ofi_cq_open(rail, &cq_attr);
    }
    if (0 != rc) {
        return mca_btl_ofi_device_error(rail, "fi_cq_open", rc);
    }
    rail->cq_size = cq_attr.size;
    if (FI_WAIT_FD == cq_attr.wait_obj) {
        mca_btl_ofi_wake_attach(rail);
    }
    mca_btl_ofi_name_shm(rail);
    if (0 != (rc = fi_endpoint(rail->domain, rail->info, &rail->ep, NULL))) {
        return mca_btl_ofi_device_error(rail, "fi_endpoint", rc);
    }
    if (0 != (rc = fi_ep_bind(rail->ep, &rail->av->fid, 0))) {
        return mca_btl_ofi_device_error(rail, "fi_ep_bind(av)", rc);
    }
    if (0 != (rc = fi_ep_bind(rail->ep, &rail->cq->fid, FI_TRANSMIT | FI_RECV))) {
        return mca_btl_ofi_device_error(rail, "fi_ep_bind(cq)", rc);
    }
    if (0 != (rc = fi_enable(rail->ep))) {
        return mca_btl_ofi_device_error(rail, "fi_enable", rc);
    }
    return OPAL_SUCCESS;
}

int mca_btl_ofi_device_open(mca_btl_ofi_rail_t *rail, struct fi_info *info)
{
    int rc;

    /* the rail comes zeroed (mca_btl_ofi_rail_open): no fid open yet */
    rail->info = info;
    rc = mca_btl_ofi_open_fids(rail);
    if (OPAL_SUCCESS == rc) {
        mca_btl_ofi_negotiated(rail);
    }
    return rc;
}

static void mca_btl_ofi_close_fid(struct fid **fid, const char *what)
{
    int rc;

    if (NULL == *fid) {
        return;
    }
    rc = fi_close(*fid);
    if (0 != rc) {
        opal_output_verbose(1, mca_btl_ofi_output, MCA_BTL_OFI_LOG "closing the %s failed: %s",
                            what, fi_strerror(-rc));
    }
    *fid = NULL;
}

void mca_btl_ofi_device_close_ep(mca_btl_ofi_rail_t *rail)
{
    mca_btl_ofi_close_fid((struct fid **)&rail->ep, "endpoint");
}

void mca_btl_ofi_device_close(mca_btl_ofi_rail_t *rail)
{
    mca_btl_ofi_wake_detach(rail);
    if (rail->quarantined) {
        /* a failed NIC's provider, never called again (btl_ofi_fault.h): closing its
         * endpoint could crash in the provider, and the rest is bound to it */
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "%s: the failed NIC's endpoint and domain are "
                                            "left open",
                            rail->info->domain_attr->name);
        rail->ep = NULL;
        rail->cq = NULL;
        rail->av = NULL;
        rail->domain = NULL;
        rail->fabric = NULL;
        fi_freeinfo(rail->info);
        rail->info = NULL;
        return;
    }
    mca_btl_ofi_close_fid((struct fid **)&rail->ep, "endpoint");
    mca_btl_ofi_close_fid((struct fid **)&rail->cq, "completion queue");
    mca_btl_ofi_close_fid((struct fid **)&rail->av, "address vector");
    mca_btl_ofi_close_fid((struct fid **)&rail->domain, "domain");
    mca_btl_ofi_close_fid((struct fid **)&rail->fabric, "fabric");
    fi_freeinfo(rail->info);
    rail->info = NULL;
}
