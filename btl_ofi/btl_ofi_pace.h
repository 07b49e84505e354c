/*
 * btl-ofi pace (btl_ofi_pace.c): reading a rail's CQ beside other rails. The
 * rail of this node's peers is read at every pass and timed; an idle network
 * rail beside it is read at a pace (btl_ofi_idle_poll_ratio times what a quiet
 * read costs, btl_ofi_local_busy_poll_us while the rail beside it is at work),
 * or left to its wake-up (btl_ofi_wake.h). NOTES.txt 2c.
 */

#ifndef MCA_BTL_OFI_PACE_H
#define MCA_BTL_OFI_PACE_H

#include "btl_ofi_rail.h"

BEGIN_C_DECLS

/**
 * Read rail's CQ at every call while this process has operations of its own on it, else at
 * its pace: left unread for btl_ofi_idle_poll_ratio times what a quiet read costs, and read at
 * every call again for a while after a read served a peer (it cost several times a quiet one)
 * or returned completions; armed rails are read when their poll fires.
 *
 * @param beside (IN) the rail read at every pass beside this one (its pause is longer while
 *                    that one is at work), or NULL
 * @param now    (IN) the clock read just before (0: read it here)
 * @retval the completions read (0 when skipped)
 */
int mca_btl_ofi_rail_progress_paced(mca_btl_ofi_rail_t *rail, mca_btl_ofi_rail_t *beside,
                                    uint64_t now);

/**
 * One pass over a node-local rail and the network rail beside it: the node-local CQ first
 * (local_too), read at every call and timed, then the network CQ (network_too) at its pace.
 *
 * @retval the completions read on both
 */
int mca_btl_ofi_rail_progress_pair(mca_btl_ofi_rail_t *local, mca_btl_ofi_rail_t *network,
                                   bool local_too, bool network_too);

END_C_DECLS

#endif /* MCA_BTL_OFI_PACE_H */
