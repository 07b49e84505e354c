/*
 * btl-ofi: a network CQ left unread until the kernel says it has something to do
 * (btl_ofi_wake.h says what and why; NOTES.txt section 2c).
 *
 * The ring is set up with the raw system calls (io_uring_setup(2), io_uring_enter(2)) and
 * the layout <linux/io_uring.h> gives: no liburing needed. A poll that completes is posted
 * from the process's own context. With IORING_SETUP_COOP_TASKRUN | TASKRUN_FLAG (Linux 5.19
 * and later) the kernel flags that in the ring, and the process lets it post it with one
 * io_uring_enter when it looks; without them (older kernels refuse the flags: EINVAL) it
 * interrupts the process for it, even while it spins in user space (an IPI; on a virtual
 * machine an exit to the hypervisor: NOTES.txt 2c measured that dearer). The flags' values
 * are the kernel's ABI, given here where the headers are older than the kernel may be.
 */

#include "btl_ofi_wake.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__) && defined(__has_include)
#if __has_include(<linux/io_uring.h>)
#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#endif
#endif
#if defined(IORING_OFF_SQ_RING) && defined(__NR_io_uring_setup) && defined(__NR_io_uring_enter)
#define MCA_BTL_OFI_HAVE_IO_URING 1
#ifndef IORING_FEAT_SINGLE_MMAP
#define IORING_FEAT_SINGLE_MMAP (1U << 0)
#endif
#ifndef IORING_SETUP_COOP_TASKRUN
#define IORING_SETUP_COOP_TASKRUN (1U << 8)
#endif
#ifndef IORING_SETUP_TASKRUN_FLAG
#define IORING_SETUP_TASKRUN_FLAG (1U << 9)
#endif
#ifndef IORING_SQ_TASKRUN
#define IORING_SQ_TASKRUN (1U << 2)
#endif
#else
#define MCA_BTL_OFI_HAVE_IO_URING 0
#endif

#include "btl_ofi_params.h"
#include "btl_ofi_pvar.h"

/* auto (-1): libfabric 2 and later. 1.17's tcp;ofi_rxm pays for a CQ with a wait
 * descriptor on every round trip (its progress then polls the wait set with epoll_wait),
 * which costs operations to other nodes 10-15%; 2.1's does not (NOTES.txt 2c). */
static bool mca_btl_ofi_wake_on(void)
{
    return 1 == mca_btl_ofi_params.wake ||
           (-1 == mca_btl_ofi_params.wake && FI_MAJOR(fi_version()) >= 2);
}

bool mca_btl_ofi_wake_wanted(const mca_btl_ofi_rail_t *rail)
{
    if (!MCA_BTL_OFI_HAVE_IO_URING || !mca_btl_ofi_wake_on() ||
        0 == mca_btl_ofi_params.idle_poll_ratio ||
        FI_PROGRESS_MANUAL != rail->info->domain_attr->data_progress) {
        return false;
    }
    return rail->config.paced;
}

#if MCA_BTL_OFI_HAVE_IO_URING

static void mca_btl_ofi_wake_ring_free(mca_btl_ofi_wake_ring_t *ring)
{
    for (int i = 0; i < 3; ++i) {
        if (NULL != ring->maps[i] && MAP_FAILED != ring->maps[i]) {
            munmap(ring->maps[i], ring->map_sizes[i]);
        }
    }
    if (0 <= ring->ring_fd) {
        close(ring->ring_fd);
    }
    free(ring);
}

static void *mca_btl_ofi_wake_map(mca_btl_ofi_wake_ring_t *ring, int i, size_t size, off_t what)
{
    ring->map_sizes[i] = size;
    ring->maps[i] =
        mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring->ring_fd, what);
    return MAP_FAILED == ring->maps[i] ? NULL : ring->maps[i];
}

