/*
 * strictmr_engine_test PROVIDER CASE: the NIC data-path behaviours of ofi_strictmr
 * (strictmr_engine.c), each shown by what a caller sees and by its event
 * counter. run_tests.py runs each case with the behaviour on, and the
 * reorder and progress cases with it off too, where they must see the
 * opposite. Cases:
 *   reorder       writes to one word end on another value than the last posted,
 *                 completions arrive out of posted order, and REORDERED moved
 *   reorder_off   the same writes end on the last value every round, in order
 *   sas           with reordering on, sends still arrive in posted order; the info
 *                 grants no more than FI_ORDER_SAS, and hints asking more get nothing
 *   progress      a write and a read complete while the target's CQs are never read
 *   progress_off  the same write does not complete (cores that need target progress)
 *   progress_none the same, with a profile's thread turned off by PROGRESS_US=none
 *   txq           tx_size posts succeed, the next gets -FI_EAGAIN; after reading, posts work
 *   rxq           the same for receives
 *   cqfull        more completions than the CQ holds: counted as CQ_FULL, none lost
 *   control       a CQ bind the core refuses takes no direction; a second bind, refused,
 *                 leaves selective completion as it was; FI_SETOPSFLAG's FI_COMPLETION makes
 *                 plain writes complete, FI_GETOPSFLAG reads it back, and a malformed
 *                 FI_SETOPSFLAG gets -FI_EINVAL, changing nothing
 *   rebind        a second CQ bound for a direction that has one gets -FI_EINVAL; the first
 *                 CQ still completes both directions and closes cleanly (pass-through)
 *   rebind_engine the same with the NIC data path on (TX_SIZE set)
 * control and rebind are in engine_control.c. Exit: 0 passed, 1 failed, 77 the provider is not
 * here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_test.h"

#define ROUNDS 40
#define K 8

struct fixture fx;
uint64_t *tbuf, *lbuf, *sbuf, *rbuf;
struct fid_mr *tmr, *lmr, *smr, *rmr;
uint64_t tkey;
static uint64_t tbase;
static int failures;

void check(bool ok, const char *what)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    if (!ok)
        failures++;
}

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t event(enum strictmr_event ev)
{
    struct strictmr_stats s;

    fx.stats->read(&s);
    return s.events[ev];
}

static int setup(void)
{
    size_t size = 64 * sizeof(uint64_t);
    int ret;

    tbuf = aligned_alloc(4096, 4096);
    lbuf = aligned_alloc(4096, 4096);
    sbuf = aligned_alloc(4096, 4096);
    rbuf = aligned_alloc(4096, 4096);
    if (!tbuf || !lbuf || !sbuf || !rbuf)
        return -FI_ENOMEM;
    memset(tbuf, 0, 4096);
    memset(lbuf, 0, 4096);
    memset(sbuf, 0, 4096);
    memset(rbuf, 0, 4096);
    ret = mr_open(&fx, &fx.b, tbuf, size, FI_REMOTE_READ | FI_REMOTE_WRITE, 1, &tmr);
    if (!ret)
        ret = mr_open(&fx, &fx.a, lbuf, size, FI_READ | FI_WRITE, 2, &lmr);
    if (!ret)
        ret = mr_open(&fx, &fx.a, sbuf, size, FI_SEND, 3, &smr);
    if (!ret)
        ret = mr_open(&fx, &fx.b, rbuf, size, FI_RECV, 4, &rmr);
    if (!ret)
        ret = remote_of(&fx, tmr, tbuf, &tkey, &tbase);
    return ret;
}

uint64_t taddr(size_t word)
{
    return tbase + word * sizeof(uint64_t);
}

int take_cq(struct fid_cq *cq, struct side *other, void **context, long bound_ms)
{
    struct fi_cq_data_entry e, discard;
    struct fi_cq_err_entry err = {0};
    long deadline = now_ms() + bound_ms;
    ssize_t ret;

    while (now_ms() < deadline) {
        ret = fi_cq_read(cq, &e, 1);
        if (ret == 1) {
            *context = e.op_context;
            return 0;
        }
        if (ret == -FI_EAVAIL) {
            fi_cq_readerr(cq, &err, 0);
            fprintf(stderr, "error completion: %s\n", fi_strerror(err.err));
            return -err.err;
        }
        if (ret != -FI_EAGAIN)
            return (int)ret;
        if (other)
            (void)fi_cq_read(other->cq, &discard, 0);
    }
    return -FI_ETIMEDOUT;
}

static int take(struct side *s, struct side *other, void **context, long bound_ms)
{
    return take_cq(s->cq, other, context, bound_ms);
}

/* Posts while the core says -FI_EAGAIN (shm maps peers lazily), driving both sides. */
static int post_retry_write(size_t slot, size_t word, void *context)
{
    return POST_RETRY(&fx, fi_write(fx.a.ep, &lbuf[slot], sizeof(uint64_t), fi_mr_desc(lmr),
                                    fx.a.peer, taddr(word), tkey, context));
}

