/*
 * btl-ofi: finding the registration behind an address at a peer.
 *
 * Why: for a dynamic window, osc/rdma (4.1 and 5.0) looks up the attached
 * region that holds the target address and hands the BTL a pointer to that
 * region's registration handle. For a peer on the same node the pointer
 * points into the peer's own region table, in shared memory, and that peer's
 * MPI_Win_attach keeps the table sorted by moving entries (memmove) and then
 * writes the new region's handle into the freed slot. An attach between the
 * lookup and the BTL call leaves us another region's handle, or one half
 * rewritten (NOTES.txt section 3c: MPI_ERR_ARG on correct programs).
 *
 * What: the access's address is the truth. When the handle, read once, is
 * not whole or does not cover the access, we ask the peer, by a message its
 * progress answers, which of its live registrations covers it, and tell the
 * caller to try again (OPAL_ERR_OUT_OF_RESOURCE: osc/rdma retries every BTL
 * call that says so, after progress). The retry finds the answer and is
 * posted with the key the peer named. An address that no registration of the
 * peer covers is refused, as it was before.
 *
 * Questions live in a small table (MCA_BTL_OFI_LOCATE_SLOTS). An answer is
 * served to the first call for the same peer, address and size, then the
 * slot is free: a later call asks again, so no answer outlives the retry it
 * was asked for (a peer may detach and register the memory anew).
 */

#include "btl_ofi_locate.h"

#include <string.h>

#include "btl_ofi_endpoint.h"
#include "btl_ofi_msg.h"

#define MCA_BTL_OFI_LOCATE_SLOTS 16

enum mca_btl_ofi_locate_state_t {
    MCA_BTL_OFI_LOCATE_FREE,
    MCA_BTL_OFI_LOCATE_ASKING, /**< the question is out */
    MCA_BTL_OFI_LOCATE_FOUND,  /**< the peer named a registration: handle */
    MCA_BTL_OFI_LOCATE_ABSENT, /**< the peer has no registration covering it */
};

typedef struct mca_btl_ofi_locate_slot_t {
    enum mca_btl_ofi_locate_state_t state;
    struct mca_btl_base_endpoint_t *endpoint;
    uint64_t address;
    uint64_t size;
    uint64_t serial; /**< names the question in its answer; answers to older ones are dropped */
    mca_btl_base_registration_handle_t handle;
} mca_btl_ofi_locate_slot_t;

struct mca_btl_ofi_locate_t {
    opal_mutex_t lock;
    uint64_t serial; /**< questions asked so far */
    mca_btl_ofi_locate_slot_t slots[MCA_BTL_OFI_LOCATE_SLOTS];
};

/* The wire. */
typedef struct mca_btl_ofi_locate_msg_t {
    mca_btl_ofi_msg_header_t header;
    uint64_t serial;
    uint64_t address;
    uint64_t size;
} mca_btl_ofi_locate_msg_t;

typedef struct mca_btl_ofi_located_msg_t {
    mca_btl_ofi_msg_header_t header;
    uint64_t serial;
    uint64_t found;
    mca_btl_base_registration_handle_t handle;
} mca_btl_ofi_located_msg_t;

/* ---- the peer: answer ---------------------------------------------------- */

static void mca_btl_ofi_locate_answer(mca_btl_ofi_rail_t *rail,
                                      struct mca_btl_base_endpoint_t *origin, const void *buf,
                                      size_t bytes)
{
    mca_btl_ofi_locate_msg_t question;
    mca_btl_ofi_located_msg_t answer = {0};

    if (bytes < sizeof(question) || NULL == origin) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "a question about a registration could not be "
                                            "answered (%s)",
                            NULL == origin ? "no endpoint for its sender" : "short message");
        return;
    }
    memcpy(&question, buf, sizeof(question));
    mca_btl_ofi_msg_header_init(&answer.header, MCA_BTL_OFI_MSG_LOCATED, sizeof(answer));
    answer.serial = question.serial;
    answer.found = mca_btl_ofi_reg_covering(rail, question.address, question.size, &answer.handle);
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_LOCATE_ANSWERS, 1);
    (void)mca_btl_ofi_msg_send(rail, origin, &answer, sizeof(answer));
}

/* ---- the origin: ask, and take the answer -------------------------------- */

static void mca_btl_ofi_locate_taken(mca_btl_ofi_rail_t *rail,
                                     struct mca_btl_base_endpoint_t *origin, const void *buf,
                                     size_t bytes)
{
    struct mca_btl_ofi_locate_t *locate = rail->locate;
    mca_btl_ofi_located_msg_t answer;

    (void)origin;
    if (bytes < sizeof(answer)) {
        return;
    }
    memcpy(&answer, buf, sizeof(answer));
    OPAL_THREAD_LOCK(&locate->lock);
    for (int i = 0; i < MCA_BTL_OFI_LOCATE_SLOTS; ++i) {
        mca_btl_ofi_locate_slot_t *slot = &locate->slots[i];

        if (MCA_BTL_OFI_LOCATE_ASKING == slot->state && slot->serial == answer.serial) {
            slot->state = answer.found ? MCA_BTL_OFI_LOCATE_FOUND : MCA_BTL_OFI_LOCATE_ABSENT;
            slot->handle = answer.handle;
            break;
        }
    }
    OPAL_THREAD_UNLOCK(&locate->lock);
}

