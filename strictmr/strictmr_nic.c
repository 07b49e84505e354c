/*
 * What the emulated NIC lacks is refused at the post, synchronously, as a
 * provider refuses an operation it cannot start: nothing reaches the core and
 * no completion follows (the infos and hints say the same: strictmr_prov.c).
 * Also the endpoint's limits that fi_getopt answers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "strictmr.h"

int strictmr_nic_refuse(int err, const char *fmt, ...)
{
    char detail[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    strictmr_event(STRICTMR_EV_OP_REFUSED, 1);
    FI_WARN(&strictmr_prov, FI_LOG_EP_DATA, "refused: %s -> %s\n", detail, fi_strerror(-err));
    return err;
}

static const char *const op_name[] = {
    [STRICTMR_OP_WRITE] = "RMA write",        [STRICTMR_OP_READ] = "RMA read",
    [STRICTMR_OP_ATOMIC] = "atomic",          [STRICTMR_OP_FETCH] = "fetching atomic",
    [STRICTMR_OP_COMPARE] = "compare atomic", [STRICTMR_OP_SEND] = "send",
    [STRICTMR_OP_RECV] = "receive",
};

int strictmr_nic_post(enum strictmr_op op, size_t len, uint64_t flags)
{
    const struct strictmr_behaviour *nic = &strictmr_config.nic;
    bool rma = op == STRICTMR_OP_WRITE || op == STRICTMR_OP_READ;

    if (nic->no_delivery_complete && (flags & STRICTMR_DC_FLAGS)) {
        return strictmr_nic_refuse(-FI_EOPNOTSUPP,
                                   "%s with FI_DELIVERY_COMPLETE / FI_COMMIT_COMPLETE: the NIC "
                                   "completes at transmit (FI_OFI_STRICTMR_DELIVERY_COMPLETE=0)",
                                   op_name[op]);
    }
    if (nic->inject_size >= 0 && (flags & FI_INJECT) && len > (size_t)nic->inject_size) {
        return strictmr_nic_refuse(-FI_EINVAL,
                                   "%s inject of %zu bytes above inject_size %ld "
                                   "(FI_OFI_STRICTMR_INJECT_SIZE)",
                                   op_name[op], len, nic->inject_size);
    }
    if (nic->write_only && op == STRICTMR_OP_READ) {
        return strictmr_nic_refuse(-FI_EOPNOTSUPP,
                                   "RMA read on a write-only NIC (FI_OFI_STRICTMR_WRITE_ONLY=1)");
    }
    if (rma && nic->max_rma_size && len > nic->max_rma_size) {
        return strictmr_nic_refuse(-FI_EINVAL,
                                   "%s of %zu bytes above %zu (FI_OFI_STRICTMR_MAX_RMA_SIZE)",
                                   op_name[op], len, nic->max_rma_size);
    }
    return 0;
}

/* Transmit op_flags asking a completion level the NIC lacks. */
static bool nic_lacks_level(uint64_t op_flags)
{
    return strictmr_config.nic.no_delivery_complete && (op_flags & STRICTMR_DC_FLAGS);
}

int strictmr_nic_ep_check(const struct fi_info *info)
{
    if (info && info->tx_attr && nic_lacks_level(info->tx_attr->op_flags)) {
        return strictmr_nic_refuse(-FI_EOPNOTSUPP,
                                   "an endpoint whose default op_flags ask FI_DELIVERY_COMPLETE "
                                   "(FI_OFI_STRICTMR_DELIVERY_COMPLETE=0)");
    }
    return 0;
}

int strictmr_nic_set_op_flags(const uint64_t *flags)
{
    if (flags && (*flags & FI_TRANSMIT) && nic_lacks_level(*flags)) {
        return strictmr_nic_refuse(-FI_EOPNOTSUPP,
                                   "fi_control(FI_SETOPSFLAG) making FI_DELIVERY_COMPLETE / "
                                   "FI_COMMIT_COMPLETE a transmit default, flags unchanged "
                                   "(FI_OFI_STRICTMR_DELIVERY_COMPLETE=0)");
    }
    return 0;
}

#if STRICTMR_HAVE_OPT_MAX_RMA_SIZE
static size_t size_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* The limit an FI_OPT_MAX_* / FI_OPT_INJECT_* option names, if it is one of ours. */
static bool nic_limit(const struct fi_info *core, int optname, size_t *value)
{
    const struct strictmr_behaviour *nic = &strictmr_config.nic;
    size_t inject = core->tx_attr->inject_size;

    if (nic->inject_size >= 0) {
        inject = size_min(inject, (size_t)nic->inject_size);
    }
    switch (optname) {
    case FI_OPT_MAX_MSG_SIZE:
        *value = core->ep_attr->max_msg_size;
        return true;
    case FI_OPT_MAX_RMA_SIZE:
        *value = nic->max_rma_size ? size_min(core->ep_attr->max_msg_size, nic->max_rma_size)
                                   : core->ep_attr->max_msg_size;
        return true;
    case FI_OPT_INJECT_MSG_SIZE:
    case FI_OPT_INJECT_RMA_SIZE:
    case FI_OPT_INJECT_ATOMIC_SIZE:
        *value = inject;
        return true;
    default:
        return false;
    }
}
#endif

int strictmr_nic_getopt(struct strictmr_ep *ep, int level, int optname, void *optval,
                        size_t *optlen)
{
#if STRICTMR_HAVE_OPT_MAX_RMA_SIZE
    size_t value;

    if (level != FI_OPT_ENDPOINT || !nic_limit(ep->domain->core_info, optname, &value)) {
        return -FI_ENOPROTOOPT;
    }
    if (!optval || !optlen || *optlen < sizeof(value)) {
        if (optlen) {
            *optlen = sizeof(value);
        }
        return -FI_ETOOSMALL;
    }
    memcpy(optval, &value, sizeof(value));
    *optlen = sizeof(value);
    return 0;
#else
    return -FI_ENOPROTOOPT;
#endif
}
