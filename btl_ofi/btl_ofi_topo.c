/*
 * btl-ofi topology: which of several NICs is near this process.
 *
 * A NIC provider names the device behind each domain (fi_nic(3): nic->bus_attr, a PCI
 * address for verbs, efa, cxi, psm3 and opx). Open MPI's hwloc topology holds the PCI
 * devices (it is loaded with the important I/O objects) and where each hangs: the nearest
 * object above a device that holds cpus is its package or NUMA node. A NIC is near a
 * process when that object shares a cpu with the process's binding. The software
 * providers (tcp, sockets, shm) name no device, and an unbound process is as near to one
 * NIC as to another: then nothing is near, and the caller spreads by local rank alone.
 */

#include "btl_ofi_topo.h"

#include <stdio.h>

#if defined(__has_include)
#if __has_include("opal/mca/hwloc/base/base.h")
#include "opal/mca/hwloc/base/base.h"
#define MCA_BTL_OFI_HAVE_TOPOLOGY 1
#endif
#endif

/* fi_info's nic (struct fid_nic) arrived with libfabric 1.7. */
#if FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION) < FI_VERSION(1, 7)
#undef MCA_BTL_OFI_HAVE_TOPOLOGY
#endif

#if defined(MCA_BTL_OFI_HAVE_TOPOLOGY)

/* The cpus the topology places nearest info's PCI device, or NULL (no PCI address, or no
 * such device in the topology). */
static hwloc_obj_t mca_btl_ofi_topo_home(hwloc_topology_t topo, const struct fi_info *info)
{
    const struct fi_pci_attr *pci;
    hwloc_obj_t dev;

    if (NULL == info->nic || NULL == info->nic->bus_attr ||
        FI_BUS_PCI != info->nic->bus_attr->bus_type) {
        return NULL;
    }
    pci = &info->nic->bus_attr->attr.pci;
    dev = hwloc_get_pcidev_by_busid(topo, pci->domain_id, pci->bus_id, pci->device_id,
                                    pci->function_id);
    return NULL == dev ? NULL : hwloc_get_non_io_ancestor_obj(topo, dev);
}

/* This process's cpus, or NULL if it is not bound (it may run on every cpu). */
static hwloc_bitmap_t mca_btl_ofi_topo_bound(hwloc_topology_t topo)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();

    if (NULL == set) {
        return NULL;
    }
    if ((0 != hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) &&
         0 != hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_THREAD)) ||
        hwloc_bitmap_iszero(set) ||
        hwloc_bitmap_isincluded(hwloc_get_root_obj(topo)->cpuset, set)) {
        hwloc_bitmap_free(set);
        return NULL;
    }
    return set;
}

unsigned mca_btl_ofi_topo_near(const struct fi_info *const *cand, unsigned count, bool *near,
                               char *why, size_t len)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t bound;
    unsigned found = 0, placed = 0;
    char cpus[64], where[64];
    size_t used;

    for (unsigned i = 0; i < count; ++i) {
        near[i] = false;
    }
    if (OPAL_SUCCESS != opal_hwloc_base_get_topology() || NULL == opal_hwloc_topology) {
        snprintf(why, len, "no topology");
        return 0;
    }
    topo = opal_hwloc_topology;
    bound = mca_btl_ofi_topo_bound(topo);
    if (NULL == bound) {
        snprintf(why, len, "process not bound");
        return 0;
    }
    hwloc_bitmap_list_snprintf(cpus, sizeof(cpus), bound);
    used = (size_t)snprintf(why, len, "cpus %s near", cpus);
    for (unsigned i = 0; i < count; ++i) {
        hwloc_obj_t home = mca_btl_ofi_topo_home(topo, cand[i]);

        if (NULL == home || NULL == home->cpuset) {
            continue;
        }
        ++placed;
        near[i] = hwloc_bitmap_intersects(home->cpuset, bound);
        if (!near[i]) {
            continue;
        }
        ++found;
        hwloc_obj_type_snprintf(where, sizeof(where), home, 0);
        if (used < len) {
            used += (size_t)snprintf(why + used, len - used, "%s %s (%s %u)",
                                     1 == found ? "" : ",", cand[i]->domain_attr->name, where,
                                     home->logical_index);
        }
    }
    hwloc_bitmap_free(bound);
    if (0 == placed) {
        snprintf(why, len, "no device paths");
    } else if (0 == found || count == found) {
        snprintf(why, len, "cpus %s %s", cpus,
                 found ? "as near to each NIC" : "near no NIC");
    }
    return (0 < found && found < count) ? found : 0;
}

#else /* !MCA_BTL_OFI_HAVE_TOPOLOGY */

unsigned mca_btl_ofi_topo_near(const struct fi_info *const *cand, unsigned count, bool *near,
                               char *why, size_t len)
{
    (void)cand;
    for (unsigned i = 0; i < count; ++i) {
        near[i] = false;
    }
    snprintf(why, len, "no topology in this build");
    return 0;
}

#endif
