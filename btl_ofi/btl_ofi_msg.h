/*
 * btl-ofi messages (btl_ofi_msg.c): fi_send / fi_recv beside RMA, for what a
 * peer's progress does on this process's behalf. Every message starts with
 * mca_btl_ofi_msg_header_t; a received one goes to the handler set for its
 * type, with the endpoint of the process that sent it.
 */

#ifndef MCA_BTL_OFI_MSG_H
#define MCA_BTL_OFI_MSG_H

#include "btl_ofi_rail.h"

#include "opal/util/proc.h"

BEGIN_C_DECLS

/** What a message is; each type has one handler. */
enum mca_btl_ofi_msg_type_t {
    MCA_BTL_OFI_MSG_PUTS = 1,    /**< gathered puts to apply (btl_ofi_coalesce.c) */
    MCA_BTL_OFI_MSG_PUTS_DONE,   /**< their answer */
    MCA_BTL_OFI_MSG_LOCATE,      /**< which registration covers an address (btl_ofi_locate.c) */
    MCA_BTL_OFI_MSG_LOCATED,     /**< its answer */
    MCA_BTL_OFI_MSG_ATOMIC,      /**< an atomic for the target to apply (btl_ofi_am.c) */
    MCA_BTL_OFI_MSG_ATOMIC_DONE, /**< its answer: applied (old value) or refused */
    MCA_BTL_OFI_MSG_GET,         /**< a get for the target to answer with the data */
    MCA_BTL_OFI_MSG_GET_DATA,    /**< one piece of that data, or the refusal */
    MCA_BTL_OFI_MSG_TYPES,
};

typedef struct mca_btl_ofi_msg_header_t {
    uint32_t magic; /**< MCA_BTL_OFI_MSG_MAGIC: anything else is not ours and is dropped */
    uint32_t type;  /**< enum mca_btl_ofi_msg_type_t */
    uint32_t bytes; /**< the whole message, this header included */
    uint32_t reserved;
    opal_process_name_t origin; /**< who sent it: where the answer goes */
} mca_btl_ofi_msg_header_t;

#define MCA_BTL_OFI_MSG_MAGIC UINT32_C(0x6274306d) /* "bt0m" */

/** The largest message mca_btl_ofi_msg_send copies (larger ones are sent by their owner). */
#define MCA_BTL_OFI_MSG_SMALL 256
/** Receive buffers kept posted when only small messages come (no coalescing). */
#define MCA_BTL_OFI_MSG_BUFFERS 8
/** Receive buffer bytes where gets travel as messages (their data in pieces). */
#define MCA_BTL_OFI_MSG_LARGE (8192 + 64)

/**
 * Handles one received message (msg, bytes as the header says, checked to fit
 * the buffer) from origin. The buffer is posted again when it returns.
 */
typedef void (*mca_btl_ofi_msg_fn_t)(mca_btl_ofi_rail_t *rail,
                                     struct mca_btl_base_endpoint_t *origin, const void *msg,
                                     size_t bytes);

/**
 * Before the fids are opened: ask for FI_MSG beside what was granted.
 *
 * @param info (INOUT) replaced (the old one freed) by an info of the same
 *             provider that also grants FI_MSG
 * @retval true messages can be sent (mca_btl_ofi_msg_start); false with a
 *         verbose line naming what that leaves out
 */
bool mca_btl_ofi_msg_prepare(struct fi_info **info);

/**
 * After the endpoint is enabled and the MR mode negotiated: post receive
 * buffers of `largest` bytes (registered once under FI_MR_LOCAL) and set
 * rail->msg. On failure rail->msg stays NULL, with a verbose line.
 *
 * @param largest (IN) the largest message a peer sends this process
 * @param buffers (IN) receive buffers to keep posted
 */
void mca_btl_ofi_msg_start(mca_btl_ofi_rail_t *rail, size_t largest, int buffers);

/** Send handler for messages of `type` to fn (before any peer can send one). */
void mca_btl_ofi_msg_on(mca_btl_ofi_rail_t *rail, enum mca_btl_ofi_msg_type_t type,
                        mca_btl_ofi_msg_fn_t fn);

/** Fill a header: magic, type, bytes, this process as origin. */
void mca_btl_ofi_msg_header_init(mca_btl_ofi_msg_header_t *header, enum mca_btl_ofi_msg_type_t type,
                                 size_t bytes);

/**
 * Send a small message (its header filled by mca_btl_ofi_msg_header_init). It
 * is copied: the caller may reuse msg at once. One the provider cannot take
 * now (-FI_EAGAIN) is sent again by progress.
 *
 * @param bytes (IN) at most MCA_BTL_OFI_MSG_SMALL
 * @retval OPAL_SUCCESS sent or queued; OPAL_ERR_OUT_OF_RESOURCE no memory;
 *         OPAL_ERROR the provider failed it (verbose line)
 */
int mca_btl_ofi_msg_send(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                         const void *msg, size_t bytes);

/**
 * mca_btl_ofi_msg_send for a request whose answer op waits for: should the message be
 * lost after this returned OPAL_SUCCESS (an error completion, or a queued post that
 * fails), op is finished with OPAL_ERROR, so it never waits for an answer that cannot
 * come. On a non-success return op is untouched (the caller releases it).
 */
int mca_btl_ofi_msg_request(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                            const void *msg, size_t bytes, mca_btl_ofi_op_t *waiting);

/**
 * Send a message made of a head (its header filled by mca_btl_ofi_msg_header_init
 * for head_bytes + bytes) and data, both copied: the caller may reuse them at
 * once. For messages larger than MCA_BTL_OFI_MSG_SMALL (the data of a get
 * answered by messages); the receiver must have buffers that large.
 *
 * @retval as mca_btl_ofi_msg_send
 */
int mca_btl_ofi_msg_send_data(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                              const void *head, size_t head_bytes, const void *data, size_t bytes);

/** The largest message this process receives (bytes of one receive buffer). */
size_t mca_btl_ofi_msg_largest(const mca_btl_ofi_rail_t *rail);

/** At finalize, before the fids are closed: release the receive buffers' registration. */
void mca_btl_ofi_msg_deregister(mca_btl_ofi_rail_t *rail);

/** At finalize, after the endpoint is closed: free buffers and queued messages. */
void mca_btl_ofi_msg_stop(mca_btl_ofi_rail_t *rail);

END_C_DECLS

#endif /* MCA_BTL_OFI_MSG_H */
