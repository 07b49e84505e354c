/*
 * ofi_strictmr memory registration: our keys (random and exactly key_size
 * bytes wide under FI_MR_PROV_KEY, the caller's otherwise), the registration-
 * time rules, FI_MR_ENDPOINT binding and FI_MR_RAW keys. Each MR has a slot in
 * the domain's shared table; its desc names the domain, the slot and the
 * slot's generation, so that a stale or foreign desc is recognised without
 * dereferencing it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "strictmr.h"

#define KEY_TRIES 64
#define MINCORE_CHUNK 1024 /* pages per mincore call */
#define COST_PAGE 4096     /* FI_OFI_STRICTMR_REG_COST_PAGE_NS is charged per 4 KiB page */

void strictmr_key_from_u64(struct strictmr_key *key, uint64_t value, size_t size)
{
    memset(key, 0, sizeof(*key));
    key->size = size;
    for (size_t i = 0; i < size && i < sizeof(value); i++) {
        key->bytes[i] = (uint8_t)(value >> (8 * i));
    }
}

static uint64_t key_to_u64(const struct strictmr_key *key)
{
    uint64_t value = 0;

    for (size_t i = 0; i < key->size && i < sizeof(value); i++) {
        value |= (uint64_t)key->bytes[i] << (8 * i);
    }
    return value;
}

/* ---------------------------------------------------------------- descs */
static void *desc_encode(const struct strictmr_domain *dom, int slot, uint32_t gen)
{
    return (void *)(uintptr_t)(((uint64_t)dom->id << 48) | ((uint64_t)gen << 16) | (uint64_t)slot);
}

struct strictmr_mr *strictmr_desc_mr(struct strictmr_domain *dom, void *desc)
{
    uint64_t bits = (uintptr_t)desc;
    uint64_t slot = bits & 0xffff;
    struct strictmr_mr *mr;

    if (bits >> 48 != dom->id || slot >= STRICTMR_TABLE_SLOTS) {
        return NULL;
    }
    mr = dom->local[slot];
    return mr && mr->gen == (uint32_t)(bits >> 16) ? mr : NULL;
}

/* ---------------------------------------------------------------- keys */
/* A random key that needs all key_size bytes and that the table has never seen. */
static int prov_key(struct strictmr_domain *dom, struct strictmr_key *key, int *slot)
{
    for (int i = 0; i < KEY_TRIES; i++) {
        memset(key, 0, sizeof(*key));
        key->size = strictmr_config.key_size;
        if (getrandom(key->bytes, key->size, 0) != (ssize_t)key->size) {
            return -FI_EIO;
        }
        key->bytes[key->size - 1] |= 0x80;
        *slot = strictmr_table_probe(dom->table, key, true);
        if (*slot >= 0 && dom->table->slot[*slot].state == STRICTMR_SLOT_EMPTY) {
            return 0;
        }
    }
    return -FI_ENOSPC;
}

static int user_key(struct strictmr_domain *dom, uint64_t requested, struct strictmr_key *key,
                    int *slot)
{
    size_t bits = 8 * strictmr_config.key_size;
    bool too_wide = bits < 64 && (requested >> bits) != 0;
    int err;

    err = strictmr_rule(STRICTMR_RULE_KEY_WIDTH, too_wide,
                        "requested_key 0x%llx needs more than %zu bytes",
                        (unsigned long long)requested, strictmr_config.key_size);
    if (err) {
        return -err;
    }
    strictmr_key_from_u64(key, requested, strictmr_config.key_size);
    *slot = strictmr_table_probe(dom->table, key, true);
    if (*slot < 0) {
        return -FI_ENOSPC;
    }
    err = strictmr_rule(STRICTMR_RULE_KEY_IN_USE,
                        dom->table->slot[*slot].state == STRICTMR_SLOT_LIVE &&
                            strictmr_key_equal(&dom->table->slot[*slot], key),
                        "requested_key 0x%llx is live", (unsigned long long)requested);
    return -err;
}

