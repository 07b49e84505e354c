/*
 * btl-ofi counters as MPI_T performance variables.
 *
 * They are the proof of path: a run whose window traffic went through this
 * component shows non-zero btl_ofi_* counts, read by the rank itself through
 * MPI_T. Open MPI's own btl/ofi registers none of these names.
 */

#include "btl_ofi_pvar.h"

#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_pvar.h"

static const struct {
    const char *name;
    const char *description;
    int var_class;
} mca_btl_ofi_counter_info[MCA_BTL_OFI_CNT_MAX] = {
    [MCA_BTL_OFI_CNT_PUTS] = {"put_count", "Puts posted", MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_GETS] = {"get_count", "Gets posted", MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_PUT_BYTES] = {"put_bytes", "Bytes put", MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_GET_BYTES] = {"get_bytes", "Bytes got", MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_ATOMICS] = {"atomic_count", "Atomic operations (op, fetch-op, cswap)",
                                 MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_ATOMICS_EMULATED] = {"atomic_emulated_count",
                                          "Atomic operations served by a compare-and-swap loop",
                                          MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_ATOMICS_AWAITED] = {"atomics_awaited",
                                         "Fetching atomics that completed inside their call",
                                         MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_CQ_ENTRIES] = {"cq_entries", "Completion-queue entries reaped",
                                    MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_CQ_ERRORS] = {"cq_errors", "Completion-queue error entries",
                                   MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_FLUSHES] = {"flush_count", "Flushes", MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_PROOF_READS] = {"proof_reads",
                                     "Reads issued by flush to prove remote completion",
                                     MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_REGISTRATIONS] = {"registrations", "Memory registrations made",
                                       MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_REGISTRATIONS_LIVE] = {"registrations_live",
                                            "Memory registrations currently held",
                                            MCA_BASE_PVAR_CLASS_LEVEL},
    [MCA_BTL_OFI_CNT_POST_EAGAIN] = {"post_eagain", "Posts the provider refused with -FI_EAGAIN",
                                     MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_INJECTED] = {"injected_faults",
                                  "Debug fault injection: posts refused (-FI_EAGAIN) and keys "
                                  "corrupted on purpose",
                                  MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_TRANSIENT_REGS] = {"local_registrations",
                                        "FI_MR_LOCAL: local buffers that came without a "
                                        "registration, registered for one operation",
                                        MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_PUTS_GATHERED] = {"put_gathered",
                                       "Puts gathered into messages (btl_ofi_put_coalesce); "
                                       "put_count counts them too",
                                       MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_PUT_BATCHES] = {"put_batches", "Messages of gathered puts sent",
                                     MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_PUT_BATCHES_APPLIED] = {"put_batches_applied",
                                             "Messages of gathered puts from peers written "
                                             "into this process's registrations",
                                             MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_HANDLES_STALE] = {"handles_stale",
                                       "Accesses whose registration handle did not cover them "
                                       "(osc/rdma rewrote it under us), so the peer was asked",
                                       MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_HANDLES_LOCATED] = {"handles_located",
                                         "Accesses posted with the registration the peer named "
                                         "in its answer",
                                         MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_LOCATE_ANSWERS] = {"locate_answers",
                                        "Peers' questions about a registration answered by this "
                                        "process",
                                        MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_RCACHE_HITS] = {"rcache_hits",
                                     "Local buffers that found a cached registration",
                                     MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_RCACHE_MISSES] = {"rcache_misses",
                                       "Local buffers registered (whole pages) for the "
                                       "registration cache",
                                       MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_RCACHE_INVALIDATED] = {"rcache_invalidated",
                                            "Cached registrations forgotten because their "
                                            "memory was unmapped or given back",
                                            MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_RCACHE_EVICTED] = {"rcache_evicted",
                                        "Unused cached registrations closed to stay within "
                                        "btl_ofi_rcache_size",
                                        MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_RCACHE_ENTRIES] = {"rcache_entries",
                                        "Registrations the registration cache holds now",
                                        MCA_BASE_PVAR_CLASS_LEVEL},
    [MCA_BTL_OFI_CNT_MR_MODE] = {"mr_mode",
                                 "The memory-registration mode negotiated with the provider "
                                 "(FI_MR_* bits)",
                                 MCA_BASE_PVAR_CLASS_LEVEL},
    [MCA_BTL_OFI_CNT_KEY_SIZE] = {"mr_key_size",
                                  "The provider's memory-registration key size in bytes",
                                  MCA_BASE_PVAR_CLASS_LEVEL},
    [MCA_BTL_OFI_CNT_ATOMICS_AS_MESSAGES] = {"atomics_as_messages",
                                             "Atomics sent to the target as messages that its "
                                             "progress applies (the provider lacks atomics, or "
                                             "btl_ofi_atomics=messages)",
                                             MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_GETS_AS_MESSAGES] = {"gets_as_messages",
                                          "Gets sent to the target as requests that its "
                                          "progress answers with the data (the provider lacks "
                                          "RMA read, or btl_ofi_gets=messages)",
                                          MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_MESSAGES_APPLIED] = {"messages_applied",
                                          "Atomic and get messages of peers that this process "
                                          "applied or answered, refused ones included",
                                          MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_REGISTRATIONS_FAILED] = {"registrations_failed",
                                              "Memory registrations the provider refused (a "
                                              "NIC's limit on live registrations, or locked "
                                              "memory); see the register-failed message",
                                              MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_CQ_POLLS] = {"cq_polls",
                                  "Reads of the completion queue. Open MPI's progress loop reads "
                                  "it only while an operation is outstanding or memory is "
                                  "registered for peers (a window): programs without one-sided "
                                  "communication pay nothing",
                                  MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_LOCAL_PUTS] = {"local_put_count",
                                    "Puts to peers on this node carried by the node-local "
                                    "domain (btl_ofi_local_provider); also in put_count",
                                    MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_LOCAL_GETS] = {"local_get_count",
                                    "Gets from peers on this node carried by the node-local "
                                    "domain; also in get_count",
                                    MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_LOCAL_ATOMICS] = {"local_atomic_count",
                                       "Atomics to peers on this node carried by the node-local "
                                       "domain; also in atomic_count",
                                       MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_LOCAL_PEERS] = {"local_peers",
                                     "Peers (this process included) reached over the "
                                     "node-local domain",
                                     MCA_BASE_PVAR_CLASS_LEVEL},
    [MCA_BTL_OFI_CNT_STRIPED] = {"stripe_count",
                                 "Puts and gets split over several NICs (btl_ofi_stripe_min); "
                                 "each part is also in put_count or get_count",
                                 MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_NICS] = {"nics",
                              "Network domains (NICs) this process uses: 1, or more where "
                              "large puts and gets are striped",
                              MCA_BASE_PVAR_CLASS_LEVEL},
    [MCA_BTL_OFI_CNT_PEERS] = {"peers",
                               "Endpoints this process holds, one per peer and domain, each "
                               "with an address-vector entry: what add_procs built so far",
                               MCA_BASE_PVAR_CLASS_LEVEL},
    [MCA_BTL_OFI_CNT_NIC_FAILURES] = {"nic_failures",
                                      "NICs (network domains) this process took for failed "
                                      "while operations waited on them (a link down, or "
                                      "btl_ofi_nic_timeout): their operations failed or moved",
                                      MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_STRIPE_MOVED] = {"stripe_parts_moved",
                                      "Parts of striped puts and gets whose NIC failed, posted "
                                      "again on the first NIC",
                                      MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_CQ_PAUSES] = {"cq_pauses",
                                   "Reads of a network completion queue with nothing of this "
                                   "process's own in flight, beside a node-local or further "
                                   "NIC's domain, that found nothing and were followed by a "
                                   "pause without reads (btl_ofi_idle_poll_ratio)",
                                   MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_CQ_SERVING] = {"cq_serving_reads",
                                    "Such reads that cost several times a quiet one: they "
                                    "served a peer's operation that the provider applies in "
                                    "this process's progress, and every pass reads the queue "
                                    "for a while after",
                                    MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_CQ_LONG_PAUSES] = {"cq_long_pauses",
                                        "Of the pauses of cq_pauses, those made the longest "
                                        "(btl_ofi_local_busy_poll_us) because the node-local "
                                        "domain was at work: "
                                        "operations of this process's own in flight on it, or "
                                        "a read of it lately that served an on-node peer",
                                        MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_CQ_ARMED] = {"cq_wake_armed",
                                  "Times an idle network completion queue was left unread "
                                  "until an io_uring poll of its descriptor completes "
                                  "(btl_ofi_wake) instead of a pause: the provider said "
                                  "nothing was left to do (fi_trywait)",
                                  MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_CQ_WOKEN] = {"cq_wake_reads",
                                  "Reads of such a completion queue because that poll "
                                  "completed (a peer's request or a completion made the "
                                  "descriptor readable)",
                                  MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_SELF_SERVED] = {"self_served",
                                     "Calls for operations on this process's own memory that "
                                     "came without a registration handle (osc/rdma 4.1 on one "
                                     "node: compare-and-swap on its own Win_create window) and "
                                     "were served through its own registration, atomic with "
                                     "the peers' operations on that memory (a call osc/rdma "
                                     "retries after OPAL_ERR_OUT_OF_RESOURCE counts again)",
                                     MCA_BASE_PVAR_CLASS_COUNTER},
    [MCA_BTL_OFI_CNT_REFUSED] = {"refused_count",
                                 "Operations refused for a missing endpoint or registration handle "
                                 "or an address outside the registration",
                                 MCA_BASE_PVAR_CLASS_COUNTER},
};

