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
 * Whether puts and gets may be striped over several NICs in this job: btl_ofi_stripe_min
 * is not 0 and the job has processes on other nodes (the same answer in every process).
 */
bool mca_btl_ofi_rails_stripes_wanted(const mca_btl_ofi_module_t *module);

/**
 * Give module handles of every slot the job may use (in every process where
 * mca_btl_ofi_rails_wanted or _stripes_wanted said so, so that all size them alike:
 * 2 slots, or MCA_BTL_OFI_SLOTS with stripes) and make the modules beside it carry what
 * is theirs: local (opened on the node-local provider with local->front == module and
 * slot 1, without FI_MR_LOCAL, already published in the modex) the peers on this node;
 * nics (further NICs of module's provider, slots 2..) parts of large puts and gets to
 * peers on other nodes. module's function table and limits change so that each call goes
 * to the module of its peer, and each registration for peers is made in every domain.
 *
 * @param local (IN) the node-local module, or NULL where this process has none
 * @param nics  (IN) nic_count further NIC modules (may be 0)
 */
void mca_btl_ofi_rails_attach(mca_btl_ofi_module_t *module, mca_btl_ofi_module_t *local,
                              mca_btl_ofi_module_t **nics, int nic_count, bool stripes);

END_C_DECLS

#endif /* MCA_BTL_OFI_RAILS_H */