static int read_word(size_t word, size_t slot, bool drive_b, long bound_ms);

/* ---------------------------------------------------------------- reorder */
static void reorder(bool on)
{
    uint64_t before = event(STRICTMR_EV_REORDERED);
    uint64_t cbefore = event(STRICTMR_EV_COMPLETIONS_REORDERED);
    int ctx[K];
    int not_last = 0, permuted = 0, errors = 0;

    for (int round = 0; round < ROUNDS; round++) {
        bool in_order = true;

        tbuf[0] = 0;
        for (int i = 0; i < K; i++) {
            lbuf[i] = (uint64_t)(i + 1);
            if (post_retry_write(i, 0, &ctx[i]))
                errors++;
        }
        for (int i = 0; i < K; i++) {
            void *c = NULL;

            if (take(&fx.a, &fx.b, &c, BOUND_MS)) {
                errors++;
                break;
            }
            in_order = in_order && c == &ctx[i];
        }
        /* an initiator's completion may precede the write's arrival (tcp): a read issued after
         * all of them, on the same connection, sees the final value */
        lbuf[32] = 0;
        errors += read_word(0, 32, true, BOUND_MS) != 0;
        not_last += lbuf[32] != K || tbuf[0] != K;
        permuted += !in_order;
    }
    printf("INFO reorder: %d rounds, %d ended on another value than %d, %d completed out of "
           "posted order; REORDERED+%llu COMPLETIONS_REORDERED+%llu\n",
           ROUNDS, not_last, K, permuted,
           (unsigned long long)(event(STRICTMR_EV_REORDERED) - before),
           (unsigned long long)(event(STRICTMR_EV_COMPLETIONS_REORDERED) - cbefore));
    check(!errors, "reorder: every write posted and completed");
    if (on) {
        check(not_last > 0, "reorder: a round ended on another value than the last posted");
        check(permuted > 0, "reorder: a round completed out of posted order");
        check(event(STRICTMR_EV_REORDERED) > before, "reorder: REORDERED moved");
    } else {
        check(not_last == 0, "reorder_off: every round ended on the last value posted");
        check(permuted == 0, "reorder_off: every round completed in posted order");
        check(event(STRICTMR_EV_REORDERED) == before, "reorder_off: REORDERED did not move");
    }
}

static int getinfo_order(uint64_t order)
{
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    int ret;

    if (!hints)
        return -FI_ENOMEM;
    hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = fx.mode;
    hints->tx_attr->msg_order = order;
    hints->fabric_attr->prov_name = strdup(fx.info->fabric_attr->prov_name);
    ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
    fi_freeinfo(hints);
    fi_freeinfo(info);
    return ret;
}

static void sas(void)
{
    int ctx[K];
    bool in_order = true;
    int errors = 0;

    check(!(fx.info->tx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS) &&
              !(fx.info->rx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS),
          "sas: the info grants at most FI_ORDER_SAS");
    check(getinfo_order(FI_ORDER_RAW | FI_ORDER_WAW) == -FI_ENODATA,
          "sas: hints asking RAW|WAW get no info");
    if (!(fx.info->tx_attr->msg_order & FI_ORDER_SAS)) {
        printf("INFO sas: the core grants no FI_ORDER_SAS: nothing more to check\n");
        return;
    }
    for (int i = 0; i < K; i++) {
        rbuf[i] = 0;
        if (fi_recv(fx.b.ep, &rbuf[i], sizeof(uint64_t), fi_mr_desc(rmr), FI_ADDR_UNSPEC,
                    &ctx[i]))
            errors++;
    }
    for (int i = 0; i < K; i++) {
        sbuf[i] = (uint64_t)(i + 1);
        if (POST_RETRY(&fx, fi_send(fx.a.ep, &sbuf[i], sizeof(uint64_t), fi_mr_desc(smr),
                                    fx.a.peer, NULL)))
            errors++;
    }
    for (int i = 0; i < K; i++) {
        void *c = NULL;

        if (take(&fx.b, &fx.a, &c, BOUND_MS)) {
            errors++;
            break;
        }
        in_order = in_order && c == &ctx[i] && rbuf[i] == (uint64_t)(i + 1);
    }
    for (int i = 0; i < K; i++) {
        void *c;

        if (take(&fx.a, &fx.b, &c, BOUND_MS))
            errors++;
    }
    check(!errors, "sas: every send and receive completed");
    check(in_order, "sas: the receives completed in posted order, each with its send's data");
}