void mca_btl_ofi_locate_start(mca_btl_ofi_rail_t *rail)
{
    struct mca_btl_ofi_locate_t *locate;

    if (NULL == rail->msg || NULL == (locate = calloc(1, sizeof(*locate)))) {
        return;
    }
    OBJ_CONSTRUCT(&locate->lock, opal_mutex_t);
    rail->locate = locate;
    mca_btl_ofi_msg_on(rail, MCA_BTL_OFI_MSG_LOCATE, mca_btl_ofi_locate_answer);
    mca_btl_ofi_msg_on(rail, MCA_BTL_OFI_MSG_LOCATED, mca_btl_ofi_locate_taken);
}

void mca_btl_ofi_locate_stop(mca_btl_ofi_rail_t *rail)
{
    if (NULL != rail->locate) {
        OBJ_DESTRUCT(&rail->locate->lock);
        free(rail->locate);
        rail->locate = NULL;
    }
}

/* Under the lock: the slot of this access, else NULL. */
static mca_btl_ofi_locate_slot_t *mca_btl_ofi_locate_find(struct mca_btl_ofi_locate_t *locate,
                                                          struct mca_btl_base_endpoint_t *endpoint,
                                                          uint64_t address, size_t size)
{
    for (int i = 0; i < MCA_BTL_OFI_LOCATE_SLOTS; ++i) {
        mca_btl_ofi_locate_slot_t *slot = &locate->slots[i];

        if (MCA_BTL_OFI_LOCATE_FREE != slot->state && slot->endpoint == endpoint &&
            slot->address == address && slot->size == size) {
            return slot;
        }
    }
    return NULL;
}

/* Under the lock: a slot for a new question (a free one, else the oldest answered); NULL
 * when every slot waits for an answer. */
static mca_btl_ofi_locate_slot_t *mca_btl_ofi_locate_slot(struct mca_btl_ofi_locate_t *locate)
{
    mca_btl_ofi_locate_slot_t *oldest = NULL;

    for (int i = 0; i < MCA_BTL_OFI_LOCATE_SLOTS; ++i) {
        mca_btl_ofi_locate_slot_t *slot = &locate->slots[i];

        if (MCA_BTL_OFI_LOCATE_FREE == slot->state) {
            return slot;
        }
        if (MCA_BTL_OFI_LOCATE_ASKING != slot->state &&
            (NULL == oldest || slot->serial < oldest->serial)) {
            oldest = slot;
        }
    }
    return oldest;
}

static int mca_btl_ofi_locate_refuse(struct mca_btl_base_endpoint_t *endpoint, uint64_t address,
                                     size_t size, const char *why)
{
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_REFUSED, 1);
    opal_output_verbose(10, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "refused an access of %zu bytes at %#" PRIx64 " of %s: %s",
                        size, address, OPAL_NAME_PRINT(endpoint->proc->proc_name), why);
    return OPAL_ERR_BAD_PARAM;
}

int mca_btl_ofi_locate_own(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                           uint64_t address, size_t size, mca_btl_ofi_target_t *target)
{
    mca_btl_base_registration_handle_t handle;

    if (0 != opal_compare_proc(endpoint->proc->proc_name, opal_proc_local_get()->proc_name)) {
        return mca_btl_ofi_locate_refuse(endpoint, address, size, "no registration handle");
    }
    if (!mca_btl_ofi_reg_own(rail, address, size, &handle)) {
        return mca_btl_ofi_locate_refuse(endpoint, address, size,
                                         "no registration handle, and no registration of this "
                                         "process's private memory covers it");
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_SELF_SERVED, 1);
    mca_btl_ofi_target_in(rail, &handle, address, target);
    return OPAL_SUCCESS;
}

/* Send the question of a slot just taken (under no lock). */
static int mca_btl_ofi_locate_ask(mca_btl_ofi_rail_t *rail,
                                  struct mca_btl_base_endpoint_t *endpoint, uint64_t address,
                                  size_t size, uint64_t serial)
{
    mca_btl_ofi_locate_msg_t question = {.serial = serial, .address = address, .size = size};

    mca_btl_ofi_msg_header_init(&question.header, MCA_BTL_OFI_MSG_LOCATE, sizeof(question));
    return mca_btl_ofi_msg_send(rail, endpoint, &question, sizeof(question));
}

