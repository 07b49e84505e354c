/*
 * btl-ofi operation: the context of one libfabric operation and what runs when
 * its completion arrives. The type alone, at the bottom for every layer to use;
 * contexts are taken, posted and progressed in btl_ofi_ops.c.
 */

#ifndef MCA_BTL_OFI_OP_H
#define MCA_BTL_OFI_OP_H

#include "btl_ofi_mr.h"

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_list.h"

BEGIN_C_DECLS

/** Run when an operation's completion, or its error, arrives (status). */
typedef void (*mca_btl_ofi_op_complete_fn_t)(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op,
                                             int status);
/** Post an operation again after it met -FI_EAGAIN inside progress. */
typedef void (*mca_btl_ofi_op_repost_fn_t)(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op);

/** Emulation state of an atomic the provider lacks (compare-and-swap loop, btl_ofi_atomics.c). */
typedef struct mca_btl_ofi_emulation_t {
    mca_btl_base_atomic_op_t op;
    int dt;               /**< datatype index */
    bool fetching;        /**< the caller wants the old value */
    uint64_t operand;     /**< the caller's operand */
    uint64_t target_addr; /**< already translated remote address */
    uint64_t key;
} mca_btl_ofi_emulation_t;

/** One outstanding libfabric operation. Its fi_context2 is the libfabric context. */
struct mca_btl_ofi_op_t {
    opal_free_list_item_t super;
    struct fi_context2 fi_ctx;
    mca_btl_ofi_op_complete_fn_t complete; /**< set when posted */
    mca_btl_ofi_op_repost_fn_t repost;     /**< set when deferred */
    struct mca_btl_base_endpoint_t *endpoint;
    void *local_address;
    struct mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext;
    void *cbdata;
    /* Buffers the provider reads or writes until the operation completes; under
     * FI_MR_LOCAL they live in a registered slab (words_desc), else in inline_words. */
    mca_btl_ofi_words_t *words;
    void *words_desc;
    mca_btl_ofi_words_t inline_words;
    /** FI_MR_LOCAL and a caller without a local handle: registered for this op only */
    struct mca_btl_ofi_reg_t *transient;
    mca_btl_ofi_emulation_t emu;
    struct mca_btl_ofi_op_t *parent; /**< a put's proof read: the put it proves */
    /** a put waiting for its proof: completions still to come (its own and its proof's) */
    atomic_int pending;
    int status; /**< a put waiting for its proof: first error of the two, else OPAL_SUCCESS */
    /** a put that coalescing counts as in flight to its peer (btl_ofi_coalesce.c): that
     *  peer's count, which releasing the operation counts down; else NULL */
    atomic_int *in_flight;
    /** a get answered by messages (btl_ofi_am.c): bytes still to arrive */
    atomic_uint_fast64_t am_remaining;
    /** on a watched rail (btl_ofi_fault.c): its list of operations taken, and whether
     *  this one is on it */
    struct mca_btl_ofi_op_t *posted_prev, *posted_next;
    bool listed;
    /** a fetching atomic its poster waits for inside the call (mca_btl_ofi_op_await): set
     *  true when it finishes; else NULL */
    bool *awaited;
};
OBJ_CLASS_DECLARATION(mca_btl_ofi_op_t);

/** Complete an operation: run the handler it was posted with. */
static inline void mca_btl_ofi_op_complete(mca_btl_ofi_rail_t *rail, mca_btl_ofi_op_t *op,
                                           int status)
{
    op->complete(rail, op, status);
}

/** Move every item of src, which lock guards, to the end of dst (a list of the caller's). */
static inline void mca_btl_ofi_list_take(opal_list_t *dst, opal_list_t *src, opal_mutex_t *lock)
{
    OPAL_THREAD_LOCK(lock);
    opal_list_join(dst, opal_list_get_end(dst), src);
    OPAL_THREAD_UNLOCK(lock);
}

END_C_DECLS

#endif /* MCA_BTL_OFI_OP_H */
