/*
 * btl-ofi component (btl_ofi_component.c): the object Open MPI loads. Only
 * btl_ofi_component.c uses it; the other files get the parameters from
 * btl_ofi_params.h, the counters from btl_ofi_pvar.h and the component from
 * their module (btl_component).
 */

#ifndef MCA_BTL_OFI_COMPONENT_H
#define MCA_BTL_OFI_COMPONENT_H

#include "btl_ofi.h"

BEGIN_C_DECLS

/*
 * Visibility of mca_btl_ofi_component. In-tree it is the symbol Open MPI looks
 * up. Standalone, Open MPI looks up mca_btl_<name>_component (an alias, see
 * btl_ofi_component.c) and everything else stays inside the DSO: Open MPI 5
 * links its own btl/ofi into libopen-pal, whose exported mca_btl_ofi_* symbols
 * would otherwise be bound in place of ours (NOTES.txt section 12).
 */
#ifdef MCA_BTL_OFI_COMPONENT_SYMBOL
#define MCA_BTL_OFI_COMPONENT_DECLSPEC __opal_attribute_visibility__("hidden")
#else
#define MCA_BTL_OFI_COMPONENT_DECLSPEC OPAL_DECLSPEC
#endif

/** The component: the module it made, if any. */
typedef struct mca_btl_ofi_component_t {
    mca_btl_base_component_3_0_0_t super;

    mca_btl_ofi_module_t *module;
} mca_btl_ofi_component_t;

MCA_BTL_OFI_COMPONENT_DECLSPEC extern mca_btl_ofi_component_t mca_btl_ofi_component;

END_C_DECLS

#endif /* MCA_BTL_OFI_COMPONENT_H */
