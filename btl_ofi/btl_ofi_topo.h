/*
 * btl-ofi topology (btl_ofi_topo.c): which of several NICs a process is near,
 * from the PCI address a provider gives a domain (fi_nic(3)) and Open MPI's
 * hwloc topology (NOTES.txt section 2b).
 */

#ifndef MCA_BTL_OFI_TOPO_H
#define MCA_BTL_OFI_TOPO_H

#include "btl_ofi.h"

BEGIN_C_DECLS

/**
 * Of count candidate domains (cand[i], each a NIC that reaches the same peers), which are
 * near this process: the nearest object of the NIC in the topology that holds cpus (a
 * package or NUMA node) shares a cpu with the process's binding.
 *
 * @param near  set for each candidate (count entries)
 * @param why   what was found, for the verbose line and domain_selected's choice
 * @retval the number near, when that tells the candidates apart (some near, some not);
 *         0 when the topology does not (why says why: no device paths, the process not
 *         bound, every NIC as near as the others, no topology)
 */
unsigned mca_btl_ofi_topo_near(const struct fi_info *const *cand, unsigned count, bool *near,
                               char *why, size_t len);

END_C_DECLS

#endif /* MCA_BTL_OFI_TOPO_H */
