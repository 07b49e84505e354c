/*
 * btl-ofi: a one-sided (RDMA + atomics) BTL for Open MPI over libfabric.
 *
 * What every file of the component shares: its name, version and log prefix,
 * the libfabric API it asks for, and the Open MPI and libfabric headers it is
 * written against. Each concern has its own header (NOTES.txt, code layout):
 * params, pvar (counters), report, discovery, module (and device), mr, ops,
 * endpoint, rdma, atomics, component. btl_ofi_compat.h names the differences
 * between Open MPI 4.1 and 5.0.
 */

#ifndef MCA_BTL_OFI_H
#define MCA_BTL_OFI_H

#include "opal_config.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"
#include "opal/util/output.h"

#include "btl_ofi_compat.h"

BEGIN_C_DECLS

/* The project's own version: ompi_info shows it, so a user can tell this
 * component from the btl/ofi that Open MPI ships. The standalone build passes
 * AC_INIT's (configure.ac); these are for the in-tree build, and `make dist`
 * checks that they agree with it. */
#ifndef MCA_BTL_OFI_MAJOR_VERSION
#define MCA_BTL_OFI_MAJOR_VERSION 0
#define MCA_BTL_OFI_MINOR_VERSION 1
#define MCA_BTL_OFI_RELEASE_VERSION 0
#endif

/*
 * The component's name: "ofi" where it replaces Open MPI's own btl/ofi (an
 * in-tree build); the standalone build names it otherwise (configure.ac), so
 * that it loads beside a btl/ofi built into Open MPI. Its MCA parameters are
 * btl_<name>_*.
 */
#ifndef MCA_BTL_OFI_COMPONENT_NAME
#define MCA_BTL_OFI_COMPONENT_NAME "ofi"
#endif

/* Prefix of the component's verbose output: "btl:<name>: ". */
#define MCA_BTL_OFI_LOG "btl:" MCA_BTL_OFI_COMPONENT_NAME ": "

/* Oldest libfabric API the component asks for. */
#define MCA_BTL_OFI_FI_VERSION FI_VERSION(1, 5)
/* The API at which it also asks for FI_HMEM (system memory only), where libfabric has it. */
#define MCA_BTL_OFI_FI_VERSION_HMEM FI_VERSION(1, 18)

#define mca_btl_ofi_output (opal_btl_base_framework.framework_output)

/* The module, its rails and the operation context are used by pointer across the headers. */
typedef struct mca_btl_ofi_module_t mca_btl_ofi_module_t;
typedef struct mca_btl_ofi_rail_t mca_btl_ofi_rail_t;
typedef struct mca_btl_ofi_op_t mca_btl_ofi_op_t;

END_C_DECLS

#endif /* MCA_BTL_OFI_H */