/* ---------------------------------------------------------------- progress */
/* Reads a word of the target into lbuf[slot]; b is driven too when drive_b. */
static int read_word(size_t word, size_t slot, bool drive_b, long bound_ms)
{
    int ctx;
    void *c;
    int ret = POST_RETRY(&fx, fi_read(fx.a.ep, &lbuf[slot], sizeof(uint64_t), fi_mr_desc(lmr),
                                      fx.a.peer, taddr(word), tkey, &ctx));

    return ret ? ret : take(&fx.a, drive_b ? &fx.b : NULL, &c, bound_ms);
}

/* Waits, making no libfabric call, until *word holds value and counter moved past before. */
static bool quiet_wait(volatile uint64_t *word, uint64_t value, enum strictmr_event counter,
                       uint64_t before)
{
    long deadline = now_ms() + BOUND_MS;

    while (now_ms() < deadline)
        if (*word == value && event(counter) > before)
            return true;
    return false;
}

static void progress(bool on)
{
    uint64_t before = event(STRICTMR_EV_THREAD_COMPLETIONS);
    int ctx;
    void *c = NULL;
    int ret;

    /* a first exchange, both sides driven, connects and maps the peers */
    lbuf[1] = 7;
    ret = post_retry_write(1, 1, &ctx);
    if (!ret)
        ret = take(&fx.a, &fx.b, &c, BOUND_MS);
    if (!ret)
        ret = read_word(1, 2, true, BOUND_MS);
    check(!ret && lbuf[2] == 7 && tbuf[1] == 7, "progress: with both sides driven, a write and a "
                                                "read complete");
    if (on) {
        /* neither side makes a libfabric call: only the provider's threads progress */
        lbuf[3] = 0x1234;
        before = event(STRICTMR_EV_THREAD_COMPLETIONS);
        ret = fi_write(fx.a.ep, &lbuf[3], sizeof(uint64_t), fi_mr_desc(lmr), fx.a.peer, taddr(3),
                       tkey, &ctx);
        check(!ret && quiet_wait(&tbuf[3], 0x1234, STRICTMR_EV_THREAD_COMPLETIONS, before),
              "progress: with no libfabric call on either side, the write lands and its "
              "completion is reaped by the thread (THREAD_COMPLETIONS moved)");
        check(!take(&fx.a, NULL, &c, BOUND_MS) && c == &ctx,
              "progress: its completion is there to read");
    }
    /* a reads its own CQ only; b makes no call */
    tbuf[4] = 0xabcd;
    lbuf[4] = 0;
    ret = read_word(4, 4, false, BOUND_MS);
    printf("INFO progress: a read while the target makes no call -> %s (%d), 0x%llx\n",
           ret ? "not completed" : "completed", ret, (unsigned long long)lbuf[4]);
    if (on) {
        check(!ret && lbuf[4] == 0xabcd, "progress: a read completes with the target's data "
                                         "while the target makes no call");
        check(event(STRICTMR_EV_THREAD_COMPLETIONS) > before, "progress: THREAD_COMPLETIONS moved");
        return;
    }
    check(ret == -FI_ETIMEDOUT,
          "progress_off: the read does not complete while the target makes no call");
    if (ret == -FI_ETIMEDOUT)
        check(!take(&fx.a, &fx.b, &c, BOUND_MS) && lbuf[4] == 0xabcd,
              "progress_off: it completes once the target is driven");
}

/* ---------------------------------------------------------------- queues */
/* fi_tx_size_left / fi_rx_size_left, which libfabric 1.17's headers mark deprecated */
static ssize_t tx_left(struct fid_ep *ep)
{
    return ep->ops->tx_size_left(ep);
}

