/*
 * btl-ofi: what differs between the Open MPI versions this component builds
 * against, each difference named once. Open MPI 4.1 has BTL API 3.1 (BTL_VERSION
 * 310); 5.0 and 6.0 have BTL API 3.3 (BTL_VERSION 330). No other file of
 * btl_ofi/ tests a version.
 */

#ifndef MCA_BTL_OFI_COMPAT_H
#define MCA_BTL_OFI_COMPAT_H

#include "opal_config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <rdma/fabric.h>

#include "opal/mca/btl/btl.h"
#include "opal/util/proc.h"

#if BTL_VERSION >= 330
#include "opal/mca/pmix/pmix-internal.h"
#include "opal/mca/threads/mutex.h"
#else
#include "opal/mca/pmix/pmix.h"
#include "opal/threads/mutex.h"
#endif

BEGIN_C_DECLS

/** The MCA and BTL API versions this component declares (btl.h's own macro). */
#if BTL_VERSION >= 330
#define MCA_BTL_OFI_BASE_VERSION MCA_BTL_BASE_VERSION_3_3_0
#else
#define MCA_BTL_OFI_BASE_VERSION MCA_BTL_BASE_VERSION_3_1_0
#endif

/*
 * Remote completion. BTL API 3.1 (btl.h) says an RDMA callback means the
 * operation completed remotely. 3.3 has a flag for it, and Open MPI 5's
 * osc/rdma uses a BTL directly only if it is set.
 */
#if BTL_VERSION >= 330
#define MCA_BTL_OFI_FLAG_REMOTE_COMPLETION MCA_BTL_FLAGS_RDMA_REMOTE_COMPLETION
#else
#define MCA_BTL_OFI_FLAG_REMOTE_COMPLETION 0
#endif

/*
 * The latency the module declares; osc/rdma prefers the lowest.
 * 4.1: osc/rdma takes the lowest-latency BTL with RDMA and atomics that
 * reaches every process, and btl/vader (1) qualifies, so ours must say 0.
 * 5.0: btl/sm and btl/tcp do not qualify for direct use, but when no BTL does,
 * osc/rdma emulates RDMA with active messages over the lowest-latency BTL that
 * reaches each peer, and ours cannot send. So it says more than btl/tcp (100).
 */
#if BTL_VERSION >= 330
#define MCA_BTL_OFI_LATENCY 200
#else
#define MCA_BTL_OFI_LATENCY 0
#endif

/*
 * Floating-point atomics. Open MPI 4.1.4's osc/rdma sends Get_accumulate of a
 * derived datatype over BTL atomics and then unpacks the fetched values from
 * the end of its buffer instead of its start (ompi_osc_rdma_gacc_amo,
 * osc_rdma_accumulate.c:304-312; fixed in 5.0). It takes that path for float
 * and double only if the BTL advertises MCA_BTL_ATOMIC_SUPPORTS_FLOAT; without
 * it (as btl/vader) they go through get-op-put under the accumulate lock, which
 * is right. So on 4.1 floats are not advertised (NOTES.txt section 6).
 */
#if BTL_VERSION >= 330
#define MCA_BTL_OFI_ADVERTISE_FLOAT_ATOMICS 1
#else
#define MCA_BTL_OFI_ADVERTISE_FLOAT_ATOMICS 0
#endif

/* libfabric 1.x's rdma/fabric.h defines container_of; 2.x no longer does. */
#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#endif

/**
 * Publish this component's binary blob in the modex, for every process or (node_only)
 * for the processes of this node.
 *
 * @retval OPAL_SUCCESS, or the PMIx layer's error
 */
static inline int mca_btl_ofi_compat_modex_send(const mca_base_component_t *component,
                                                const void *data, size_t size, bool node_only)
{
    int rc;

#if BTL_VERSION >= 330
    if (node_only) {
        OPAL_MODEX_SEND(rc, PMIX_LOCAL, component, (void *)data, size);
    } else {
        OPAL_MODEX_SEND(rc, PMIX_GLOBAL, component, (void *)data, size);
    }
#else
    if (node_only) {
        OPAL_MODEX_SEND(rc, OPAL_PMIX_LOCAL, component, (void *)data, size);
    } else {
        OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, component, (void *)data, size);
    }
#endif
    return OPAL_SUCCESS == rc ? OPAL_SUCCESS : OPAL_ERROR;
}

/**
 * Publish a string in the modex under key, for every process of the job.
 *
 * @retval OPAL_SUCCESS, or the PMIx layer's error
 */
static inline int mca_btl_ofi_compat_modex_send_string(const char *key, const char *value)
{
    int rc;

#if BTL_VERSION >= 330
    OPAL_MODEX_SEND_VALUE(rc, PMIX_GLOBAL, key, value, PMIX_STRING);
    return PMIX_SUCCESS == rc ? OPAL_SUCCESS : OPAL_ERROR;
#else
    /* opal_value_load copies the string; it only lacks the const */
    OPAL_MODEX_SEND_VALUE(rc, OPAL_PMIX_GLOBAL, (char *)key, (char *)value, OPAL_STRING);
    return rc;
#endif
}

/**
 * Read a string another process published with
 * mca_btl_ofi_compat_modex_send_string, from data this process already holds
 * (after the modex): never a request to the server.
 *
 * @param value (OUT) a copy the caller frees; NULL when not found
 * @retval OPAL_SUCCESS or OPAL_ERR_NOT_FOUND
 */
static inline int mca_btl_ofi_compat_modex_recv_string(const opal_process_name_t *proc,
                                                       const char *key, char **value)
{
    char *found = NULL;
    int rc;

#if BTL_VERSION >= 330
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, key, proc, &found, PMIX_STRING);
    rc = PMIX_SUCCESS == rc ? OPAL_SUCCESS : OPAL_ERR_NOT_FOUND;
#else
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, key, (opal_process_name_t *)proc, &found, OPAL_STRING);
    rc = OPAL_SUCCESS == rc ? OPAL_SUCCESS : OPAL_ERR_NOT_FOUND;
#endif
    if (OPAL_SUCCESS != rc) {
        free(found);
        found = NULL;
    }
    *value = found;
    return NULL == found ? OPAL_ERR_NOT_FOUND : OPAL_SUCCESS;
}

/** Number of processes in this process's job, or 0 when the runtime does not say. */
static inline uint32_t mca_btl_ofi_compat_job_size(void)
{
#if BTL_VERSION >= 330
    return opal_process_info.num_procs;
#else
    opal_process_name_t job = OPAL_PROC_MY_NAME;
    uint32_t size = 0, *size_ptr = &size;
    int rc;

    job.vpid = OPAL_VPID_WILDCARD;
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_JOB_SIZE, &job, &size_ptr, OPAL_UINT32);
    return OPAL_SUCCESS == rc ? size : 0;
#endif
}

END_C_DECLS

#endif /* MCA_BTL_OFI_COMPAT_H */
