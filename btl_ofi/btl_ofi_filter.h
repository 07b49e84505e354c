/*
 * btl-ofi provider and domain filters (btl_ofi_filter.c): the name lists of
 * btl_ofi_provider_include / _exclude and btl_ofi_domain_include / _exclude,
 * parsed and matched against fi_info entries, and the providers known to break
 * one-sided MPI.
 */

#ifndef MCA_BTL_OFI_FILTER_H
#define MCA_BTL_OFI_FILTER_H

#include "btl_ofi.h"

BEGIN_C_DECLS

/** Which fi_info entries one discovery may take. */
typedef struct mca_btl_ofi_filter_t {
    char **include;
    char **exclude;
    char **domain_include; /**< domain or fabric names and patterns (btl_ofi_domain_include) */
    char **domain_exclude;
    /** providers already opened and found without a 64-bit compare-and-swap (exact names) */
    char **passed_over;
    /** domains already in use (exact names): further NICs (mca_btl_ofi_discover_nics) */
    char **skip_domains;
    bool no_loopback; /**< never a loopback-only domain */
} mca_btl_ofi_filter_t;

/**
 * Split a comma-separated value.
 *
 * @param value   (IN) the text (NULL or empty: no items)
 * @param item_ok (IN) what an item must satisfy
 * @param out     (OUT) the items (an opal argv the caller frees), NULL for an empty value
 * @param bad     (OUT) on failure the offending item (caller frees), else NULL
 * @retval true, or false when an item is empty or fails item_ok
 */
bool mca_btl_ofi_split(const char *value, bool (*item_ok)(const char *), char ***out, char **bad);

/**
 * Parse the provider and domain lists of the MCA parameters into filter's
 * include, exclude, domain_include and domain_exclude. As in FI_PROVIDER, a
 * provider_include that begins with '^' names the providers to leave out.
 *
 * @param filter (OUT) the lists (the caller frees them, also on failure)
 * @retval true, or false after declining (both lists of a kind set, a malformed list)
 */
bool mca_btl_ofi_filter_parse(mca_btl_ofi_filter_t *filter);

/**
 * Parse btl_ofi_domain_<which>: domain or fabric names and shell patterns.
 *
 * @param which (IN) "domain_include" or "domain_exclude"
 * @param value (IN) the parameter's value
 * @param out   (OUT) the items (caller frees), NULL for an empty value
 * @retval true, or false after declining ("malformed-domain-list")
 */
bool mca_btl_ofi_parse_domains(const char *which, const char *value, char ***out);

/**
 * Does a name the user gave stand for this fi_info provider name? As
 * FI_PROVIDER names providers (fabric(7), fi_fabric(3)), whatever the case:
 * a full fi_info name ("tcp;ofi_rxm") stands for that stack only; a single
 * name to include is a core provider and stands for every stack over it
 * ("tcp": "tcp;ofi_rxm"); a single name to exclude stands for every stack it
 * is part of ("ofi_rxm": "tcp;ofi_rxm" and "net;ofi_rxm").
 *
 * @param name      (IN) the name the user gave
 * @param prov_name (IN) fabric_attr->prov_name of an entry
 * @param any_part  (IN) true for a name to exclude
 * @retval whether it does
 */
bool mca_btl_ofi_names(const char *name, const char *prov_name, bool any_part);

/**
 * Does any name of list stand for prov_name (see mca_btl_ofi_names)?
 *
 * @retval whether one does (false for a NULL list)
 */
bool mca_btl_ofi_list_names(char **list, const char *prov_name, bool any_part);

/**
 * Does name (to include) stand for a provider of all, or of msgs (one without
 * atomics or RMA read that serves through messages)?
 *
 * @param name (IN) a name of btl_ofi_provider_include
 * @param all  (IN) the RDM providers with RMA and atomics, whatever their MR mode
 * @param msgs (IN) the RDM providers with RMA and FI_MSG, whatever their MR mode
 * @retval whether it does
 */
bool mca_btl_ofi_lists_name(const char *name, const struct fi_info *all,
                            const struct fi_info *msgs);

/**
 * @retval whether list (an opal argv, or NULL) holds exactly name
 */
bool mca_btl_ofi_in_list(char **list, const char *name);

/**
 * @retval whether a and b hold the same text, a NULL counting as ""
 */
bool mca_btl_ofi_same_str(const char *a, const char *b);

/**
 * Why this provider, at this version (fabric_attr->prov_version), breaks
 * one-sided MPI, if it is known to.
 *
 * @retval the reason, or NULL
 */
const char *mca_btl_ofi_quirk(const struct fi_info *info);

/**
 * A domain that reaches only this host's loopback (tcp and udp on lo): never the one taken
 * while the same provider offers another, since peers on other hosts cannot reach it.
 *
 * @retval whether info's domain is one
 */
bool mca_btl_ofi_loopback_only(const struct fi_info *info);

/**
 * Does an item of list name this entry's domain or its fabric (fnmatch patterns)?
 *
 * @retval whether one does (false for a NULL list)
 */
bool mca_btl_ofi_domain_listed(char **list, const struct fi_info *info);

/**
 * The provider lists alone (names, quirks, providers passed over).
 *
 * @retval whether they let info through
 */
bool mca_btl_ofi_filter_provider_wanted(const mca_btl_ofi_filter_t *filter,
                                        const struct fi_info *info);

/**
 * Every list of filter: providers, domains already in use, loopback, domain lists.
 *
 * @retval whether they let info through
 */
bool mca_btl_ofi_filter_wanted(const mca_btl_ofi_filter_t *filter, const struct fi_info *info);

END_C_DECLS

#endif /* MCA_BTL_OFI_FILTER_H */
