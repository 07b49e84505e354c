/*
 * btl-ofi module: what Open MPI sees (set up in btl_ofi_module_setup.c). It owns its rails by
 * role (the network rail, the node-local rail, further NICs), routes each peer
 * and each operation to them (btl_ofi_route.c, btl_ofi_stripe.c), registers
 * memory with one key per rail and flushes across rails. No module contains a
 * module; a rail knows nothing of its owner but the hooks it was given. The type
 * alone lives here, for the layers below the setup (routes, stripes) to use.
 */

#ifndef MCA_BTL_OFI_MODULE_H
#define MCA_BTL_OFI_MODULE_H

#include "btl_ofi_rail.h"

BEGIN_C_DECLS

/** The one module of this component. */
struct mca_btl_ofi_module_t {
    mca_btl_base_module_t super;

    /** the first network rail: peers on other nodes, and every peer that no node-local rail
     *  serves; its handle comes first in every registration handle */
    mca_btl_ofi_rail_t *network;
    /** the node-local rail (handle slot 1): peers on this node in a job across nodes */
    mca_btl_ofi_rail_t *local;
    /** further NICs of the network provider (handle slots 2..): parts of large puts and gets
     *  to peers on other nodes */
    mca_btl_ofi_rail_t *nics[MCA_BTL_OFI_STRIPES_MAX - 1];
    int nic_count;
    /** puts and gets of at least this many bytes are split over the NICs (0: never) */
    size_t stripe_min;
    /** atomics to a peer on this node travel on the node-local rail (else on the network) */
    bool local_atomics;
    /** what Open MPI's PML gave btl_register_error (ob1: end the job), or NULL */
    mca_btl_base_module_error_cb_fn_t error_cb;
};

/** The rail whose handles are in slot (0: network, 1: node-local, 2..: further NICs). */
static inline mca_btl_ofi_rail_t *mca_btl_ofi_module_rail(const mca_btl_ofi_module_t *module,
                                                          int slot)
{
    return 0 == slot ? module->network : 1 == slot ? module->local : module->nics[slot - 2];
}

END_C_DECLS

#endif /* MCA_BTL_OFI_MODULE_H */
