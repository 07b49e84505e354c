/*
 * btl-ofi explanations (btl_ofi_explain.c): why discovery chose nothing,
 * recorded with mca_btl_ofi_decline (btl_ofi_report.h) and shown from
 * help-mpi-btl-ofi.txt: a named provider or domain libfabric lacks, a provider
 * known broken, an MR mode the parameter refuses, no completion proof, or
 * nothing left by the lists.
 */

#ifndef MCA_BTL_OFI_EXPLAIN_H
#define MCA_BTL_OFI_EXPLAIN_H

#include "btl_ofi.h"
#include "btl_ofi_filter.h"

BEGIN_C_DECLS

/**
 * Every name of filter's include list must stand for a provider of all or
 * msgs; else decline ("provider-lacks-caps" or "provider-not-found").
 *
 * @param filter (IN) the parsed lists
 * @param all    (IN) the RDM providers with RMA and atomics, whatever their MR mode
 * @param msgs   (IN) the RDM providers with RMA and FI_MSG, whatever their MR mode
 * @retval true, or false after declining
 */
bool mca_btl_ofi_check_include(const mca_btl_ofi_filter_t *filter, const struct fi_info *all,
                               const struct fi_info *msgs);

/**
 * Every domain_include item must name a domain or fabric of a provider left by
 * the provider lists (among all and msgs); else decline ("domain-not-found"),
 * listing them.
 *
 * @retval true, or false after declining
 */
bool mca_btl_ofi_check_domains(const mca_btl_ofi_filter_t *filter, const struct fi_info *all,
                               const struct fi_info *msgs);

/**
 * Nothing qualified: decline, naming the provider and what it asked for
 * ("provider-broken", "mr-mode-declined", "domain-none-left" or "no-provider").
 *
 * @param filter (IN) the parsed lists
 * @param all    (IN) the RDM providers with RMA and atomics, whatever their MR mode
 */
void mca_btl_ofi_explain(const mca_btl_ofi_filter_t *filter, const struct fi_info *all);

/**
 * A provider would have served but flush could not prove completion with it
 * (btl_ofi_completion, btl_ofi_gets): decline ("no-completion-proof").
 *
 * @param provider (IN) its name
 */
void mca_btl_ofi_explain_unprovable(const char *provider);

END_C_DECLS

#endif /* MCA_BTL_OFI_EXPLAIN_H */