/* A ring of 2 entries (one poll in flight at a time), or NULL with errno set. */
static mca_btl_ofi_wake_ring_t *mca_btl_ofi_wake_ring_new(void)
{
    struct io_uring_params params;
    mca_btl_ofi_wake_ring_t *ring = calloc(1, sizeof(*ring));
    size_t sq_size, cq_size;
    char *sq, *cq;
    int saved;

    if (NULL == ring) {
        return NULL;
    }
    /* the kernel flags a completed poll in the ring rather than interrupt the process for
     * it (5.19 and later; else it interrupts) */
    memset(&params, 0, sizeof(params));
    params.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
    ring->ring_fd = (int)syscall(__NR_io_uring_setup, 2, &params);
    if (0 > ring->ring_fd && EINVAL == errno) {
        memset(&params, 0, sizeof(params));
        ring->ring_fd = (int)syscall(__NR_io_uring_setup, 2, &params);
    }
    if (0 > ring->ring_fd) {
        saved = errno;
        free(ring);
        errno = saved;
        return NULL;
    }
    sq_size = params.sq_off.array + params.sq_entries * sizeof(unsigned);
    cq_size = params.cq_off.cqes + params.cq_entries * sizeof(struct io_uring_cqe);
    if (params.features & IORING_FEAT_SINGLE_MMAP) {
        sq_size = cq_size = sq_size > cq_size ? sq_size : cq_size;
    }
    sq = mca_btl_ofi_wake_map(ring, 0, sq_size, IORING_OFF_SQ_RING);
    cq = NULL == sq ? NULL
         : (params.features & IORING_FEAT_SINGLE_MMAP)
             ? sq
             : mca_btl_ofi_wake_map(ring, 1, cq_size, IORING_OFF_CQ_RING);
    ring->sqes =
        NULL == cq ? NULL
                   : mca_btl_ofi_wake_map(ring, 2, params.sq_entries * sizeof(struct io_uring_sqe),
                                          IORING_OFF_SQES);
    if (NULL == ring->sqes) {
        saved = errno;
        mca_btl_ofi_wake_ring_free(ring);
        errno = saved;
        return NULL;
    }
    ring->sq_flags = (unsigned *)(sq + params.sq_off.flags);
    ring->taskrun = (params.flags & IORING_SETUP_TASKRUN_FLAG) ? IORING_SQ_TASKRUN : 0;
    ring->sq_tail = (unsigned *)(sq + params.sq_off.tail);
    ring->sq_mask = (unsigned *)(sq + params.sq_off.ring_mask);
    ring->sq_array = (unsigned *)(sq + params.sq_off.array);
    ring->cq_head = (unsigned *)(cq + params.cq_off.head);
    ring->cq_tail = (unsigned *)(cq + params.cq_off.tail);
    return ring;
}

/* One poll of fd for input, submitted: 0, or an errno. */
static int mca_btl_ofi_wake_submit(mca_btl_ofi_wake_ring_t *ring, int fd)
{
    unsigned tail = *ring->sq_tail, index = tail & *ring->sq_mask;
    struct io_uring_sqe *sqe = (struct io_uring_sqe *)ring->sqes + index;

    memset(sqe, 0, sizeof(*sqe));
    sqe->opcode = IORING_OP_POLL_ADD;
    sqe->fd = fd;
    /* the 16-bit field every kernel reads (5.9 and later read a 32-bit one whose half it
     * is, arranged so that this stays right on either byte order); POLLIN fits in it */
    sqe->poll_events = POLLIN;
    sqe->user_data = 1;
    ring->submitter = pthread_self();
    ring->sq_array[index] = index;
    __atomic_store_n(ring->sq_tail, tail + 1, __ATOMIC_RELEASE);
    errno = 0;
    if (1 != syscall(__NR_io_uring_enter, ring->ring_fd, 1, 0, 0, NULL, 0)) {
        return 0 != errno ? errno : EIO;
    }
    return 0;
}

void mca_btl_ofi_wake_settle(mca_btl_ofi_rail_t *rail)
{
    mca_btl_ofi_wake_ring_t *ring = rail->wake_ring;
    unsigned head = __atomic_load_n(ring->cq_head, __ATOMIC_RELAXED);

    if (head == __atomic_load_n(ring->cq_tail, __ATOMIC_ACQUIRE)) {
        /* flagged only: the kernel posts it now */
        (void)syscall(__NR_io_uring_enter, ring->ring_fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
    }
    if (head == __atomic_load_n(ring->cq_tail, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&rail->wake_state, MCA_BTL_OFI_WAKE_ARMED, __ATOMIC_RELEASE);
        return;
    }
    /* FIRED: no other thread touches the head meanwhile */
    __atomic_store_n(ring->cq_head, head + 1, __ATOMIC_RELEASE);
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_WOKEN, 1);
    __atomic_store_n(&rail->wake_state, MCA_BTL_OFI_WAKE_IDLE, __ATOMIC_RELEASE);
}

