/*
 * btl-ofi with two domains in one module (btl_ofi_rails.c): in a job across
 * several nodes, the peers on this node travel over a node-local provider
 * (shm) and the others over the network provider, while Open MPI sees one
 * BTL that reaches every peer (NOTES.txt section 2c).
 */

#ifndef MCA_BTL_OFI_RAILS_H
#define MCA_BTL_OFI_RAILS_H

#include "btl_ofi_module.h"

BEGIN_C_DECLS

/**
 * Whether this process should open a node-local domain beside module's:
 * btl_ofi_local_provider names one, module's provider reaches other nodes and
 * is not that one, and the job has peers both on this node and on others.
 *
 * @retval the provider to open, or NULL
 */
const char *mca_btl_ofi_rails_wanted(const mca_btl_ofi_module_t *module);

/**
 * Give module handles of both domains (in every process where
 * mca_btl_ofi_rails_wanted said so, so that all size them alike) and, with
 * local (a module opened on the node-local provider with local->front ==
 * module, without FI_MR_LOCAL, already published in the modex), make local
 * the carrier of module's peers on this node: module's function table and
 * limits change so that each call goes to the module of its peer, and each
 * registration for peers is made in both domains.
 *
 * @param local (IN) the node-local module, or NULL where this process has none
 */
void mca_btl_ofi_rails_attach(mca_btl_ofi_module_t *module, mca_btl_ofi_module_t *local);

END_C_DECLS

#endif /* MCA_BTL_OFI_RAILS_H */
