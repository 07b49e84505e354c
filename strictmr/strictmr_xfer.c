/*
 * Checks of one transfer before it reaches the core: the local descs
 * (FI_MR_LOCAL), then, for RMA and atomics, every remote segment against the
 * target's MR table, which also yields the core's key and address for it.
 * A send or receive has only the first part. A violation becomes an error
 * completion on the endpoint's transmit CQ (a receive's on its receive CQ),
 * as a NIC would report it.
 */
#include "strictmr.h"

static const struct {
    uint64_t remote_access; /* what the target MR must allow; 0: no target MR (messages) */
    uint64_t cq_flags;      /* the error completion's flags */
} op_desc[] = {
    [STRICTMR_OP_WRITE] = {.remote_access = FI_REMOTE_WRITE, .cq_flags = FI_RMA | FI_WRITE},
    [STRICTMR_OP_READ] = {.remote_access = FI_REMOTE_READ, .cq_flags = FI_RMA | FI_READ},
    [STRICTMR_OP_ATOMIC] = {.remote_access = FI_REMOTE_WRITE, .cq_flags = FI_ATOMIC | FI_WRITE},
    [STRICTMR_OP_FETCH] = {.remote_access = FI_REMOTE_READ | FI_REMOTE_WRITE,
                           .cq_flags = FI_ATOMIC | FI_READ},
    [STRICTMR_OP_COMPARE] = {.remote_access = FI_REMOTE_READ | FI_REMOTE_WRITE,
                             .cq_flags = FI_ATOMIC | FI_READ},
    [STRICTMR_OP_SEND] = {.cq_flags = FI_MSG | FI_SEND},
    [STRICTMR_OP_RECV] = {.cq_flags = FI_MSG | FI_RECV},
};

static const char *const local_role[] = {"data", "result", "compare"};

static bool covers(uint64_t base, uint64_t len, uint64_t addr, uint64_t n)
{
    return addr >= base && n <= len && addr - base <= len - n;
}

/* FI_MR_ENDPOINT: the MR must be bound to the endpoint in use, and enabled. */
static int endpoint_rules(uint32_t bound, bool enabled, uint32_t ep_id, const char *side)
{
    int err;

    if (!strictmr_mode(FI_MR_ENDPOINT)) {
        return 0;
    }
    err = strictmr_rule(STRICTMR_RULE_MR_UNBOUND, bound != ep_id,
                        "%s MR bound to endpoint %u, used with endpoint %u", side, bound, ep_id);
    if (!err) {
        err = strictmr_rule(STRICTMR_RULE_MR_DISABLED, !enabled, "%s MR not enabled", side);
    }
    return err;
}

int strictmr_desc_check(struct strictmr_ep *ep, const void *buf, size_t len, void *desc)
{
    struct strictmr_mr *mr;
    int err;

    err =
        strictmr_rule(STRICTMR_RULE_DESC_MISSING, !desc, "NULL desc for %zu bytes at %p", len, buf);
    if (err) {
        return err;
    }
    mr = strictmr_desc_mr(ep->domain, desc);
    err = strictmr_rule(STRICTMR_RULE_DESC_INVALID, !mr, "desc %p is no live MR of this domain",
                        desc);
    if (err) {
        return err;
    }
    err = strictmr_rule(STRICTMR_RULE_DESC_RANGE, !covers(mr->base, mr->len, (uintptr_t)buf, len),
                        "buffer [%p, +%zu) outside MR [0x%llx, +%llu)", buf, len,
                        (unsigned long long)mr->base, (unsigned long long)mr->len);
    return err ? err : endpoint_rules(mr->ep_id, mr->enabled, ep->id, "local");
}

static int local_set_check(struct strictmr_ep *ep, const struct strictmr_local_set *set)
{
    int err = 0;

    for (size_t i = 0; i < set->count && !err; i++) {
        if (set->iov[i].iov_len) {
            err = strictmr_desc_check(ep, set->iov[i].iov_base, set->iov[i].iov_len,
                                      set->desc ? set->desc[i] : NULL);
        }
    }
    return err;
}

static int local_checks(struct strictmr_ep *ep, const struct strictmr_xfer *x)
{
    int err = 0;

    if (!strictmr_mode(FI_MR_LOCAL)) {
        return 0;
    }
    pthread_mutex_lock(&ep->domain->lock);
    for (size_t i = 0; i < 3 && !err; i++) {
        err = local_set_check(ep, &x->local[i]);
        if (err) {
            FI_WARN(&strictmr_prov, FI_LOG_EP_DATA, "(the %s buffer)\n", local_role[i]);
        }
    }
    pthread_mutex_unlock(&ep->domain->lock);
    return err;
}

