/*
 * btl-ofi module: the module template (capabilities and function table) and
 * finalize, which drains the completion queue and releases everything in the
 * reverse order of its creation.
 */

#include "btl_ofi_module.h"

#include "btl_ofi_atomics.h"
#include "btl_ofi_coalesce.h"
#include "btl_ofi_device.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_fault.h"
#include "btl_ofi_locate.h"
#include "btl_ofi_mr.h"
#include "btl_ofi_msg.h"
#include "btl_ofi_ops.h"
#include "btl_ofi_rcache.h"
#include "btl_ofi_rdma.h"
#include "btl_ofi_reg_pool.h"

/* The flags this BTL can honour; a btl_ofi_flags setting cannot add others. */
#define MCA_BTL_OFI_FLAGS_SERVED                                                                   \
    (MCA_BTL_FLAGS_RDMA | MCA_BTL_FLAGS_ATOMIC_OPS | MCA_BTL_FLAGS_ATOMIC_FOPS |                   \
     MCA_BTL_FLAGS_RDMA_FLUSH | MCA_BTL_OFI_FLAG_REMOTE_COMPLETION)

/* How long finalize waits for operations still in flight before it gives up on them. */
#define MCA_BTL_OFI_DRAIN_SECONDS 10

/* clang-format off */
mca_btl_ofi_module_t mca_btl_ofi_module_template = {
    .super = {
        /* .btl_component and the finalize that forgets the module: the component's, at init */
        .btl_exclusivity = MCA_BTL_EXCLUSIVITY_LOW,
        /* osc/rdma takes the qualifying BTL with the lowest latency (btl_ofi_compat.h) */
        .btl_latency = MCA_BTL_OFI_LATENCY,
        .btl_bandwidth = 10000,
        .btl_flags = MCA_BTL_OFI_FLAGS_SERVED,
        .btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t),
        .btl_get_limit = SIZE_MAX,
        .btl_put_limit = SIZE_MAX,
        .btl_get_alignment = 0,
        .btl_put_alignment = 0,
        /* Local buffers need no registration; 0 under FI_MR_LOCAL (device.c). */
        .btl_get_local_registration_threshold = SIZE_MAX,
        .btl_put_local_registration_threshold = SIZE_MAX,

        .btl_add_procs = mca_btl_ofi_add_procs,
        .btl_del_procs = mca_btl_ofi_del_procs,
        .btl_finalize = mca_btl_ofi_finalize,
        .btl_put = mca_btl_ofi_put,
        .btl_get = mca_btl_ofi_get,
        .btl_atomic_op = mca_btl_ofi_aop,
        .btl_atomic_fop = mca_btl_ofi_afop,
        .btl_atomic_cswap = mca_btl_ofi_acswap,
        .btl_register_mem = mca_btl_ofi_register_mem,
        .btl_deregister_mem = mca_btl_ofi_deregister_mem,
        .btl_flush = mca_btl_ofi_flush,
        .btl_register_error = mca_btl_ofi_register_error,
    },
};
/* clang-format on */

void mca_btl_ofi_module_limit_flags(mca_btl_ofi_module_t *module)
{
    module->super.btl_flags &= MCA_BTL_OFI_FLAGS_SERVED;
}

/* Let operations still in flight complete, within a bound: a vanished peer must not hang us. */
static void mca_btl_ofi_drain_bounded(mca_btl_ofi_module_t *module)
{
    const double deadline = mca_btl_ofi_now() + MCA_BTL_OFI_DRAIN_SECONDS;

    while (atomic_load(&module->outstanding) > 0 && mca_btl_ofi_now() < deadline) {
        (void)mca_btl_ofi_progress_wait(module);
    }
    if (atomic_load(&module->outstanding) > 0) {
        opal_output_verbose(1, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG
                            "finalize abandons %ld operations that did not complete",
                            (long)atomic_load(&module->outstanding));
    }
}

int mca_btl_ofi_finalize(struct mca_btl_base_module_t *btl)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *)btl;
    const bool beside = NULL != module->front;

    /* a NIC that stops answering now fails nothing: the drain below is bounded */
    module->watch = false;
    if (module->initialized) {
        mca_btl_ofi_drain_bounded(module);
    }
    /* the modules beside this one first: their registrations are named by this one's,
     * which are only closed below (regs_release does not look at their other slots) */
    if (NULL != module->local) {
        mca_btl_ofi_finalize(&module->local->super);
        module->local = NULL;
    }
    for (int i = 0; i < module->nic_count; ++i) {
        mca_btl_ofi_finalize(&module->nics[i]->super);
        module->nics[i] = NULL;
    }
    module->nic_count = 0;
    module->initialized = false;

    /* Registrations and endpoints before the fids they belong to. */
    mca_btl_ofi_regs_release(module);
    mca_btl_ofi_rcache_fini(module);
    if (NULL != module->proof_reg) {
        mca_btl_ofi_reg_destroy(module->proof_reg);
        module->proof_reg = NULL;
    }
    mca_btl_ofi_endpoints_release(module);
    mca_btl_ofi_word_slabs_release(module);
    mca_btl_ofi_msg_deregister(module);
    mca_btl_ofi_device_close(module);
    mca_btl_ofi_coalesce_stop(module);
    mca_btl_ofi_locate_stop(module);
    mca_btl_ofi_msg_stop(module);

    mca_btl_ofi_fault_destruct(module);
    OBJ_DESTRUCT(&module->deferred);
    OBJ_DESTRUCT(&module->deferred_lock);
    OBJ_DESTRUCT(&module->regs_by_key);
    OBJ_DESTRUCT(&module->live_regs);
    OBJ_DESTRUCT(&module->word_slabs);
    OBJ_DESTRUCT(&module->reg_lock);
    OBJ_DESTRUCT(&module->endpoints);
    OBJ_DESTRUCT(&module->endpoint_lock);
    OBJ_DESTRUCT(&module->ops);
    free(module);
    if (!beside) {
        /* a module beside another leaves that to the one that owns it */
        mca_btl_ofi_reg_pool_fini();
    }
    return OPAL_SUCCESS;
}