static int choose_key(struct strictmr_domain *dom, uint64_t requested, struct strictmr_key *key,
                      int *slot)
{
    if (strictmr_mode(FI_MR_PROV_KEY) || strictmr_mode(FI_MR_RAW)) {
        return prov_key(dom, key, slot);
    }
    return user_key(dom, requested, key, slot);
}

/* ---------------------------------------------------------------- FI_MR_ALLOCATED */
static bool pages_mapped(const void *buf, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)buf & ~(page - 1);
    uintptr_t end = (uintptr_t)buf + len;
    unsigned char vec[MINCORE_CHUNK];

    for (uintptr_t at = start; at < end; at += MINCORE_CHUNK * page) {
        size_t n = end - at < MINCORE_CHUNK * page ? end - at : MINCORE_CHUNK * page;

        if (mincore((void *)at, n, vec) && errno == ENOMEM) {
            return false;
        }
    }
    return true;
}

static int allocated_rule(const void *buf, size_t len)
{
    if (!strictmr_mode(FI_MR_ALLOCATED) || !len) {
        return 0;
    }
    return -strictmr_rule(STRICTMR_RULE_ALLOCATED, !pages_mapped(buf, len),
                          "[%p, +%zu) is not mapped", buf, len);
}

/* ---------------------------------------------------------------- table slots */
static void slot_publish(struct strictmr_domain *dom, struct strictmr_mr *mr, uint64_t access)
{
    struct strictmr_slot *s = &dom->table->slot[mr->slot];

    strictmr_slot_begin_write(s);
    s->state = STRICTMR_SLOT_LIVE;
    s->gen = mr->gen;
    s->key_size = (uint32_t)mr->key.size;
    memcpy(s->key, mr->key.bytes, sizeof(s->key));
    s->base = mr->base;
    s->len = mr->len;
    s->access = access;
    s->core_key = fi_mr_key(mr->core);
    s->ep_id = mr->ep_id;
    s->enabled = mr->enabled;
    strictmr_slot_end_write(s);
}

static void slot_set_binding(struct strictmr_domain *dom, struct strictmr_mr *mr)
{
    struct strictmr_slot *s = &dom->table->slot[mr->slot];

    strictmr_slot_begin_write(s);
    s->ep_id = mr->ep_id;
    s->enabled = mr->enabled;
    strictmr_slot_end_write(s);
}

static void slot_close(struct strictmr_domain *dom, struct strictmr_mr *mr)
{
    struct strictmr_slot *s = &dom->table->slot[mr->slot];

    strictmr_slot_begin_write(s);
    s->state = STRICTMR_SLOT_CLOSED;
    strictmr_slot_end_write(s);
    dom->local[mr->slot] = NULL;
}

/* ---------------------------------------------------------------- MR fid */
static int mr_close(struct fid *fid)
{
    struct strictmr_mr *mr = strictmr_container(fid, struct strictmr_mr, mr.fid);
    struct strictmr_domain *dom = mr->domain;
    int ret;

    pthread_mutex_lock(&dom->lock);
    slot_close(dom, mr);
    dom->live_mrs--;
    pthread_mutex_unlock(&dom->lock);
    /* under the engine's lock: its progress thread may be in the core with this MR */
    strictmr_engine_lock(dom);
    ret = fi_close(&mr->core->fid);
    strictmr_engine_unlock(dom);
    if (ret) {
        FI_WARN(&strictmr_prov, FI_LOG_MR, "core MR close: %s\n", fi_strerror(-ret));
    }
    atomic_fetch_sub(&dom->refs, 1);
    free(mr);
    return 0;
}

static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    struct strictmr_mr *mr = strictmr_container(fid, struct strictmr_mr, mr.fid);
    struct strictmr_ep *ep = strictmr_ep_of(bfid);
    int err;

    if (!ep && bfid->fclass == FI_CLASS_CNTR) {
        return -FI_ENOSYS;
    }
    pthread_mutex_lock(&mr->domain->lock);
    err =
        strictmr_rule(STRICTMR_RULE_MR_BIND, !ep || ep->domain != mr->domain || mr->ep_id || flags,
                      "fi_mr_bind to fid class %zu, flags 0x%llx, MR bound to %u", bfid->fclass,
                      (unsigned long long)flags, mr->ep_id);
    if (!err) {
        mr->ep_id = ep->id;
        slot_set_binding(mr->domain, mr);
    }
    pthread_mutex_unlock(&mr->domain->lock);
    return -err;
}

