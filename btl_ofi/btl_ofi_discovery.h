/*
 * btl-ofi discovery (btl_ofi_discovery.c): which libfabric provider to use,
 * and on what terms.
 */

#ifndef MCA_BTL_OFI_DISCOVERY_H
#define MCA_BTL_OFI_DISCOVERY_H

#include "btl_ofi.h"
/* mca_btl_ofi_mr_mode_parse and mca_btl_ofi_gets_by_messages, which callers of discovery
 * use, are declared there. */
#include "btl_ofi_hints.h"

BEGIN_C_DECLS

/**
 * Choose a libfabric provider according to the MCA parameters.
 *
 * @param enable_mpi_threads (IN) whether MPI_THREAD_MULTIPLE was requested
 * @param passed_over (IN) exact provider names to leave out: ones already
 *                    opened and found without a 64-bit compare-and-swap
 *                    (NULL for none)
 * @retval a duplicated fi_info the caller frees with fi_freeinfo, or NULL:
 *         with passed_over NULL after recording why nothing qualifies
 *         (mca_btl_ofi_decline); with passed_over set, nothing is recorded
 *         when only they qualified (the caller says why)
 */
struct fi_info *mca_btl_ofi_discover(bool enable_mpi_threads, char **passed_over);

/**
 * The provider named (exactly, as fi_info prints it) with what this component
 * needs, as mca_btl_ofi_discover would choose among its domains, without the
 * provider and domain lists of the parameters: the node-local provider tried
 * beside the one in use (btl_ofi_module_setup.c). Decline with mca_btl_ofi_decline_hold.
 *
 * @param enable_mpi_threads (IN) whether MPI_THREAD_MULTIPLE was requested
 * @param provider (IN) the provider's exact name
 * @retval the fi_info (the caller owns it), or NULL
 */
struct fi_info *mca_btl_ofi_discover_local(bool enable_mpi_threads, const char *provider);

/**
 * The other domains (NICs) of front's provider that btl_ofi_domain_include /
 * _exclude allow, none of them loopback-only, as mca_btl_ofi_discover would
 * choose them one after the other: the further NICs large puts and gets are
 * striped over (btl_ofi_stripe.c). Decline with mca_btl_ofi_decline_hold.
 *
 * @param enable_mpi_threads (IN) whether MPI_THREAD_MULTIPLE was requested
 * @param front (IN) the provider and domain in use
 * @param out (OUT) up to max fi_info (the caller owns them)
 * @param max (IN) the room in out
 * @retval how many were found
 */
int mca_btl_ofi_discover_nics(bool enable_mpi_threads, const struct fi_info *front,
                              struct fi_info **out, int max);

/**
 * The verbose line (level 10) that names the provider in use and its terms:
 * "selected provider P (fabric F, domain D), mr_mode M, key size K,
 * completion C, atomics native|messages, gets native|messages", printed once
 * a module works on it. Also records the choice in btl_ofi_domain_selected.
 *
 * @param info (IN) the provider in use
 * @param atomics_as_messages (IN) whether atomics travel as messages
 * @param gets_as_messages (IN) whether gets travel as messages
 */
void mca_btl_ofi_discover_log(const struct fi_info *info, bool atomics_as_messages,
                              bool gets_as_messages);

/**
 * How flush proves completion with this info.
 *
 * @param info (IN) the provider in use
 * @retval "delivery", "read_proof" or "local (unsafe debug setting)"
 */
const char *mca_btl_ofi_completion_name(const struct fi_info *info);

END_C_DECLS

#endif /* MCA_BTL_OFI_DISCOVERY_H */