static ssize_t rx_left(struct fid_ep *ep)
{
    return ep->ops->rx_size_left(ep);
}

static void txq(void)
{
    size_t size = fx.info->tx_attr->size;
    uint64_t before = event(STRICTMR_EV_TX_EAGAIN);
    int ctx;
    void *c;
    int ret = 0, errors = 0;

    printf("INFO txq: tx_attr->size %zu\n", size);
    if (!size || size > 32) {
        check(false, "txq: the info's tx_attr->size is FI_OFI_STRICTMR_TX_SIZE (1..32 here)");
        return;
    }
    /* connect first, so that the core itself has no reason to refuse */
    ret = post_retry_write(0, 0, &ctx);
    if (!ret)
        ret = take(&fx.a, &fx.b, &c, BOUND_MS);
    check(!ret, "txq: a first write completes");
    check(tx_left(fx.a.ep) == (ssize_t)size, "txq: fi_tx_size_left is tx_size when idle");
    for (size_t i = 0; i < size; i++)
        errors += fi_write(fx.a.ep, &lbuf[i], sizeof(uint64_t), fi_mr_desc(lmr), fx.a.peer,
                           taddr(i), tkey, &ctx) != 0;
    check(!errors, "txq: tx_size writes are accepted without reading the CQ");
    check(tx_left(fx.a.ep) == 0, "txq: fi_tx_size_left is 0 when full");
    ret = fi_write(fx.a.ep, &lbuf[0], sizeof(uint64_t), fi_mr_desc(lmr), fx.a.peer, taddr(0),
                   tkey, &ctx);
    check(ret == -FI_EAGAIN, "txq: the next write gets -FI_EAGAIN");
    check(event(STRICTMR_EV_TX_EAGAIN) == before + 1, "txq: TX_EAGAIN moved by one");
    for (size_t i = 0; i < size; i++)
        errors += take(&fx.a, &fx.b, &c, BOUND_MS) != 0;
    check(!errors, "txq: all tx_size writes complete");
    check(tx_left(fx.a.ep) == (ssize_t)size, "txq: fi_tx_size_left is back to tx_size");
    ret = fi_write(fx.a.ep, &lbuf[0], sizeof(uint64_t), fi_mr_desc(lmr), fx.a.peer, taddr(0),
                   tkey, &ctx);
    if (!ret)
        ret = take(&fx.a, &fx.b, &c, BOUND_MS);
    check(!ret, "txq: after reading the completions, a write posts and completes");
}

static void rxq(void)
{
    size_t size = fx.info->rx_attr->size;
    uint64_t before = event(STRICTMR_EV_RX_EAGAIN);
    int ctx;
    void *c;
    int ret, errors = 0;

    printf("INFO rxq: rx_attr->size %zu\n", size);
    if (!size || size > 32) {
        check(false, "rxq: the info's rx_attr->size is FI_OFI_STRICTMR_RX_SIZE (1..32 here)");
        return;
    }
    for (size_t i = 0; i < size; i++)
        errors += fi_recv(fx.b.ep, &rbuf[i], sizeof(uint64_t), fi_mr_desc(rmr), FI_ADDR_UNSPEC,
                          &ctx) != 0;
    check(!errors, "rxq: rx_size receives are accepted");
    check(rx_left(fx.b.ep) == 0, "rxq: fi_rx_size_left is 0 when full");
    ret = fi_recv(fx.b.ep, &rbuf[0], sizeof(uint64_t), fi_mr_desc(rmr), FI_ADDR_UNSPEC, &ctx);
    check(ret == -FI_EAGAIN, "rxq: the next receive gets -FI_EAGAIN");
    check(event(STRICTMR_EV_RX_EAGAIN) == before + 1, "rxq: RX_EAGAIN moved by one");
    for (size_t i = 0; i < size; i++)
        errors += POST_RETRY(&fx, fi_send(fx.a.ep, &sbuf[i], sizeof(uint64_t), fi_mr_desc(smr),
                                          fx.a.peer, NULL)) != 0;
    for (size_t i = 0; i < size; i++)
        errors += take(&fx.b, &fx.a, &c, BOUND_MS) != 0;
    for (size_t i = 0; i < size; i++)
        errors += take(&fx.a, &fx.b, &c, BOUND_MS) != 0;
    check(!errors, "rxq: the receives are matched by sends and complete");
    check(rx_left(fx.b.ep) == (ssize_t)size, "rxq: fi_rx_size_left is back to rx_size");
    ret = fi_recv(fx.b.ep, &rbuf[0], sizeof(uint64_t), fi_mr_desc(rmr), FI_ADDR_UNSPEC, &ctx);
    check(!ret, "rxq: after the completions were read, a receive posts");
    if (!ret) {
        ret = POST_RETRY(&fx, fi_send(fx.a.ep, &sbuf[0], sizeof(uint64_t), fi_mr_desc(smr),
                                      fx.a.peer, NULL));
        if (!ret)
            ret = take(&fx.b, &fx.a, &c, BOUND_MS);
        if (!ret)
            ret = take(&fx.a, &fx.b, &c, BOUND_MS);
        check(!ret, "rxq: and completes");
    }
}

