/*
 * The error completions this provider raises, queued on one of our CQs: a
 * violation found by the checks (strictmr_xfer.c), or an operation the NIC
 * data path could not hand to the core or cancelled (strictmr_engine.c).
 * strictmr_cq.c returns them before the core's entries.
 */
#include <stdlib.h>

#include "strictmr.h"

int strictmr_cq_raise(struct strictmr_cq *cq, void *context, uint64_t flags, int err)
{
    struct strictmr_cq_error *e = calloc(1, sizeof(*e));

    if (!e) {
        return -FI_ENOMEM;
    }
    e->entry.op_context = context;
    e->entry.flags = flags;
    e->entry.err = err;
    e->entry.prov_errno = err;
    pthread_mutex_lock(&cq->lock);
    if (cq->tail) {
        cq->tail->next = e;
    } else {
        cq->head = e;
    }
    cq->tail = e;
    pthread_mutex_unlock(&cq->lock);
    return 0;
}

bool strictmr_cq_has_errors(struct strictmr_cq *cq)
{
    bool pending;

    pthread_mutex_lock(&cq->lock);
    pending = cq->head != NULL;
    pthread_mutex_unlock(&cq->lock);
    return pending;
}

struct strictmr_cq_error *strictmr_cq_pop_error(struct strictmr_cq *cq)
{
    struct strictmr_cq_error *e;

    pthread_mutex_lock(&cq->lock);
    e = cq->head;
    if (e) {
        cq->head = e->next;
        if (!cq->head) {
            cq->tail = NULL;
        }
    }
    pthread_mutex_unlock(&cq->lock);
    return e;
}
