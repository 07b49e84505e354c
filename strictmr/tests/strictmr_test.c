/*
 * strictmr_test PROVIDER: runs every case of cases.c's table that applies to the MR
 * mode ofi_strictmr demands (FI_OFI_STRICTMR_MR_MODE / _KEY_SIZE) over the
 * layered provider named, e.g. "shm;ofi_strictmr". One line per case, then a
 * summary. Exit: 0 all passed, 1 a case failed, 77 the provider is not here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

enum verdict { PASS, FAIL, SKIP };

static const char *const verdict_name[] = {"PASS", "FAIL", "SKIP"};

static uint64_t sum(const uint64_t *v)
{
    uint64_t total = 0;

    for (int i = 0; i < STRICTMR_RULE_COUNT; i++)
        total += v[i];
    return total;
}

static int env_open(struct fixture *f, struct env *e)
{
    int ret;

    memset(e, 0, sizeof(*e));
    e->f = f;
    e->next_key = 1;
    e->tbuf = aligned_alloc(4096, REGION);
    e->lbuf = aligned_alloc(4096, 2 * REGION);
    e->sbuf = aligned_alloc(4096, 2 * MSG_MAX);
    e->rbuf = aligned_alloc(4096, 2 * MSG_MAX);
    if (!e->tbuf || !e->lbuf || !e->sbuf || !e->rbuf)
        return -FI_ENOMEM;
    memset(e->tbuf, 0, REGION);
    memset(e->lbuf, 0, 2 * REGION);
    memset(e->sbuf, 0, 2 * MSG_MAX);
    memset(e->rbuf, 0, 2 * MSG_MAX);
    ret = mr_open(f, &f->b, e->tbuf, REGION, FI_REMOTE_READ | FI_REMOTE_WRITE, e->next_key++,
                  &e->tmr);
    if (!ret)
        ret = mr_open(f, &f->a, e->lbuf, REGION, FI_READ | FI_WRITE, e->next_key++, &e->lmr);
    if (!ret)
        ret = mr_open(f, &f->a, e->sbuf, MSG_MAX, FI_SEND, e->next_key++, &e->smr);
    if (!ret)
        ret = mr_open(f, &f->b, e->rbuf, MSG_MAX, FI_RECV, e->next_key++, &e->rmr);
    if (!ret)
        ret = remote_of(f, e->tmr, e->tbuf, &e->key, &e->base);
    if (!ret) {
        e->ldesc = fi_mr_desc(e->lmr);
        e->sdesc = fi_mr_desc(e->smr);
        e->rdesc = fi_mr_desc(e->rmr);
    }
    return ret;
}

static void env_close(struct env *e)
{
    struct fid_mr *mrs[] = {e->rmr, e->smr, e->lmr, e->tmr};

    for (size_t i = 0; i < sizeof(mrs) / sizeof(mrs[0]); i++) {
        if (mrs[i])
            fi_close(&mrs[i]->fid);
    }
    free(e->tbuf);
    free(e->lbuf);
    free(e->sbuf);
    free(e->rbuf);
}

static enum verdict judge(const struct test_case *c, uint64_t mode, int ret,
                          const struct outcome *o, const struct strictmr_stats *d)
{
    uint64_t violations = sum(d->violated);
    int err = c->rule >= 0 ? rule_errno(c->rule) : 0;

    if (ret == 1)
        return SKIP;
    if (ret)
        return FAIL;
    switch (c->expect) {
    case EXPECT_OK:
        return !o->ret && !o->cq_err && !violations && sum(d->checked) ? PASS : FAIL;
    case EXPECT_DELIVERED: /* a message names no remote key: only FI_MR_LOCAL has rules for it */
        return !o->ret && !o->cq_err && !violations &&
                       (sum(d->checked) != 0) == ((mode & FI_MR_LOCAL) != 0)
                   ? PASS
                   : FAIL;
    case EXPECT_CQ_ERR:
        return !o->ret && o->waited && o->cq_err == err && d->violated[c->rule] == 1 &&
                       violations == 1
                   ? PASS
                   : FAIL;
    case EXPECT_SYNC_ERR:
        return o->ret == -err && d->violated[c->rule] == 1 && violations == 1 ? PASS : FAIL;
    default:
        return !violations ? PASS : FAIL;
    }
}

