/*
 * stale_key's lowest layer, what the other files use: the run's settings (the command line
 * sets them in main) and the names of probes and configurations, the clock, reading this
 * side's CQ (a completion ends the origin's operation; the target reads it for
 * manual-progress providers) and the one-byte messages through the pipes to the peer, every
 * wait bounded.
 */
#include "stale_key_base.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *const probe_names[NPROBES] = {"bogus_key", "stale_write", "stale_read", "same_key",
                                          "fresh_key"};
const char *const cfg_names[] = {"app", "prov", "btl"};

int offer_virt_addr = 1;
long wait_ms = 5000;
long settle_ms = 200;
int json = 0;

long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

void nap(void)
{
    struct timespec ts = {0, 200000};

    nanosleep(&ts, NULL);
}

static void completed(void *context, int err, int prov_errno)
{
    struct op *op = context;

    if (NULL == op) { /* the target posts nothing */
        return;
    }
    if (op->waiting) {
        op->state = err ? OP_ERROR : OP_OK;
        op->out->err = err;
        op->out->prov_errno = prov_errno;
        snprintf(op->out->error, TAG_LEN, "%s", err ? fi_strerror(err) : "");
    } else if (op->out && !op->out->late[0]) {
        snprintf(op->out->late, TAG_LEN, "%s%s", err ? "error: " : "ok",
                 err ? fi_strerror(err) : "");
    }
}

/* Read what the CQ holds (a target must, for manual-progress providers). */
void drain(struct side *s)
{
    struct fi_cq_entry entry;
    struct fi_cq_err_entry err;

    for (int i = 0; i < 16; i++) {
        ssize_t n = fi_cq_read(s->cq, &entry, 1);
        if (1 == n) {
            completed(entry.op_context, 0, 0);
        } else if (-FI_EAVAIL == n) {
            memset(&err, 0, sizeof(err));
            if (1 == fi_cq_readerr(s->cq, &err, 0)) {
                s->res->cq_errors++;
                completed(err.op_context, err.err ? err.err : FI_EOTHER, err.prov_errno);
            }
        } else {
            return;
        }
    }
}

/* Progress our CQ until `len` bytes came from the peer, at most `ms`; 0 on success. */
int recv_peer(struct side *s, void *msg, size_t len, long ms)
{
    long deadline = now_ms() + ms;
    size_t got = 0;

    while (got < len && now_ms() <= deadline) {
        if (s->cq) {
            drain(s);
        }
        struct pollfd pfd = {.fd = s->from_peer, .events = POLLIN};
        if (poll(&pfd, 1, s->cq ? 0 : 10) <= 0) {
            if (s->cq) {
                nap();
            }
            continue;
        }
        ssize_t n = read(s->from_peer, (char *)msg + got, len - got);
        if (0 == n || (n < 0 && EAGAIN != errno && EINTR != errno)) {
            return 1; /* the peer is gone */
        }
        got += n > 0 ? (size_t)n : 0;
    }
    return got == len ? 0 : 1;
}

/* Bound for waiting on the peer: it may be in a bounded wait of its own. */
long peer_ms(void)
{
    return 2 * wait_ms + settle_ms + 15000;
}

int wait_peer(struct side *s, char *msg)
{
    return recv_peer(s, msg, 1, peer_ms());
}

int tell_peer(struct side *s, char msg)
{
    return write(s->to_peer, &msg, 1) == 1 ? 0 : 1;
}
