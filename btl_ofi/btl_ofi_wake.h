/*
 * btl-ofi: a network CQ left unread until the kernel says it has something to do
 * (btl_ofi_wake.c; NOTES.txt section 2c).
 *
 * A network rail beside others (peers on this node over the node-local provider,
 * further NICs) reads its CQ at a pace while nothing of its own is in flight on it
 * (btl_ofi_pace.c): a read of an idle tcp;ofi_rxm CQ is a system call, and such reads
 * every 20 us, with the clock reads of the pace, cost the on-node operations they fall
 * among some 10-15% (NOTES.txt 2c). Where the provider applies peers' operations only
 * inside this process's calls (data_progress FI_PROGRESS_MANUAL: tcp, sockets over rxm),
 * the pace is also how late a peer on another node is served.
 *
 * With btl_ofi_wake (Linux io_uring; by default with libfabric 2 and later: NOTES.txt 2c
 * says what it costs operations to other nodes on libfabric 1.17), such a rail's CQ is
 * opened with a descriptor to wait on (FI_WAIT_FD). When the pace would pause after
 * MCA_BTL_OFI_WAKE_QUIET_READS quiet reads in a row, fi_trywait asks the provider whether
 * anything is left for this process's calls to do; if not, the rail is armed: one poll
 * of that descriptor (IORING_OP_POLL_ADD, one shot) is submitted to a ring of the rail's
 * own. The CQ is then not read, and the clock not looked at, until the ring shows the poll
 * done (a peer's request or a completion made the descriptor readable), or
 * MCA_BTL_OFI_WAKE_SAFETY_PASSES progress calls went by and MCA_BTL_OFI_WAKE_SAFETY_NS with
 * them (for what the descriptor may not show). A look at the ring is a load or two: where
 * the kernel can (5.19 and later) it flags a completed poll in the ring and the process
 * lets it post it with one io_uring_enter, made after the CQ read the flag called for,
 * rather than being interrupted for it.
 */

#ifndef MCA_BTL_OFI_WAKE_H
#define MCA_BTL_OFI_WAKE_H

#include "btl_ofi_rail.h"

#include <pthread.h>

BEGIN_C_DECLS

/** rail->wake_state */
enum {
    MCA_BTL_OFI_WAKE_NONE = 0, /**< no ring: the pace alone */
    MCA_BTL_OFI_WAKE_IDLE,     /**< read at the pace, armed when it would pause */
    MCA_BTL_OFI_WAKE_ARMED,    /**< a poll of its descriptor pending in the ring: left unread */
    MCA_BTL_OFI_WAKE_ARMING,   /**< one thread is arming it (fi_trywait, the submission) */
    MCA_BTL_OFI_WAKE_FIRED,    /**< its poll done or flagged: one thread reads the CQ, then
                                    takes the poll's completion (mca_btl_ofi_wake_settle) */
};

/** Quiet reads in a row (nothing came, nothing of its own in flight) before a rail is
 *  armed: fi_trywait costs system calls, so none while operations of its own come and go
 *  (a pause between them, a read that finds their completions, and so on). */
#define MCA_BTL_OFI_WAKE_QUIET_READS 2u

/** An armed rail's CQ is read all the same after this many progress calls that found
 *  its ring quiet, once this much time has gone by as well (the clock is read then only). */
#define MCA_BTL_OFI_WAKE_SAFETY_PASSES 64u
#define MCA_BTL_OFI_WAKE_SAFETY_NS 1000000u

/** A rail's ring (btl_ofi_wake.c): where its completion queue's head and tail are. */
typedef struct mca_btl_ofi_wake_ring_t {
    unsigned *cq_head, *cq_tail;
    /** the ring's flags, and the one that says the kernel has work for this process to
     *  let it do (a poll completed: IORING_SQ_TASKRUN; 0 where the kernel interrupts the
     *  process for it instead) */
    unsigned *sq_flags, taskrun;
    /** the thread that submitted the pending poll: only its own system calls let the
     *  kernel post that poll's completion (task work is the submitter's) */
    pthread_t submitter;
    unsigned *sq_tail, *sq_mask, *sq_array;
    void *sqes;
    int ring_fd;
    void *maps[3];
    size_t map_sizes[3];
} mca_btl_ofi_wake_ring_t;

/** Whether rail's CQ should be opened with FI_WAIT_FD (before fi_cq_open): the
 *  parameter allows it, the provider needs this process's progress, and the rail will
 *  be read at a pace (config.paced: a network rail beside others). */
bool mca_btl_ofi_wake_wanted(const mca_btl_ofi_rail_t *rail);

/** After rail's CQ was opened with FI_WAIT_FD: takes its descriptor and sets up the
 *  ring. Nothing is armed yet; on any failure (said at verbose 10) the rail keeps the
 *  pace alone. */
void mca_btl_ofi_wake_attach(mca_btl_ofi_rail_t *rail);

/** Before rail's CQ is closed: its ring closed (a pending poll goes with it). */
void mca_btl_ofi_wake_detach(mca_btl_ofi_rail_t *rail);

/** Where rail's pace would pause now (now: the clock just read): fi_trywait, and arms
 *  rail where it says nothing is left to do; its CQ is read all the same from
 *  now + MCA_BTL_OFI_WAKE_SAFETY_NS. @return whether rail is armed (also where it was
 *  already) */
bool mca_btl_ofi_wake_arm(mca_btl_ofi_rail_t *rail, uint64_t now);

/** An armed rail: whether its poll is done (its completion in the ring) or the kernel
 *  has flagged it so (the completion not posted yet: IORING_SQ_TASKRUN; seen by the thread
 *  that submitted the poll, the one whose system call lets the kernel post it); then the
 *  calling thread, and it alone, has it (MCA_BTL_OFI_WAKE_FIRED): it reads the CQ at once
 *  and calls mca_btl_ofi_wake_settle after. The io_uring_enter that posts a flagged
 *  completion waits until after that read: the peer whose request made the descriptor
 *  readable is served one system call sooner. */
static inline bool mca_btl_ofi_wake_fired(mca_btl_ofi_rail_t *rail)
{
    mca_btl_ofi_wake_ring_t *ring = rail->wake_ring;
    int armed = MCA_BTL_OFI_WAKE_ARMED;

    if (__atomic_load_n(ring->cq_head, __ATOMIC_ACQUIRE) ==
            __atomic_load_n(ring->cq_tail, __ATOMIC_ACQUIRE) &&
        (0 == (__atomic_load_n(ring->sq_flags, __ATOMIC_ACQUIRE) & ring->taskrun) ||
         !pthread_equal(pthread_self(), ring->submitter))) {
        return false;
    }
    /* taken by one thread where several make progress */
    return __atomic_compare_exchange_n(&rail->wake_state, &armed, MCA_BTL_OFI_WAKE_FIRED, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/** After the read that mca_btl_ofi_wake_fired called for: the poll's completion posted
 *  where it was only flagged, and taken (one poll in flight at a time: this is its; its
 *  result does not matter, the CQ was read either way; counted in cq_wake_reads); the
 *  rail is then read at the pace again, and armed anew when that would pause. Where the
 *  kernel posted nothing (the poll found the descriptor not readable after all, another
 *  thread's read having taken what made it so, and waits on) it stays armed. */
void mca_btl_ofi_wake_settle(mca_btl_ofi_rail_t *rail);

END_C_DECLS

#endif /* MCA_BTL_OFI_WAKE_H */