/* The CQ holds FI_OFI_STRICTMR_CQ_SIZE; the progress thread reaps while nobody reads. */
static void cqfull(void)
{
    enum { N = 24 };
    int ctx[N], seen[N] = {0};
    uint64_t before = event(STRICTMR_EV_CQ_FULL);
    long deadline;
    int errors = 0, got = 0;

    for (int i = 0; i < N; i++)
        errors += post_retry_write(i, i, &ctx[i]) != 0;
    check(!errors, "cqfull: the writes post");
    /* no CQ call of ours: the provider's thread reaps into the CQ until it is full */
    deadline = now_ms() + BOUND_MS;
    while (event(STRICTMR_EV_CQ_FULL) == before && now_ms() < deadline)
        ;
    check(event(STRICTMR_EV_CQ_FULL) > before, "cqfull: CQ_FULL moved while the CQ went unread");
    for (int i = 0; i < N; i++) {
        void *c = NULL;

        if (take(&fx.a, &fx.b, &c, BOUND_MS))
            break;
        for (int j = 0; j < N; j++)
            if (c == &ctx[j])
                seen[j]++;
        got++;
    }
    for (int j = 0; j < N; j++)
        errors += seen[j] != 1;
    printf("INFO cqfull: %d completions read, CQ_FULL+%llu\n", got,
           (unsigned long long)(event(STRICTMR_EV_CQ_FULL) - before));
    check(got == N && !errors, "cqfull: every write completed exactly once: none lost");
}

int main(int argc, char **argv)
{
    const char *what;
    int ret;

    if (argc != 3) {
        fprintf(stderr, "usage: %s PROVIDER CASE\n", argv[0]);
        return 2;
    }
    what = argv[2];
    setvbuf(stdout, NULL, _IOLBF, 0);
    ret = fixture_open(&fx, argv[1]);
    if (ret == -FI_ENODATA) {
        printf("SKIP %s: %s\n", argv[1], fi_strerror(-ret));
        fixture_close(&fx);
        return EXIT_SKIP;
    }
    if (!ret)
        ret = setup();
    if (ret) {
        printf("FAIL %s: setup: %s\n", argv[1], fi_strerror(-ret));
        return 1;
    }
    if (!strcmp(what, "reorder") || !strcmp(what, "reorder_off"))
        reorder(!strcmp(what, "reorder"));
    else if (!strcmp(what, "sas"))
        sas();
    else if (!strcmp(what, "progress") || !strcmp(what, "progress_off") ||
             !strcmp(what, "progress_none"))
        progress(!strcmp(what, "progress"));
    else if (!strcmp(what, "txq"))
        txq();
    else if (!strcmp(what, "rxq"))
        rxq();
    else if (!strcmp(what, "cqfull"))
        cqfull();
    else if (!strcmp(what, "control"))
        control();
    else if (!strcmp(what, "rebind") || !strcmp(what, "rebind_engine"))
        rebind(!strcmp(what, "rebind_engine"));
    else {
        fprintf(stderr, "unknown case %s\n", what);
        return 2;
    }
    fi_close(&rmr->fid);
    fi_close(&smr->fid);
    fi_close(&lmr->fid);
    fi_close(&tmr->fid);
    fixture_close(&fx);
    printf("SUMMARY [%s %s]: %d failed\n", argv[1], what, failures);
    return failures ? 1 : 0;
}