static int mr_enable(struct strictmr_mr *mr)
{
    int err;

    if (!strictmr_mode(FI_MR_ENDPOINT)) {
        return 0;
    }
    pthread_mutex_lock(&mr->domain->lock);
    err = strictmr_rule(STRICTMR_RULE_MR_BIND, !mr->ep_id, "fi_mr_enable before fi_mr_bind");
    if (!err) {
        mr->enabled = true;
        slot_set_binding(mr->domain, mr);
    }
    pthread_mutex_unlock(&mr->domain->lock);
    return -err;
}

static int mr_raw_attr(struct strictmr_mr *mr, struct fi_mr_raw_attr *attr)
{
    if (!strictmr_mode(FI_MR_RAW)) {
        return -FI_ENOSYS;
    }
    if (*attr->key_size < mr->key.size) {
        *attr->key_size = mr->key.size;
        return -FI_ETOOSMALL;
    }
    memcpy(attr->raw_key, mr->key.bytes, mr->key.size);
    *attr->key_size = mr->key.size;
    if (attr->base_addr) {
        *attr->base_addr = mr->base;
    }
    return 0;
}

static int mr_control(struct fid *fid, int command, void *arg)
{
    struct strictmr_mr *mr = strictmr_container(fid, struct strictmr_mr, mr.fid);

    switch (command) {
    case FI_ENABLE:
        return mr_enable(mr);
    case FI_GET_RAW_MR:
        return mr_raw_attr(mr, arg);
    default:
        return -FI_ENOSYS;
    }
}

static int mr_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
    return -FI_ENOSYS;
}

static struct fi_ops mr_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = mr_close,
    .bind = mr_bind,
    .control = mr_control,
    .ops_open = mr_ops_open,
};

/* ---------------------------------------------------------------- registration */
struct reg_request {
    const void *buf;
    size_t len;
    uint64_t access;
    uint64_t requested_key;
    uint64_t flags;
    void *context;
};

static void mr_init_fid(struct strictmr_mr *mr, struct strictmr_domain *dom, void *context)
{
    mr->mr.fid.fclass = FI_CLASS_MR;
    mr->mr.fid.context = context;
    mr->mr.fid.ops = &mr_fid_ops;
    mr->mr.mem_desc = desc_encode(dom, mr->slot, mr->gen);
    mr->mr.key = strictmr_mode(FI_MR_RAW) ? FI_KEY_NOTAVAIL : key_to_u64(&mr->key);
    mr->domain = dom;
}

/*
 * FI_OFI_STRICTMR_REG_LIMIT: a NIC has room for so many registrations; past it
 * ibv_reg_mr fails with ENOMEM, which verbs and efa hand on as -FI_ENOMEM.
 * With the domain lock held.
 */
static int reg_admit(struct strictmr_domain *dom)
{
    size_t limit = strictmr_config.nic.reg_limit;

    if (!limit || dom->live_mrs < limit) {
        return 0;
    }
    strictmr_event(STRICTMR_EV_REG_REFUSED, 1);
    FI_WARN(&strictmr_prov, FI_LOG_MR,
            "domain %u already holds %zu live registrations, the limit of "
            "FI_OFI_STRICTMR_REG_LIMIT=%zu: fi_mr_reg -> %s\n",
            dom->id, dom->live_mrs, limit, fi_strerror(FI_ENOMEM));
    return -FI_ENOMEM;
}

/*
 * FI_OFI_STRICTMR_REG_COST_US / _PAGE_NS: the time a NIC takes to pin and map
 * a registration, spent for real (outside the domain lock, as concurrent
 * registrations on a NIC proceed in parallel in the kernel). The wait is at
 * least the charge: an absolute deadline survives signals.
 */
