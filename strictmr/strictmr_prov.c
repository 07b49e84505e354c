/*
 * ofi_strictmr provider entry: fi_prov_ini and getinfo.
 *
 * The name starts with "ofi_", so libfabric treats the provider as a utility
 * provider: it is asked for layered infos, and libfabric appends ";ofi_strictmr"
 * to the core name each returned info carries ("shm;ofi_strictmr").
 */
#include <stdlib.h>
#include <string.h>

#include "strictmr.h"

/* fi_fini, before dlclose: what a program that exits with its fabric open left running or
 * named. Its progress threads stop, and its MR tables and endpoint entries leave /dev/shm
 * (no process could open them after this one ends). */
static void strictmr_cleanup(void)
{
    unsigned named;

    strictmr_engine_cleanup();
    named = strictmr_segments_unlink_all();
    if (named) {
        FI_WARN(&strictmr_prov, FI_LOG_CORE,
                "unloaded with %u MR tables and endpoint entries open: their names are "
                "removed from /dev/shm\n",
                named);
    }
}

struct fi_provider strictmr_prov = {
    .name = STRICTMR_NAME,
    .version = STRICTMR_VERSION,
    .fi_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
    .getinfo = strictmr_getinfo,
    .fabric = strictmr_fabric_open,
    .cleanup = strictmr_cleanup,
};

/* Set while we ask libfabric for cores, so that we never offer ourselves on top of ourselves. */
static __thread bool in_getinfo;

char *strictmr_core_prov_name(const char *prov_name)
{
    const char *semi;
    size_t keep;

    if (!prov_name) {
        return NULL;
    }
    semi = strrchr(prov_name, ';');
    if (!strcasecmp(semi ? semi + 1 : prov_name, STRICTMR_NAME)) {
        keep = semi ? (size_t)(semi - prov_name) : 0;
    } else {
        keep = strlen(prov_name);
    }
    return keep ? strndup(prov_name, keep) : NULL;
}

/* The hints we give libfabric for the cores under us. */
static struct fi_info *core_hints(const struct fi_info *hints)
{
    struct fi_info *core = hints ? fi_dupinfo(hints) : fi_allocinfo();

    if (!core) {
        return NULL;
    }
    free(core->fabric_attr->prov_name);
    core->fabric_attr->prov_name =
        hints && hints->fabric_attr ? strictmr_core_prov_name(hints->fabric_attr->prov_name) : NULL;
    core->caps &= STRICTMR_CAPS;
    if (!(core->caps & STRICTMR_DEFAULT_CAPS)) {
        core->caps |= STRICTMR_DEFAULT_CAPS;
    }
    core->caps |= FI_RMA | FI_ATOMIC;
    core->ep_attr->type = FI_EP_RDM;
    core->domain_attr->mr_mode = STRICTMR_CORE_MR_MODES;
    core->domain_attr->mr_key_size = 0;
    strictmr_engine_core_hints(core);
    if (!hints) {
        core->mode = ~0ULL;
    }
    return core;
}

/* Would a caller with these hints accept what we demand? */
static bool hints_accept(uint32_t version, const struct fi_info *hints)
{
    uint64_t allowed;

    if (!strictmr_config.valid || version < FI_VERSION(1, 5)) {
        return false;
    }
    if (!hints) {
        return true;
    }
    if (hints->caps & STRICTMR_REFUSED_CAPS) {
        return false;
    }
    if (!strictmr_engine_hints_ok(hints)) {
        return false;
    }
    if (hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
        hints->ep_attr->type != FI_EP_RDM) {
        return false;
    }
    if (!strictmr_nic_hints_accept(hints)) {
        return false;
    }
    allowed = hints->domain_attr ? hints->domain_attr->mr_mode : 0;
    if (hints->domain_attr && (allowed & strictmr_config.mr_mode) != strictmr_config.mr_mode) {
        FI_INFO(&strictmr_prov, FI_LOG_CORE, "hints' mr_mode 0x%llx lacks demanded 0x%llx\n",
                (unsigned long long)allowed, (unsigned long long)strictmr_config.mr_mode);
        return false;
    }
    return true;
}