void mca_btl_ofi_wake_attach(mca_btl_ofi_rail_t *rail)
{
    const char *domain = rail->info->domain_attr->name;
    int fd = -1, rc;

    rail->wake_state = MCA_BTL_OFI_WAKE_NONE;
    rc = fi_control(&rail->cq->fid, FI_GETWAIT, &fd);
    if (0 != rc || 0 > fd) {
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "%s: no wait descriptor of its CQ (%s): read at "
                                            "the pace alone",
                            domain, fi_strerror(-rc));
        return;
    }
    rail->wake_ring = mca_btl_ofi_wake_ring_new();
    if (NULL == rail->wake_ring) {
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "%s: no io_uring here (io_uring_setup: %s): its CQ "
                                            "is read at the pace alone",
                            domain, strerror(errno));
        return;
    }
    rail->wake_fd = fd;
    rail->wake_passes = 0;
    rail->wake_state = MCA_BTL_OFI_WAKE_IDLE;
    opal_output_verbose(10, mca_btl_ofi_output,
                        MCA_BTL_OFI_LOG "%s: its CQ is left unread while idle, until an "
                                        "io_uring poll of its descriptor completes",
                        domain);
}

void mca_btl_ofi_wake_detach(mca_btl_ofi_rail_t *rail)
{
    if (NULL != rail->wake_ring) {
        mca_btl_ofi_wake_ring_free(rail->wake_ring);
        rail->wake_ring = NULL;
    }
    rail->wake_state = MCA_BTL_OFI_WAKE_NONE;
}

bool mca_btl_ofi_wake_arm(mca_btl_ofi_rail_t *rail, uint64_t now)
{
    struct fid *cq = &rail->cq->fid;
    int idle = MCA_BTL_OFI_WAKE_IDLE, rc;

    /* one thread arms it (several may make progress) */
    if (!__atomic_compare_exchange_n(&rail->wake_state, &idle, MCA_BTL_OFI_WAKE_ARMING, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        return MCA_BTL_OFI_WAKE_ARMED == idle;
    }
    /* 0: nothing is left for this process's calls to do, the descriptor tells the rest */
    if (0 != fi_trywait(rail->fabric, &cq, 1)) {
        __atomic_store_n(&rail->wake_state, MCA_BTL_OFI_WAKE_IDLE, __ATOMIC_RELEASE);
        return false;
    }
    rc = mca_btl_ofi_wake_submit(rail->wake_ring, rail->wake_fd);
    if (0 != rc) {
        /* the rail stays ARMING, which nothing arms or fires: the pace alone (its ring,
         * a pending poll perhaps with it, goes at finalize) */
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "%s: io_uring poll not submitted (%s): its CQ is "
                                            "read at the pace alone from now on",
                            rail->info->domain_attr->name, strerror(rc));
        return false;
    }
    rail->wake_passes = 0;
    rail->wake_safety_next = now + MCA_BTL_OFI_WAKE_SAFETY_NS;
    __atomic_store_n(&rail->wake_state, MCA_BTL_OFI_WAKE_ARMED, __ATOMIC_RELEASE);
    mca_btl_ofi_count(MCA_BTL_OFI_CNT_CQ_ARMED, 1);
    return true;
}

#else /* no io_uring: mca_btl_ofi_wake_wanted says no, so none of these is reached */

void mca_btl_ofi_wake_settle(mca_btl_ofi_rail_t *rail)
{
    (void)rail;
}

void mca_btl_ofi_wake_attach(mca_btl_ofi_rail_t *rail)
{
    rail->wake_state = MCA_BTL_OFI_WAKE_NONE;
}

void mca_btl_ofi_wake_detach(mca_btl_ofi_rail_t *rail)
{
    rail->wake_state = MCA_BTL_OFI_WAKE_NONE;
}

bool mca_btl_ofi_wake_arm(mca_btl_ofi_rail_t *rail, uint64_t now)
{
    (void)rail;
    (void)now;
    return false;
}

#endif