static void reg_charge(const void *buf, size_t len)
{
    const struct strictmr_behaviour *nic = &strictmr_config.nic;
    uintptr_t first = (uintptr_t)buf / COST_PAGE;
    uint64_t pages = len ? ((uintptr_t)buf + len - 1) / COST_PAGE - first + 1 : 0;
    uint64_t ns = (uint64_t)nic->reg_cost_us * 1000 + pages * nic->reg_cost_page_ns;
    struct timespec deadline;

    if (!ns) {
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += (time_t)(ns / 1000000000);
    deadline.tv_nsec += (long)(ns % 1000000000);
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR) {
    }
    strictmr_event(STRICTMR_EV_REG_CHARGED, 1);
    strictmr_event(STRICTMR_EV_REG_CHARGED_US, (ns + 999) / 1000);
}

/* With the domain lock held: a key, a slot, the core's registration. */
static int mr_register_locked(struct strictmr_domain *dom, const struct reg_request *req,
                              struct strictmr_mr *mr)
{
    uint64_t core_key = dom->next_core_key;
    int ret;

    ret = reg_admit(dom);
    if (ret) {
        return ret;
    }
    ret = choose_key(dom, req->requested_key, &mr->key, &mr->slot);
    if (ret) {
        return ret;
    }
    strictmr_engine_lock(dom);
    ret = fi_mr_reg(dom->core, req->buf, req->len, req->access, 0, core_key, req->flags, &mr->core,
                    NULL);
    strictmr_engine_unlock(dom);
    if (ret) {
        return ret;
    }
    dom->next_core_key++;
    mr->gen = dom->table->slot[mr->slot].gen + 1;
    mr->base = (uintptr_t)req->buf;
    mr->len = req->len;
    mr->enabled = !strictmr_mode(FI_MR_ENDPOINT);
    slot_publish(dom, mr, req->access);
    dom->local[mr->slot] = mr;
    dom->live_mrs++;
    return 0;
}

static int mr_register(struct strictmr_domain *dom, const struct reg_request *req,
                       struct fid_mr **out)
{
    struct strictmr_mr *mr;
    int ret = allocated_rule(req->buf, req->len);

    if (ret) {
        return ret;
    }
    mr = calloc(1, sizeof(*mr));
    if (!mr) {
        return -FI_ENOMEM;
    }
    pthread_mutex_lock(&dom->lock);
    ret = mr_register_locked(dom, req, mr);
    pthread_mutex_unlock(&dom->lock);
    if (ret) {
        free(mr);
        return ret;
    }
    reg_charge(req->buf, req->len);
    mr_init_fid(mr, dom, req->context);
    atomic_fetch_add(&dom->refs, 1);
    *out = &mr->mr;
    return 0;
}

static int reg_iov(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
                   uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
    struct strictmr_domain *dom = strictmr_container(fid, struct strictmr_domain, domain.fid);
    struct reg_request req = {
        .buf = count ? iov[0].iov_base : NULL,
        .len = count ? iov[0].iov_len : 0,
        .access = access,
        .requested_key = requested_key,
        .flags = flags,
        .context = context,
    };

    if (count > 1) {
        return -FI_EINVAL;
    }
    return mr_register(dom, &req, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
                  uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

    return reg_iov(fid, &iov, 1, access, requested_key, flags, mr, context);
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
                   uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
                   void *context)
{
    return reg_iov(fid, iov, count, access, requested_key, flags, mr, context);
}

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
                      struct fid_mr **mr)
{
    if (attr->iface != FI_HMEM_SYSTEM) {
        return -FI_ENOSYS;
    }
    return reg_iov(fid, attr->mr_iov, attr->iov_count, attr->access, attr->requested_key, flags, mr,
                   attr->context);
}

struct fi_ops_mr strictmr_mr_ops = {
    .size = sizeof(struct fi_ops_mr),
    .reg = mr_reg,
    .regv = mr_regv,
    .regattr = mr_regattr,
};
