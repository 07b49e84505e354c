/*
 * btl-ofi: how the component's messages reach the user.
 *
 * Not through opal_show_help: a rank's show_help message travels to mpirun by
 * PMIx_Log, and mpirun 4.1 frees it on one thread while copying it on another
 * (NOTES.txt section 11), so the message is lost, garbled, or crashes mpirun.
 * btl-ofi renders its help-file messages itself and writes each with one
 * write() to the process's standard error, which mpirun's I/O forwarding
 * carries to the terminal.
 *
 * A reason to decline is shown once per job: every declining process
 * publishes it in the modex, and after the modex the lowest-ranked process
 * with that reason shows it, with the number of processes and the hosts that
 * declined for it.
 */

#ifndef MCA_BTL_OFI_REPORT_H
#define MCA_BTL_OFI_REPORT_H

#include "opal_config.h"

#include <stddef.h>

#include "opal/mca/btl/btl.h"

BEGIN_C_DECLS

/** Most string arguments a message of help-mpi-btl-ofi.txt takes before its last field. */
#define MCA_BTL_OFI_REPORT_MAX_ARGS 8

/**
 * Record why this process declines. The message is shown once per job, after
 * the modex (see mca_btl_ofi_reporter). Only the first reason of a process
 * counts; later ones go to verbose output.
 *
 * @param topic (IN) a section of help-mpi-btl-ofi.txt
 * @param ...   (IN) its string arguments in order, then NULL; the section's
 *                   last field (the processes) is filled in when it is shown
 */
void mca_btl_ofi_decline(const char *topic, ...) __opal_attribute_sentinel__;
/**
 * While held, a decline is not recorded, only named in verbose output: for a
 * provider tried beside the one in use (the node-local domain, btl_ofi_rails.c),
 * whose failure leaves this component serving.
 */
void mca_btl_ofi_decline_hold(bool hold);

/**
 * Decline because a libfabric call failed during setup ("device-failed").
 *
 * @param provider (IN) the provider's name
 * @param call     (IN) the libfabric call, e.g. "fi_domain"
 * @param rc       (IN) its negative libfabric return code
 */
void mca_btl_ofi_decline_fi_call(const char *provider, const char *call, int rc);

/**
 * Show an error of this process at once (after init: nothing to gather), on
 * its standard error.
 *
 * @param topic (IN) a section of help-mpi-btl-ofi.txt
 * @param ...   (IN) its string arguments in order, then NULL
 */
void mca_btl_ofi_report_now(const char *topic, ...) __opal_attribute_sentinel__;

/**
 * After a decline, the module that component init hands to Open MPI in place
 * of a working one. It carries no traffic (no flags, reaches no peer); its
 * add_procs, which runs after the modex, shows the job's reasons. If add_procs
 * never runs, finalize shows this process's reason.
 *
 * @param component (IN) the component the module belongs to
 * @param num_btls (OUT) 1 with a module, 0 without
 * @retval an array of one module for Open MPI to free, or NULL when this
 *         process did not decline (or memory ran out)
 */
mca_btl_base_module_t **mca_btl_ofi_reporter(mca_btl_base_component_t *component, int *num_btls);

/**
 * Full name of one of this component's MCA parameters, "btl_<component>_<name>".
 *
 * @param name (IN)  the name after the component's prefix, e.g. "mr_mode"
 * @param buf  (OUT) where the full name is written
 * @retval buf
 */
const char *mca_btl_ofi_param_name(const char *name, char *buf, size_t len);

END_C_DECLS

#endif /* MCA_BTL_OFI_REPORT_H */