/* An answered question taken (under the lock, released here): its answer for this access. */
static int mca_btl_ofi_locate_answered(mca_btl_ofi_rail_t *rail,
                                       struct mca_btl_base_endpoint_t *endpoint,
                                       mca_btl_ofi_locate_slot_t *slot, uint64_t address,
                                       size_t size, mca_btl_ofi_target_t *target)
{
    const mca_btl_ofi_locate_slot_t answered = *slot;

    slot->state = MCA_BTL_OFI_LOCATE_FREE; /* one answer, one retry */
    atomic_fetch_sub(&rail->locating, 1);
    OPAL_THREAD_UNLOCK(&rail->locate->lock);
    if (MCA_BTL_OFI_LOCATE_ABSENT == answered.state ||
        !mca_btl_ofi_handle_covers(&answered.handle, address, size)) {
        return mca_btl_ofi_locate_refuse(endpoint, address, size,
                                         "no registration of the peer covers it");
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_HANDLES_LOCATED, 1);
    mca_btl_ofi_target_in(rail, &answered.handle, address, target);
    return OPAL_SUCCESS;
}

/* A new question in a free slot (under the lock, released here), sent; OUT_OF_RESOURCE until
 * its answer comes, or the refusal where asking failed. */
static int mca_btl_ofi_locate_question(mca_btl_ofi_rail_t *rail,
                                       struct mca_btl_base_endpoint_t *endpoint,
                                       mca_btl_ofi_locate_slot_t *slot, uint64_t address,
                                       size_t size)
{
    struct mca_btl_ofi_locate_t *locate = rail->locate;
    uint64_t serial;
    int rc;

    if (MCA_BTL_OFI_LOCATE_FREE == slot->state) {
        atomic_fetch_add(&rail->locating, 1);
    }
    serial = ++locate->serial;
    *slot = (mca_btl_ofi_locate_slot_t){.state = MCA_BTL_OFI_LOCATE_ASKING,
                                        .endpoint = endpoint,
                                        .address = address,
                                        .size = size,
                                        .serial = serial};
    OPAL_THREAD_UNLOCK(&locate->lock);

    mca_btl_ofi_count(MCA_BTL_OFI_CNT_HANDLES_STALE, 1);
    opal_output_verbose(20, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "the handle of an access of %zu bytes at %#" PRIx64
                                        " of %s does not cover it: asking the peer",
                        size, address, OPAL_NAME_PRINT(endpoint->proc->proc_name));
    rc = mca_btl_ofi_locate_ask(rail, endpoint, address, size, serial);
    if (OPAL_SUCCESS == rc) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    OPAL_THREAD_LOCK(&locate->lock);
    if (slot->serial == serial) {
        slot->state = MCA_BTL_OFI_LOCATE_FREE;
        atomic_fetch_sub(&rail->locating, 1);
    }
    OPAL_THREAD_UNLOCK(&locate->lock);
    return OPAL_ERR_OUT_OF_RESOURCE == rc
               ? rc
               : mca_btl_ofi_locate_refuse(endpoint, address, size,
                                           "asking the peer for its registration failed");
}

int mca_btl_ofi_locate(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                       const struct mca_btl_base_registration_handle_t *handle, uint64_t address,
                       size_t size, mca_btl_ofi_target_t *target)
{
    struct mca_btl_ofi_locate_t *locate = rail->locate;
    mca_btl_ofi_locate_slot_t *slot;

    if (NULL == locate) {
        if (NULL != handle) {
            mca_btl_ofi_target_in(rail, handle, address, target);
            return OPAL_SUCCESS;
        }
        return mca_btl_ofi_locate_refuse(endpoint, address, size,
                                         "its registration handle does not cover it, and the "
                                         "peer cannot be asked (no messages on this provider)");
    }
    OPAL_THREAD_LOCK(&locate->lock);
    slot = mca_btl_ofi_locate_find(locate, endpoint, address, size);
    if (NULL != slot && MCA_BTL_OFI_LOCATE_ASKING != slot->state) {
        return mca_btl_ofi_locate_answered(rail, endpoint, slot, address, size, target);
    }
    if (NULL != slot) {
        OPAL_THREAD_UNLOCK(&locate->lock);
        return OPAL_ERR_OUT_OF_RESOURCE; /* asked already, no answer yet */
    }
    if (NULL != handle) {
        OPAL_THREAD_UNLOCK(&locate->lock); /* nothing asked about this one, and it covers */
        mca_btl_ofi_target_in(rail, handle, address, target);
        return OPAL_SUCCESS;
    }
    if (NULL == (slot = mca_btl_ofi_locate_slot(locate))) {
        OPAL_THREAD_UNLOCK(&locate->lock);
        return OPAL_ERR_OUT_OF_RESOURCE; /* every slot is waiting for an answer */
    }
    return mca_btl_ofi_locate_question(rail, endpoint, slot, address, size);
}