static bool core_usable(const struct fi_info *core)
{
    return core->ep_attr->type == FI_EP_RDM && (core->caps & FI_RMA) && (core->caps & FI_ATOMIC) &&
           !(core->domain_attr->mr_mode & ~STRICTMR_CORE_MR_MODES) &&
           !strstr(core->fabric_attr->prov_name, STRICTMR_NAME);
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Our info for one core info: the core's, with our MR mode, key size and limits. */
static struct fi_info *layered_info(const struct fi_info *core)
{
    struct fi_info *info = fi_dupinfo(core);

    if (!info) {
        return NULL;
    }
    info->caps &= STRICTMR_CAPS;
    info->tx_attr->caps &= STRICTMR_CAPS;
    info->rx_attr->caps &= STRICTMR_CAPS;
    info->domain_attr->mr_mode = strictmr_config.mr_mode;
    info->domain_attr->mr_key_size = strictmr_config.key_size;
    info->domain_attr->mr_iov_limit = 1;
    info->domain_attr->mr_cnt = min_size(info->domain_attr->mr_cnt, STRICTMR_TABLE_SLOTS / 2);
    info->domain_attr->cntr_cnt = 0;
    info->domain_attr->av_type = FI_AV_TABLE;
    info->tx_attr->iov_limit = min_size(info->tx_attr->iov_limit, STRICTMR_IOV_LIMIT);
    info->tx_attr->rma_iov_limit = min_size(info->tx_attr->rma_iov_limit, STRICTMR_IOV_LIMIT);
    info->rx_attr->iov_limit = min_size(info->rx_attr->iov_limit, STRICTMR_IOV_LIMIT);
    strictmr_nic_info(info);
    strictmr_engine_shape_info(info);
    if (strictmr_device_info(info)) {
        fi_freeinfo(info);
        return NULL;
    }
    return info;
}

/* ---------------------------------------------------------------- NIC behaviours */
/* Read capabilities give way to write ones; the write bits are named so that FI_RMA alone no
 * longer implies reads. */
static uint64_t write_only_caps(uint64_t caps, uint64_t write_bits)
{
    if (!(caps & (FI_RMA | FI_ATOMIC))) {
        return caps;
    }
    return (caps & ~(FI_READ | FI_REMOTE_READ)) | write_bits;
}

void strictmr_nic_info(struct fi_info *info)
{
    const struct strictmr_behaviour *nic = &strictmr_config.nic;

    if (nic->no_delivery_complete) {
        info->tx_attr->op_flags &= ~STRICTMR_DC_FLAGS;
    }
    if (nic->inject_size >= 0) {
        info->tx_attr->inject_size = min_size(info->tx_attr->inject_size, (size_t)nic->inject_size);
    }
    if (!strictmr_nic_has_atomics()) {
        info->caps &= ~FI_ATOMIC;
        info->tx_attr->caps &= ~FI_ATOMIC;
        info->rx_attr->caps &= ~FI_ATOMIC;
    }
    if (nic->write_only) {
        info->caps = write_only_caps(info->caps, FI_WRITE | FI_REMOTE_WRITE);
        info->tx_attr->caps = write_only_caps(info->tx_attr->caps, FI_WRITE);
        info->rx_attr->caps = write_only_caps(info->rx_attr->caps, FI_REMOTE_WRITE);
    }
#if !STRICTMR_HAVE_OPT_MAX_RMA_SIZE
    /* no RMA-only limit before libfabric 1.20: the message limit is the only place to say it */
    if (nic->max_rma_size) {
        info->ep_attr->max_msg_size = min_size(info->ep_attr->max_msg_size, nic->max_rma_size);
    }
#endif
}

static bool hint_refused(bool refused, const char *why)
{
    if (refused) {
        FI_INFO(&strictmr_prov, FI_LOG_CORE, "hints ask %s: no info\n", why);
    }
    return refused;
}

bool strictmr_nic_hints_accept(const struct fi_info *hints)
{
    const struct strictmr_behaviour *nic = &strictmr_config.nic;
    uint64_t caps = hints->caps | (hints->tx_attr ? hints->tx_attr->caps : 0) |
                    (hints->rx_attr ? hints->rx_attr->caps : 0);
    uint64_t op_flags = hints->tx_attr ? hints->tx_attr->op_flags : 0;
    size_t inject = hints->tx_attr ? hints->tx_attr->inject_size : 0;
    bool refused;

    refused = hint_refused(nic->no_delivery_complete && (op_flags & STRICTMR_DC_FLAGS),
                           "FI_DELIVERY_COMPLETE of a transmit-complete-only NIC");
    refused = refused || hint_refused(!strictmr_nic_has_atomics() && (caps & FI_ATOMIC),
                                      "FI_ATOMIC of a NIC without the atomics it offers");
    refused = refused || hint_refused(nic->write_only && (caps & (FI_READ | FI_REMOTE_READ)),
                                      "FI_READ / FI_REMOTE_READ of a write-only NIC");
    refused = refused || hint_refused(nic->inject_size >= 0 && inject > (size_t)nic->inject_size,
                                      "a larger inject_size than FI_OFI_STRICTMR_INJECT_SIZE");
#if !STRICTMR_HAVE_OPT_MAX_RMA_SIZE
    refused = refused || hint_refused(nic->max_rma_size && hints->ep_attr &&
                                          hints->ep_attr->max_msg_size > nic->max_rma_size,
                                      "a larger max_msg_size than FI_OFI_STRICTMR_MAX_RMA_SIZE");
#endif
    return !refused;
}

static int layer_all(const struct fi_info *cores, struct fi_info **info)
{
    struct fi_info *head = NULL, **tail = &head;

    for (const struct fi_info *core = cores; core; core = core->next) {
        if (!core_usable(core)) {
            continue;
        }
        *tail = layered_info(core);
        if (!*tail) {
            fi_freeinfo(head);
            return -FI_ENOMEM;
        }
        tail = &(*tail)->next;
    }
    *info = head;
    return head ? 0 : -FI_ENODATA;
}

int strictmr_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                     const struct fi_info *hints, struct fi_info **info)
{
    struct fi_info *hints_core, *cores = NULL;
    int ret;

    if (in_getinfo || !hints_accept(version, hints)) {
        return -FI_ENODATA;
    }
    hints_core = core_hints(hints);
    if (!hints_core) {
        return -FI_ENOMEM;
    }
    in_getinfo = true;
    ret = fi_getinfo(version, node, service, flags, hints_core, &cores);
    in_getinfo = false;
    fi_freeinfo(hints_core);
    if (ret) {
        return ret;
    }
    ret = layer_all(cores, info);
    fi_freeinfo(cores);
    return ret;
}