atomic_uint_fast64_t mca_btl_ofi_counters[MCA_BTL_OFI_CNT_MAX];

__thread mca_btl_ofi_counter_block_t *mca_btl_ofi_thread_counters
    __attribute__((tls_model("initial-exec")));

/* Every thread's block, newest first; blocks stay listed (and their counts kept) when their
 * thread ends. */
static mca_btl_ofi_counter_block_t *_Atomic mca_btl_ofi_counter_blocks;

mca_btl_ofi_counter_block_t *mca_btl_ofi_counters_join(void)
{
    mca_btl_ofi_counter_block_t *mine = NULL;

    /* a cache line of its own: no other thread's counting writes near it */
    if (0 != posix_memalign((void **)&mine, 64, sizeof(*mine))) {
        return NULL;
    }
    memset(mine, 0, sizeof(*mine));
    mine->next = atomic_load(&mca_btl_ofi_counter_blocks);
    while (!atomic_compare_exchange_weak(&mca_btl_ofi_counter_blocks, &mine->next, mine)) {
    }
    mca_btl_ofi_thread_counters = mine;
    return mine;
}

uint64_t mca_btl_ofi_counter_read(enum mca_btl_ofi_counter_id_t id)
{
    uint64_t sum = atomic_load(&mca_btl_ofi_counters[id]);

    for (mca_btl_ofi_counter_block_t *b = atomic_load(&mca_btl_ofi_counter_blocks); NULL != b;
         b = b->next) {
        sum += atomic_load_explicit(&b->value[id], memory_order_relaxed);
    }
    return sum;
}

/* The counter's id is the pvar's ctx; the third argument is the (unused) bound object. */
static int mca_btl_ofi_pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void)obj;
    *(unsigned long *)value =
        (unsigned long)mca_btl_ofi_counter_read((enum mca_btl_ofi_counter_id_t)(intptr_t)pvar->ctx);
    return OPAL_SUCCESS;
}

int mca_btl_ofi_pvar_register(const mca_base_component_t *component)
{
    for (int i = 0; i < MCA_BTL_OFI_CNT_MAX; ++i) {
        int rc = mca_base_component_pvar_register(
            component, mca_btl_ofi_counter_info[i].name, mca_btl_ofi_counter_info[i].description,
            OPAL_INFO_LVL_4, mca_btl_ofi_counter_info[i].var_class, MCA_BASE_VAR_TYPE_UNSIGNED_LONG,
            NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, mca_btl_ofi_pvar_read,
            NULL, NULL, (void *)(intptr_t)i);
        if (rc < 0) {
            return rc;
        }
    }
    return OPAL_SUCCESS;
}
