/*
 * btl-ofi pace: how a rail's CQ is read when it sits beside others. The rail
 * that carries this node's peers is read at every pass; an idle network rail
 * beside it is read at a pace, or left to a wake-up (btl_ofi_wake.h).
 */

#include "btl_ofi_pace.h"

#include "btl_ofi_ops.h"
#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"
#include "btl_ofi_wake.h"

/* An idle paced rail's CQ (a network rail beside others with nothing of this process's own in
 * flight on it) is left unread for btl_ofi_idle_poll_ratio times what a quiet read of it costs, so
 * those reads take at most 1/(ratio + 1) of a loop that waits (a poll system call on tcp, a
 * memory read on a NIC), while one costs under MCA_BTL_OFI_IDLE_READ_MAX_NS / ratio. A peer's
 * operation that waits for this process's progress (tcp;ofi_rxm applies them at the target, and
 * says nothing to it) makes the read
 * that serves it cost MCA_BTL_OFI_IDLE_READ_BUSY times a quiet one or more (it receives
 * and answers): every pass reads it then, until MCA_BTL_OFI_IDLE_READ_EAGER quiet reads'
 * time goes by with nothing more. What a quiet read costs is the least a read cost lately:
 * a cheaper read lowers it at once, a dearer one raises it by 1/256, so the reads that
 * serve peers do not count as quiet while they come among quiet ones, and a cost that has
 * grown for good is learnt within some hundred reads. MCA_BTL_OFI_IDLE_READ_MAX_NS bounds
 * that pause. While the rail read at every pass beside it (the node-local one) is at work
 * (operations of this process's own in flight on it, or a read of it that served an on-node peer
 * within MCA_BTL_OFI_IDLE_READ_EAGER of its quiet reads' time, told the same way: a target's read
 * that applies a small operation costs less than that, and goes unseen) the pause is
 * btl_ofi_local_busy_poll_us instead (default 20 us): an on-node operation takes a
 * microsecond or so, and a network read in its wait, on either side, costs it more than
 * the read's own time. The clock is read at every pass that may skip
 * (CLOCK_MONOTONIC, vDSO: tens of ns), so a process that calls progress seldom reads the
 * CQ at each call. NOTES.txt 2c. */
#define MCA_BTL_OFI_IDLE_READ_BUSY 3
#define MCA_BTL_OFI_IDLE_READ_EAGER 64
#define MCA_BTL_OFI_IDLE_READ_MAX_NS 20000u

/* A read of rail's CQ that took cost ns, and moved (returned something, or left
 * operations of its own in flight): learns what a quiet read costs, and keeps every pass
 * reading it (eager_until) after one that moved or served a peer. @return whether it served
 * a peer (told by its cost) */
static bool mca_btl_ofi_read_cost(mca_btl_ofi_rail_t *rail, uint64_t after, uint64_t cost,
                                  bool moved)
{
    uint64_t quiet = rail->idle_read_ns;
    bool served = false;

    if (!moved) {
        rail->idle_read_ns =
            0 == quiet || cost < quiet ? (0 != cost ? cost : 1) : quiet + quiet / 256 + 1;
        served = 0 != quiet && cost >= MCA_BTL_OFI_IDLE_READ_BUSY * quiet;
    }
    if (moved || served) {
        rail->eager_until = after + MCA_BTL_OFI_IDLE_READ_EAGER * quiet;
    }
    return served;
}

/* An armed rail (its poll pending, btl_ofi_wake.h): left unread but for a look at the ring at
 * each call (*woken where it fired), and at the clock once in MCA_BTL_OFI_WAKE_SAFETY_PASSES
 * of them. @return whether to read it now (*woken tells why) */
static bool mca_btl_ofi_pace_armed_read(mca_btl_ofi_rail_t *rail, uint64_t now, bool *woken)
{
    uint64_t before;

    if (mca_btl_ofi_wake_fired(rail)) {
        *woken = true;
        return true;
    }
    if (++rail->wake_passes < MCA_BTL_OFI_WAKE_SAFETY_PASSES) {
        return false;
    }
    rail->wake_passes = 0;
    before = 0 != now ? now : mca_btl_ofi_now_ns();
    if (before < rail->wake_safety_next) {
        return false;
    }
    /* read all the same; the poll stays pending, the rail armed */
    rail->wake_safety_next = before + MCA_BTL_OFI_WAKE_SAFETY_NS;
    return true;
}