/* Asks libfabric again for the core info behind one of our infos. */
static int strictmr_core_info(const struct fi_info *info, struct fi_info **core)
{
    struct fi_info *hints = core_hints(info), *found = NULL;
    int ret;

    if (!hints) {
        return -FI_ENOMEM;
    }
    hints->mode = info->mode;
    hints->domain_attr->mr_key_size = 0;
    in_getinfo = true;
    ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints, &found);
    in_getinfo = false;
    fi_freeinfo(hints);
    if (ret) {
        return ret;
    }
    fi_freeinfo(found->next);
    found->next = NULL;
    *core = found;
    return 0;
}

/* The core info behind one of our infos for fi_domain: the core is asked nothing the engine
 * itself adds (strictmr_engine_core_hints). */
int strictmr_engine_core_info(const struct fi_info *info, struct fi_info **core)
{
    struct fi_info *asked;
    int ret;

    if (!strictmr_engine_on() || !info) {
        return strictmr_core_info(info, core);
    }
    asked = fi_dupinfo(info);
    if (!asked) {
        return -FI_ENOMEM;
    }
    strictmr_engine_core_hints(asked);
    if (strictmr_config.nic.progress_us >= 0) {
        /* our thread calls the core beside the caller's threads, whatever the caller
         * promised about its own: the AV and MR calls do not take the engine lock */
        asked->domain_attr->threading = FI_THREAD_SAFE;
    }
    ret = strictmr_core_info(asked, core);
    fi_freeinfo(asked);
    return ret;
}

__attribute__((visibility("default"))) struct fi_provider *fi_prov_ini(void)
{
    strictmr_params_init();
    return &strictmr_prov;
}