static bool applies(const struct test_case *c, uint64_t mode)
{
    return (mode & c->needs) == c->needs && !(mode & c->excludes);
}

static enum verdict run_case(struct fixture *f, const struct test_case *c, const char *label)
{
    struct strictmr_stats before, after, delta;
    struct outcome out = {0};
    struct env e;
    enum verdict v;
    int ret = env_open(f, &e);

    f->stats->read(&before);
    if (!ret)
        ret = c->run(&e, &out);
    f->stats->read(&after);
    env_close(&e);
    for (int i = 0; i < STRICTMR_RULE_COUNT; i++) {
        delta.checked[i] = after.checked[i] - before.checked[i];
        delta.violated[i] = after.violated[i] - before.violated[i];
    }
    v = judge(c, f->mode, ret, &out, &delta);
    printf("%s %s %s: rule=%s ret=%d call=%d cq_err=%d checked+%llu violations+%llu\n",
           verdict_name[v], label, c->name, c->rule >= 0 ? f->stats->rule_name(c->rule) : "-", ret,
           out.ret, out.cq_err, (unsigned long long)sum(delta.checked),
           (unsigned long long)sum(delta.violated));
    return v;
}

/* What fi_getinfo answers for our provider with these caps and mr_mode. */
static int getinfo_ret(const struct fixture *f, uint64_t caps, uint64_t mr_mode)
{
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    int ret;

    if (!hints)
        return -FI_ENOMEM;
    hints->caps = caps;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = mr_mode;
    hints->fabric_attr->prov_name = strdup(f->info->fabric_attr->prov_name);
    ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
    fi_freeinfo(hints);
    fi_freeinfo(info);
    return ret;
}

/* Hints that lack a demanded mode bit get nothing, as from a NIC. */
static enum verdict hints_reject(const struct fixture *f, const char *label)
{
    uint64_t lowest = f->mode & -f->mode;
    int ret;

    if (!lowest)
        return SKIP;
    ret = getinfo_ret(f, FI_RMA | FI_ATOMIC, f->mode & ~lowest);
    printf("%s %s hints_reject: getinfo without mr_mode bit 0x%llx -> %d\n",
           ret == -FI_ENODATA ? "PASS" : "FAIL", label, (unsigned long long)lowest, ret);
    return ret == -FI_ENODATA ? PASS : FAIL;
}

/* Messages are served (the fixture asked for FI_MSG), tagged messages are not. */
static enum verdict tagged_reject(const struct fixture *f, const char *label)
{
    int ret = getinfo_ret(f, FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC, f->mode);
    bool pass = ret == -FI_ENODATA && (f->info->caps & FI_MSG);

    printf("%s %s tagged_reject: info caps 0x%llx, getinfo with FI_TAGGED -> %d\n",
           pass ? "PASS" : "FAIL", label, (unsigned long long)f->info->caps, ret);
    return pass ? PASS : FAIL;
}

int main(int argc, char **argv)
{
    struct fixture f;
    int count[3] = {0};
    char label[160];
    int ret;

    if (argc != 2) {
        fprintf(stderr, "usage: %s PROVIDER (e.g. \"shm;ofi_strictmr\")\n", argv[0]);
        return 2;
    }
    ret = fixture_open(&f, argv[1]);
    if (ret) {
        printf("SKIP %s: %s\n", argv[1], fi_strerror(-ret));
        fixture_close(&f);
        return ret == -FI_ENODATA ? EXIT_SKIP : 1;
    }
    snprintf(label, sizeof(label), "[%s mr_mode=0x%llx key_size=%zu]",
             f.info->fabric_attr->prov_name, (unsigned long long)f.mode, f.key_size);
    for (size_t i = 0; i < test_case_count; i++) {
        if (applies(&test_cases[i], f.mode))
            count[run_case(&f, &test_cases[i], label)]++;
    }
    count[hints_reject(&f, label)]++;
    count[tagged_reject(&f, label)]++;
    fixture_close(&f);
    printf("SUMMARY %s: %d passed, %d failed, %d skipped\n", label, count[PASS], count[FAIL],
           count[SKIP]);
    return count[FAIL] ? 1 : 0;
}
