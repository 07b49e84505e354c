/*
 * ofi_strictmr: a PCI device behind a domain (FI_OFI_STRICTMR_NIC_PCI).
 *
 * NIC providers name the device of each domain in fi_info's nic (fi_nic(3): bus_attr,
 * a PCI address for verbs, efa, cxi, psm3 and opx); a caller that picks the NIC nearest
 * its cores (btl-ofi, Open MPI's ofi components, MPICH) finds the device in its hwloc
 * topology. The cores here (tcp, sockets, shm) name none. FI_OFI_STRICTMR_NIC_PCI lists
 * DOMAIN=DDDD:BB:DD.F pairs: the infos of each named domain carry that address, so that
 * the choice can be tried on one machine against a made-up topology (HWLOC_XMLFILE).
 * The nic object is ours: fi_freeinfo closes it and fi_dupinfo asks it for a copy
 * (fi_control FI_DUP), so it answers both.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strictmr.h"

#define NIC_PCI_MAX 8

static struct {
    char domain[64];
    struct fi_pci_attr pci;
} nic_pci[NIC_PCI_MAX];
static size_t nic_pci_count;

struct strictmr_nic {
    struct fid_nic nic; /* first: the fid is the object */
    struct fi_bus_attr bus;
};

static int nic_close(struct fid *fid)
{
    free(fid);
    return 0;
}

static int nic_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    return -FI_ENOSYS;
}

static int nic_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
                           void *context)
{
    return -FI_ENOSYS;
}

static struct fid_nic *nic_new(const struct fi_pci_attr *pci);

static int nic_control(struct fid *fid, int command, void *arg)
{
    struct strictmr_nic *nic = (struct strictmr_nic *)fid;

    if (command != FI_DUP || !arg) {
        return -FI_ENOSYS;
    }
    *(struct fid_nic **)arg = nic_new(&nic->bus.attr.pci);
    return *(struct fid_nic **)arg ? 0 : -FI_ENOMEM;
}

static int nic_tostr(const struct fid *fid, char *buf, size_t len)
{
    const struct strictmr_nic *nic = (const struct strictmr_nic *)fid;
    const struct fi_pci_attr *pci = &nic->bus.attr.pci;
    size_t used = strlen(buf);

    if (used < len) {
        snprintf(buf + used, len - used, "    nic: FI_BUS_PCI %04x:%02x:%02x.%x\n",
                 pci->domain_id, pci->bus_id, pci->device_id, pci->function_id);
    }
    return 0;
}

static struct fi_ops nic_ops = {
    .size = sizeof(struct fi_ops),
    .close = nic_close,
    .bind = nic_no_bind,
    .control = nic_control,
    .ops_open = nic_no_ops_open,
    .tostr = nic_tostr,
};

static struct fid_nic *nic_new(const struct fi_pci_attr *pci)
{
    struct strictmr_nic *nic = calloc(1, sizeof(*nic));

    if (!nic) {
        return NULL;
    }
    nic->nic.fid.fclass = FI_CLASS_NIC;
    nic->nic.fid.ops = &nic_ops;
    nic->bus.bus_type = FI_BUS_PCI;
    nic->bus.attr.pci = *pci;
    nic->nic.bus_attr = &nic->bus;
    return &nic->nic;
}

/* "DOMAIN=DDDD:BB:DD.F[,...]": false (nothing kept) if any pair is unreadable. */
static bool parse(const char *text)
{
    char *copy = strdup(text), *save = NULL;
    bool ok = copy != NULL && *text;

    nic_pci_count = 0;
    for (char *pair = copy ? strtok_r(copy, ",", &save) : NULL; ok && pair;
         pair = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(pair, '=');
        unsigned dom, bus, dev, fn;
        int end = 0;

        ok = eq && eq != pair && (size_t)(eq - pair) < sizeof(nic_pci[0].domain) &&
             nic_pci_count < NIC_PCI_MAX &&
             sscanf(eq + 1, "%4x:%2x:%2x.%1x%n", &dom, &bus, &dev, &fn, &end) == 4 &&
             eq[1 + end] == '\0';
        if (ok) {
            memcpy(nic_pci[nic_pci_count].domain, pair, (size_t)(eq - pair));
            nic_pci[nic_pci_count].domain[eq - pair] = '\0';
            nic_pci[nic_pci_count].pci = (struct fi_pci_attr){
                .domain_id = (uint16_t)dom, .bus_id = (uint8_t)bus,
                .device_id = (uint8_t)dev, .function_id = (uint8_t)fn};
            nic_pci_count++;
        }
    }
    free(copy);
    if (!ok) {
        nic_pci_count = 0;
    }
    return ok;
}

void strictmr_device_params(void)
{
    char *text = NULL;

    fi_param_define(&strictmr_prov, "nic_pci", FI_PARAM_STRING,
                    "PCI addresses of domains, as NIC providers give them (fi_info nic "
                    "bus_attr): DOMAIN=DDDD:BB:DD.F[,...], at most 8 (default: none, as the "
                    "cores)");
    if (fi_param_get_str(&strictmr_prov, "nic_pci", &text) || !text) {
        return;
    }
    if (!parse(text)) {
        FI_WARN(&strictmr_prov, FI_LOG_CORE,
                "FI_OFI_STRICTMR_NIC_PCI=\"%s\": DOMAIN=DDDD:BB:DD.F[,...] (at most %d) "
                "expected: the provider offers nothing\n",
                text, NIC_PCI_MAX);
        strictmr_config.valid = false;
    }
}

int strictmr_device_info(struct fi_info *info)
{
    for (size_t i = 0; i < nic_pci_count; i++) {
        if (info->domain_attr->name && !strcmp(info->domain_attr->name, nic_pci[i].domain)) {
            struct fid_nic *nic = nic_new(&nic_pci[i].pci);

            if (!nic) {
                return -FI_ENOMEM;
            }
            if (info->nic) {
                fi_close(&info->nic->fid);
            }
            info->nic = nic;
            return 0;
        }
    }
    return 0;
}
