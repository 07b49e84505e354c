/*
 * btl-ofi module setup (btl_ofi_module_setup.c): the module template, the rails
 * a module opens and how it hears from them (progress across rails, a failed
 * NIC), and finalize.
 */

#ifndef MCA_BTL_OFI_MODULE_SETUP_H
#define MCA_BTL_OFI_MODULE_SETUP_H

#include "btl_ofi_module.h"

BEGIN_C_DECLS

/** Capabilities and function table every module starts from (btl_component is set by
 *  mca_btl_ofi_module_new); Open MPI's btl_ofi_flags, limits and so on are read into it. */
extern mca_btl_ofi_module_t mca_btl_ofi_module_template;

/**
 * A module with the component's capabilities and function table, and no rail yet.
 *
 * @param component (IN) the component it belongs to
 * @retval the module, or NULL when out of memory
 */
mca_btl_ofi_module_t *mca_btl_ofi_module_new(mca_btl_base_component_t *component);

/**
 * Open the module's network rail on info (the provider discovery chose) and take its
 * capabilities as the module's.
 *
 * @param casless_as_messages (IN)  an endpoint without compare-and-swap sends atomics as
 *                                  messages
 * @param no_cswap            (OUT) it failed only for want of atomics
 * @retval OPAL_SUCCESS, or an error (info released, the reason recorded)
 */
int mca_btl_ofi_module_open_network(mca_btl_ofi_module_t *module, struct fi_info *info,
                                    bool casless_as_messages, bool *no_cswap);

/**
 * In a job across nodes, the rails beside the network one: the node-local rail for peers on
 * this node (btl_ofi_local_provider), further NICs for parts of large transfers
 * (btl_ofi_stripe_min). Whatever fails leaves the network rail serving every peer: nothing
 * is declined, the reason goes to verbose output.
 */
void mca_btl_ofi_module_add_rails(mca_btl_ofi_module_t *module, bool enable_mpi_threads);

/** One progress pass over every rail: the node-local one at every call, network rails at
 *  their pace, idle ones not at all. @retval the completions read */
int mca_btl_ofi_module_progress(mca_btl_ofi_module_t *module);

/** Close every rail (the ones beside the network rail first) and free the module. */
int mca_btl_ofi_finalize(struct mca_btl_base_module_t *btl);

END_C_DECLS

#endif /* MCA_BTL_OFI_MODULE_SETUP_H */