/* After a paced read: the pause before the next one, or none (eager, or left to the wake-up). */
static void mca_btl_ofi_pace_next(mca_btl_ofi_rail_t *rail, mca_btl_ofi_rail_t *beside,
                                  uint64_t after, bool moved)
{
    uint64_t pause;

    if (moved) {
        rail->wake_quiet = 0;
    } else if (rail->wake_quiet < MCA_BTL_OFI_WAKE_QUIET_READS) {
        ++rail->wake_quiet;
    }
    if (after < rail->eager_until ||
        (rail->wake_quiet >= MCA_BTL_OFI_WAKE_QUIET_READS && mca_btl_ofi_wake_arm(rail, after))) {
        return;
    }
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_PAUSES, 1);
    pause = (uint64_t)mca_btl_ofi_params.idle_poll_ratio * rail->idle_read_ns;
    if (pause > MCA_BTL_OFI_IDLE_READ_MAX_NS) {
        pause = MCA_BTL_OFI_IDLE_READ_MAX_NS;
    }
    if (NULL != beside && 0 != mca_btl_ofi_params.local_busy_poll_us &&
        (after < beside->eager_until || mca_btl_ofi_rail_busy(beside))) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_LONG_PAUSES, 1);
        pause = (uint64_t)mca_btl_ofi_params.local_busy_poll_us * 1000u;
    }
    rail->idle_read_next = after + pause;
}

int mca_btl_ofi_rail_progress_paced(mca_btl_ofi_rail_t *rail, mca_btl_ofi_rail_t *beside,
                                    uint64_t now)
{
    uint64_t before, after;
    bool moved, woken = false;
    int events;

    if (0 == mca_btl_ofi_params.idle_poll_ratio || mca_btl_ofi_rail_busy(rail)) {
        return mca_btl_ofi_rail_progress(rail);
    }
    if (MCA_BTL_OFI_WAKE_ARMED == __atomic_load_n(&rail->wake_state, __ATOMIC_ACQUIRE)) {
        if (!mca_btl_ofi_pace_armed_read(rail, now, &woken)) {
            return 0;
        }
        if (!woken) {
            return mca_btl_ofi_rail_progress(rail);
        }
    }
    before = 0 != now ? now : mca_btl_ofi_now_ns();
    if (!woken && before < rail->idle_read_next && before >= rail->eager_until) {
        return 0;
    }
    events = mca_btl_ofi_rail_progress(rail);
    if (woken) {
        /* the peer served first, the poll's completion taken after */
        mca_btl_ofi_wake_settle(rail);
    }
    after = mca_btl_ofi_now_ns();
    moved = 0 != events || mca_btl_ofi_rail_busy(rail);
    if (mca_btl_ofi_read_cost(rail, after, after - before, moved)) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_SERVING, 1);
    }
    mca_btl_ofi_pace_next(rail, beside, after, moved);
    return events;
}

int mca_btl_ofi_rail_progress_pair(mca_btl_ofi_rail_t *local, mca_btl_ofi_rail_t *network,
                                   bool local_too, bool network_too)
{
    uint64_t before, after = 0;
    int events = 0;

    if (local_too &&
        (0 == mca_btl_ofi_params.idle_poll_ratio ||
         MCA_BTL_OFI_WAKE_ARMED == __atomic_load_n(&network->wake_state, __ATOMIC_RELAXED))) {
        /* read at every pass; untimed where nothing is paced, or where the network CQ is
         * left to its io_uring poll (no pause to choose by how busy this rail is) */
        events = mca_btl_ofi_rail_progress(local);
    } else if (local_too) {
        before = mca_btl_ofi_now_ns();
        events = mca_btl_ofi_rail_progress(local);
        after = mca_btl_ofi_now_ns();
        (void)mca_btl_ofi_read_cost(local, after, after - before,
                                    0 != events || mca_btl_ofi_rail_busy(local));
    }
    if (network_too) {
        events += mca_btl_ofi_rail_progress_paced(network, local, after);
    }
    return events;
}
