/*
 * btl-ofi: where an access lands at its peer (btl_ofi_locate.c). The fast
 * path reads the registration handle the caller gave; when that handle does
 * not cover the access, the peer is asked which of its registrations does.
 */

#ifndef MCA_BTL_OFI_LOCATE_H
#define MCA_BTL_OFI_LOCATE_H

#include "btl_ofi_rail.h"

#include "btl_ofi_mr.h"
#include "btl_ofi_ops.h"
#include "btl_ofi_pvar.h"

BEGIN_C_DECLS

/** After the message channel started: answer peers' questions, and ask ours. */
void mca_btl_ofi_locate_start(mca_btl_ofi_rail_t *rail);

/** At finalize: forget the questions. */
void mca_btl_ofi_locate_stop(mca_btl_ofi_rail_t *rail);

/**
 * Slow path of mca_btl_ofi_remote_target: the handle did not cover the access,
 * or questions are open. Serves the answer the peer gave to an earlier call for
 * the same access; else uses handle if it covers the access; else asks the peer.
 *
 * @param handle (IN) the caller's handle, read once, if it covers the access; else NULL
 *
 * @retval OPAL_SUCCESS *target set from the peer's answer;
 *         OPAL_ERR_OUT_OF_RESOURCE asked (or still waiting): call again after progress;
 *         OPAL_ERR_BAD_PARAM no registration of the peer covers the access, or the
 *         peer cannot be asked (no FI_MSG)
 */
int mca_btl_ofi_locate(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                       const struct mca_btl_base_registration_handle_t *handle, uint64_t address,
                       size_t size, mca_btl_ofi_target_t *target);

/**
 * An access that came without a registration handle. osc/rdma 4.1, in a job on one node,
 * takes the memory of this rank itself in a Win_create window, and of every rank in a
 * Win_allocate window, for local: it calls compare-and-swap on it with no handle first
 * (open-mpi/ompi#7967) and on refusal does it with plain loads and stores under its
 * accumulate lock. The other ranks' compare-and-swaps on this rank's Win_create memory come
 * with a handle and take no lock: the provider applies them, a NIC or a provider thread
 * while this rank makes no call, and a plain load-compare-store between them loses one
 * (NOTES.txt section 6). So an access to this process's own memory is served through its
 * own registration that covers it, where that memory is private to this process; every
 * other one is refused as before (osc/rdma's Win_allocate segment is shared: there every
 * rank's compare-and-swap takes the local path, consistently).
 *
 * @retval OPAL_SUCCESS *target set (counted in btl_ofi_self_served);
 *         OPAL_ERR_BAD_PARAM refused (counted in btl_ofi_refused_count)
 */
int mca_btl_ofi_locate_own(mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                           uint64_t address, size_t size, mca_btl_ofi_target_t *target);

/**
 * Where a remote access lands: the address libfabric takes (virtual, or an
 * offset from the registered base) and the key.
 *
 * @param remote  (IN) the caller's handle of the peer's registration; read once
 *                (osc/rdma may be rewriting it: NOTES.txt section 3c)
 * @param address (IN) the peer's virtual address of the access, size bytes long
 *
 * Without a handle (osc/rdma 4.1 in a job on one node, for memory it takes for
 * local: open-mpi/ompi#7967) see mca_btl_ofi_locate_own.
 *
 * @retval OPAL_SUCCESS, OPAL_ERR_OUT_OF_RESOURCE (try again after progress) or
 *         OPAL_ERR_BAD_PARAM (refused; counted in btl_ofi_refused_count)
 */
static inline __opal_attribute_always_inline__ int
mca_btl_ofi_remote_target(const mca_btl_ofi_rail_t *rail, struct mca_btl_base_endpoint_t *endpoint,
                          const struct mca_btl_base_registration_handle_t *remote, uint64_t address,
                          size_t size, mca_btl_ofi_target_t *target)
{
    mca_btl_base_registration_handle_t handle;
    bool covered;

    if (OPAL_UNLIKELY(NULL == endpoint)) {
        mca_btl_ofi_count(MCA_BTL_OFI_CNT_REFUSED, 1);
        return OPAL_ERR_BAD_PARAM;
    }
    if (OPAL_UNLIKELY(atomic_load_explicit(&rail->failed, memory_order_relaxed))) {
        return OPAL_ERR_UNREACH; /* its NIC failed (btl_ofi_fault.c) */
    }
    if (OPAL_UNLIKELY(NULL == remote)) {
        return mca_btl_ofi_locate_own((mca_btl_ofi_rail_t *)rail, endpoint, address, size, target);
    }
    mca_btl_ofi_handle_read(remote, &handle);
    covered = mca_btl_ofi_handle_covers(&handle, address, size) && !mca_btl_ofi_inject_stale();
    if (OPAL_LIKELY(covered) &&
        OPAL_LIKELY(0 == atomic_load_explicit(&rail->locating, memory_order_relaxed))) {
        mca_btl_ofi_target_in(rail, &handle, address, target);
        return OPAL_SUCCESS;
    }
    return mca_btl_ofi_locate((mca_btl_ofi_rail_t *)rail, endpoint, covered ? &handle : NULL,
                              address, size, target);
}

END_C_DECLS

#endif /* MCA_BTL_OFI_LOCATE_H */
