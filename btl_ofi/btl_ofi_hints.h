/*
 * btl-ofi fi_getinfo hints (btl_ofi_hints.c): what one fi_getinfo call asks
 * of the providers, the capability sets discovery tries in turn, the ordering
 * read proofs need, and the MR mode bits by name (btl_ofi_mr_mode).
 */

#ifndef MCA_BTL_OFI_HINTS_H
#define MCA_BTL_OFI_HINTS_H

#include "btl_ofi.h"

BEGIN_C_DECLS

/* Every MR mode bit libfabric 1.x defines: asked for only to explain refusals. */
#define MCA_BTL_OFI_MR_ALL                                                                         \
    (FI_MR_LOCAL | FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |                \
     FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT | FI_MR_ENDPOINT | FI_MR_HMEM)

/* What btl-ofi always needs, what it takes when granted, and what carries the rest. */
#define MCA_BTL_OFI_CAPS_RMA (FI_RMA | FI_WRITE | FI_REMOTE_WRITE)
#define MCA_BTL_OFI_CAPS_READ (FI_READ | FI_REMOTE_READ)
#define MCA_BTL_OFI_CAPS_MSG (FI_MSG | FI_SEND | FI_RECV)
#define MCA_BTL_OFI_CAPS_ALL (MCA_BTL_OFI_CAPS_RMA | MCA_BTL_OFI_CAPS_READ | FI_ATOMIC)

/** What one fi_getinfo call asks of the providers. */
typedef struct mca_btl_ofi_ask_t {
    uint64_t caps; /**< 0: MCA_BTL_OFI_CAPS_ALL */
    uint64_t mr_mode;
    uint64_t op_flags;
    uint64_t msg_order;
    /** FI_HMEM at API 1.18: some providers (shm) pick other protocols for such endpoints */
    bool hmem;
} mca_btl_ofi_ask_t;

/**
 * Ask fi_getinfo for list's one provider name only, for the discovery under
 * way (until the next call): what `fi_info -p NAME` lists, which is what a
 * name stands for (mca_btl_ofi_names), and no other provider's fi_getinfo
 * runs. A NULL list, or one of another length, asks every provider again.
 *
 * @param list (IN) provider names to include (an opal argv), or NULL
 * @retval whether one name is now asked for
 */
bool mca_btl_ofi_hint_set(char *const *list);

/**
 * The RDM providers granting what ask asks, as libfabric lists them: the
 * thread level MPI asked for, manual data progress, FI_CONTEXT | FI_CONTEXT2.
 *
 * @param ask                (IN) capabilities, MR mode, op_flags, msg_order, FI_HMEM
 * @param enable_mpi_threads (IN) whether MPI_THREAD_MULTIPLE was requested
 * @retval the list (the caller frees it with fi_freeinfo), or NULL
 */
struct fi_info *mca_btl_ofi_getinfo(const mca_btl_ofi_ask_t *ask, bool enable_mpi_threads);

/**
 * The capability sets to ask for, best first: atomics and RMA read, then
 * without atomics, without read, without both. What a set leaves out travels
 * as messages, so such a set asks for FI_MSG as well. btl_ofi_atomics and
 * btl_ofi_gets set to native keep the cap in every set; set to messages they
 * leave it out of every set (as on a provider without it).
 *
 * @param sets (OUT) the sets, distinct
 * @retval how many
 */
int mca_btl_ofi_cap_sets(uint64_t sets[4]);

/**
 * The ordering that makes a read a proof that earlier writes (and, where the
 * provider's own atomics are used, atomics) landed.
 *
 * @param caps (IN) the capability set asked for
 * @retval the msg_order bits to ask for (none with btl_ofi_debug_proof_trusts_order)
 */
uint64_t mca_btl_ofi_proof_order(uint64_t caps);

/**
 * Whether gets travel as messages with this provider: btl_ofi_gets=messages,
 * or auto and the info grants no FI_READ / FI_REMOTE_READ.
 *
 * @param info (IN) the provider in use
 * @retval true for messages, false for the provider's RMA read
 */
bool mca_btl_ofi_gets_by_messages(const struct fi_info *info);

/**
 * Parse btl_ofi_mr_mode: "none", a comma list of virt_addr/prov_key/allocated,
 * or a number made of those bits.
 *
 * @param text (IN) the parameter's value
 * @param mask (OUT) the bits
 * @retval OPAL_SUCCESS with *mask set, or OPAL_ERR_BAD_PARAM (mask untouched)
 */
int mca_btl_ofi_mr_mode_parse(const char *text, uint64_t *mask);

/**
 * Human-readable list of MR mode bits, e.g. "virt_addr|prov_key".
 *
 * @param mr_mode (IN) the bits
 * @param buf     (OUT) where the text goes
 * @param len     (IN) its size
 * @retval buf ("none" for no bit)
 */
const char *mca_btl_ofi_mr_mode_str(uint64_t mr_mode, char *buf, size_t len);

END_C_DECLS

#endif /* MCA_BTL_OFI_HINTS_H */