/* The key as the target's table stores it. */
static int remote_key(struct strictmr_ep *ep, uint64_t key, size_t key_size,
                      struct strictmr_key *out)
{
    const struct strictmr_raw_map *map;

    if (!strictmr_mode(FI_MR_RAW)) {
        strictmr_key_from_u64(out, key, key_size);
        return 0;
    }
    pthread_mutex_lock(&ep->domain->lock);
    map = strictmr_raw_map_find(ep->domain, key);
    if (map) {
        *out = map->raw;
    }
    pthread_mutex_unlock(&ep->domain->lock);
    return strictmr_rule(STRICTMR_RULE_RAW_UNMAPPED, !map, "key 0x%llx was not mapped",
                         (unsigned long long)key);
}

static int slot_rules(const struct strictmr_slot *s, bool found, const struct strictmr_peer *peer,
                      uint64_t key)
{
    const struct strictmr_table *t = peer->table.addr;
    int err;

    err = strictmr_rule(STRICTMR_RULE_KEY_UNKNOWN, !found, "key 0x%llx unknown at the target",
                        (unsigned long long)key);
    if (!err) {
        err = strictmr_rule(STRICTMR_RULE_KEY_CLOSED,
                            s->state != STRICTMR_SLOT_LIVE || !atomic_load(&t->alive),
                            "key 0x%llx: MR closed", (unsigned long long)key);
    }
    return err ? err : endpoint_rules(s->ep_id, s->enabled, peer->ep_id, "target");
}

static int remote_check(struct strictmr_ep *ep, const struct strictmr_peer *peer,
                        const struct fi_rma_iov *rma, uint64_t access, struct fi_rma_iov *core)
{
    const struct strictmr_table *t = peer->table.addr;
    bool virt = strictmr_mode(FI_MR_VIRT_ADDR);
    struct strictmr_slot s = {0};
    struct strictmr_key key;
    uint64_t offset;
    int idx, err;

    err = remote_key(ep, rma->key, t->key_size, &key);
    if (err) {
        return err;
    }
    idx = strictmr_table_probe(t, &key, false);
    if (idx >= 0) {
        strictmr_slot_snapshot(&t->slot[idx], &s);
    }
    err = slot_rules(&s, idx >= 0 && strictmr_key_equal(&s, &key), peer, rma->key);
    if (!err) {
        err = strictmr_rule(STRICTMR_RULE_REMOTE_ACCESS, (s.access & access) != access,
                            "MR access 0x%llx lacks 0x%llx", (unsigned long long)s.access,
                            (unsigned long long)access);
    }
    if (!err) {
        err = strictmr_rule(STRICTMR_RULE_RANGE,
                            !covers(virt ? s.base : 0, s.len, rma->addr, rma->len),
                            "%s 0x%llx + %zu outside MR [0x%llx, +%llu)",
                            virt ? "address" : "offset", (unsigned long long)rma->addr, rma->len,
                            (unsigned long long)(virt ? s.base : 0), (unsigned long long)s.len);
    }
    if (err) {
        return err;
    }
    offset = virt ? rma->addr - s.base : rma->addr;
    core->addr = ep->domain->core_virt ? s.base + offset : offset;
    core->len = rma->len;
    core->key = s.core_key;
    return 0;
}

static int remote_checks(struct strictmr_ep *ep, const struct strictmr_xfer *x,
                         struct fi_rma_iov *core_rma)
{
    const struct strictmr_peer *peer = strictmr_av_peer(ep->av, x->peer);
    int err;

    err = strictmr_rule(STRICTMR_RULE_TARGET_UNKNOWN, !peer,
                        "fi_addr %llu has no ofi_strictmr endpoint on this host",
                        (unsigned long long)x->peer);
    for (size_t i = 0; i < x->rma_count && !err; i++) {
        err = remote_check(ep, peer, &x->rma[i], op_desc[x->op].remote_access, &core_rma[i]);
    }
    return err;
}

int strictmr_xfer_check(struct strictmr_ep *ep, const struct strictmr_xfer *x,
                        struct fi_rma_iov *core_rma)
{
    struct strictmr_cq *cq = x->op == STRICTMR_OP_RECV ? ep->rx_cq : ep->tx_cq;
    int err = local_checks(ep, x);

    if (!err && op_desc[x->op].remote_access) {
        err = remote_checks(ep, x, core_rma);
    }
    if (!err) {
        return 0;
    }
    if (!cq) {
        return -err;
    }
    return strictmr_cq_raise(cq, x->context, op_desc[x->op].cq_flags, err) ?: 1;
}
