"""What libfabric offers on this host, asked through fi_getinfo (cffi, API mode).

A tiny C extension is compiled once per source text into a cache directory;
it runs fi_getinfo with the same kind of hints btl-ofi uses (RDM endpoints,
RMA + atomics, every MR mode bit allowed so that providers needing modes the
BTL declines are listed too) and returns one line per fi_info.
"""

import dataclasses
import functools
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_CDEF = """
const char *btlofi_tests_providers(void);
long long btlofi_tests_rdm_caps(const char *name);
const char *btlofi_tests_rdm_names(void);
long long btlofi_tests_mr_mode(const char *name, long long mask, int read_proof);
"""

_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>

static char report[65536];

/* Every MR mode bit: the hints below accept whatever a provider asks. */
#define ALL_MR_MODES                                                                           \
    (FI_MR_LOCAL | FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |            \
     FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT | FI_MR_ENDPOINT | FI_MR_HMEM)

/* Every RDM info (any caps, every MR mode), of the provider prov_name only if not NULL;
 * NULL when there is none or fi_getinfo failed. */
static struct fi_info *rdm_infos(const char *prov_name)
{
    struct fi_info *hints = fi_allocinfo(), *list = NULL;

    if (NULL == hints) {
        return NULL;
    }
    hints->fabric_attr->prov_name = prov_name ? strdup(prov_name) : NULL;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = ALL_MR_MODES;
    if (0 != fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints,
                        &list)) {
        list = NULL;
    }
    fi_freeinfo(hints);
    return list;
}

/* One line per fi_info: prov_name TAB mr_mode TAB caps TAB msg_order TAB op_flags TAB
 * prov_version. The hints are btl-ofi's under MPI_THREAD_MULTIPLE (mpi4py's default). */
const char *btlofi_tests_providers(void)
{
    struct fi_info *hints = fi_allocinfo(), *list = NULL, *cur;
    size_t used = 0;
    int rc;

    report[0] = '\0';
    if (NULL == hints) {
        return "error\tfi_allocinfo failed";
    }
    hints->caps = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    hints->domain_attr->mr_mode = ALL_MR_MODES;
    rc = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints, &list);
    fi_freeinfo(hints);
    if (0 != rc) {
        snprintf(report, sizeof(report), "error\t%s", fi_strerror(-rc));
        return report;
    }
    for (cur = list; cur && used < sizeof(report) - 256; cur = cur->next) {
        used += snprintf(report + used, sizeof(report) - used,
                         "%s\t%d\t%llu\t%llu\t%llu\t%u.%u\n",
                         cur->fabric_attr->prov_name, cur->domain_attr->mr_mode,
                         (unsigned long long) cur->caps,
                         (unsigned long long) cur->tx_attr->msg_order,
                         (unsigned long long) cur->tx_attr->op_flags,
                         FI_MAJOR(cur->fabric_attr->prov_version),
                         FI_MINOR(cur->fabric_attr->prov_version));
    }
    fi_freeinfo(list);
    return report;
}

/* The MR mode of the first fi_info called exactly `name` when hints offer `mask`
 * (btl-ofi's hints: delivery-complete, or with read_proof read-after-write
 * ordering instead), or -1 if it offers none. */
long long btlofi_tests_mr_mode(const char *name, long long mask, int read_proof)
{
    struct fi_info *hints = fi_allocinfo(), *list = NULL, *cur;
    long long mode = -1;

    if (NULL == hints) {
        return -1;
    }
    hints->caps = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    hints->domain_attr->mr_mode = (int) mask;
    if (read_proof) {
        hints->tx_attr->msg_order = FI_ORDER_RMA_RAW | FI_ORDER_ATOMIC_RAW;
    } else {
        hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    }
    if (0 == fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &list)) {
        for (cur = list; cur && mode < 0; cur = cur->next) {
            if (0 == strcmp(cur->fabric_attr->prov_name, name)) {
                mode = cur->domain_attr->mr_mode;
            }
        }
    }
    fi_freeinfo(list);
    fi_freeinfo(hints);
    return mode;
}

/* Union of the caps of the RDM provider called exactly `name` (any caps asked
 * for, every MR mode allowed), or -1 when libfabric has no such provider. */
long long btlofi_tests_rdm_caps(const char *name)
{
    struct fi_info *list = rdm_infos(name), *cur;
    long long caps = -1;

    for (cur = list; cur; cur = cur->next) {
        if (0 == strcmp(cur->fabric_attr->prov_name, name)) {
            caps = (caps < 0 ? 0 : caps) | (long long) cur->caps;
        }
    }
    fi_freeinfo(list);
    return caps;
}

/* Names of every RDM provider (any caps, every MR mode), one per line, in
 * fi_getinfo order, repeats included. */
const char *btlofi_tests_rdm_names(void)
{
    static char names[16384];
    struct fi_info *list = rdm_infos(NULL), *cur;
    size_t used = 0;

    names[0] = '\0';
    for (cur = list; cur && used < sizeof(names) - 256; cur = cur->next) {
        used += snprintf(names + used, sizeof(names) - used, "%s\n", cur->fabric_attr->prov_name);
    }
    fi_freeinfo(list);
    return names;
}
"""

# libfabric's FI_MR_* bits (rdma/fabric.h, stable ABI since 1.5)
MR_BITS = {
    "local": 1 << 2, "raw": 1 << 3, "virt_addr": 1 << 4, "allocated": 1 << 5,
    "prov_key": 1 << 6, "mmu_notify": 1 << 7, "rma_event": 1 << 8, "endpoint": 1 << 9,
    "hmem": 1 << 10,
}
# Bits btl-ofi serves; a provider asking for any other bit is declined. local
# and endpoint are taken only from a provider that cannot do without them.
MR_SERVED = {"virt_addr", "prov_key", "allocated", "local", "endpoint"}
MR_ON_DEMAND = {"local", "endpoint"}
MR_DECLINED = {"raw", "rma_event", "mmu_notify"}


def mr_mask(names):
    return sum(MR_BITS[n] for n in names)


@functools.lru_cache(maxsize=None)
def negotiated_mr(provider, allowed, completion="auto"):
    """The MR bits btl-ofi should negotiate with `provider` when its mr_mode
    parameter allows `allowed` (a frozenset of names) and its completion
    parameter is `completion`, as btl_ofi_discovery.c asks: everything served
    and allowed, then without local/endpoint if the provider can do without;
    delivery-complete first under auto. hmem is left out (system memory needs
    nothing of it). None if the provider offers nothing. The conformance rows
    are named by this, and each launch checks it against what the component
    reports."""
    lib = _extension().lib
    offered = set(allowed) & MR_SERVED
    tries = {"auto": (0, 1), "delivery": (0,), "read_proof": (1,)}[completion]
    for read_proof in tries:
        mode = lib.btlofi_tests_mr_mode(provider.encode(), mr_mask(offered), read_proof)
        if mode >= 0:
            break
    if mode < 0:
        return None
    if mr_names(mode) & MR_ON_DEMAND:
        cheaper = lib.btlofi_tests_mr_mode(provider.encode(), mr_mask(offered - MR_ON_DEMAND),
                                           read_proof)
        mode = cheaper if cheaper >= 0 else mode
    return frozenset(mr_names(mode) - {"hmem"})


def mr_names(mask):
    return {name for name, bit in MR_BITS.items() if mask & bit}


def mr_names_ordered(mask):
    """The names of mask's bits in libfabric's bit order, as btl-ofi prints them."""
    return [name for name, bit in MR_BITS.items() if mask & bit]


@dataclasses.dataclass(frozen=True)
class ProviderInfo:
    name: str
    mr_modes: tuple  # one MR-mode bit set per fi_info of this provider
    version: str = ""  # fabric_attr->prov_version as "major.minor"

    @property
    def declined_bits(self):
        """MR bits this provider insists on in EVERY fi_info that btl-ofi declines."""
        sets = [mr_names(m) & MR_DECLINED for m in self.mr_modes]
        return set.intersection(*sets) if sets else set()


def _cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or tempfile.gettempdir()
    digest = hashlib.sha256((_CDEF + _SOURCE + sys.version).encode()).hexdigest()[:16]
    return Path(base) / f"btl-ofi-tests-cffi-{digest}"


@functools.lru_cache(maxsize=None)
def _extension():
    import cffi

    build = _cache_dir()
    name = "_btlofi_fi_discover"
    built = sorted(build.glob(f"{name}*.so")) if build.exists() else []
    if not built:
        build.mkdir(parents=True, exist_ok=True)
        ffi = cffi.FFI()
        ffi.cdef(_CDEF)
        ffi.set_source(name, _SOURCE, libraries=["fabric"])
        built = [Path(ffi.compile(tmpdir=str(build), verbose=False))]
    spec = importlib.util.spec_from_file_location(name, built[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FI_MSG, FI_RMA, FI_ATOMIC = 1 << 1, 1 << 2, 1 << 4  # rdma/fabric.h


@functools.lru_cache(maxsize=None)
def rdm_caps(name):
    """caps (FI_*) of the RDM provider called exactly `name`, or None if there is none."""
    mod = _extension()
    caps = mod.lib.btlofi_tests_rdm_caps(name.encode())
    return None if caps < 0 else caps


@functools.lru_cache(maxsize=None)
def rdm_rma_atomic_providers():
    """Providers offering FI_EP_RDM with RMA and atomics, in fi_getinfo order."""
    mod = _extension()
    text = mod.ffi.string(mod.lib.btlofi_tests_providers()).decode()
    if text.startswith("error\t"):
        return ()
    modes, versions = {}, {}
    for line in text.splitlines():
        fields = line.split("\t")
        modes.setdefault(fields[0], []).append(int(fields[1]))
        versions.setdefault(fields[0], fields[5])
    return tuple(ProviderInfo(name, tuple(m), versions[name]) for name, m in modes.items())


@functools.lru_cache(maxsize=None)
def servable_rdm_providers():
    """RDM providers btl-ofi can serve, in fi_getinfo order: RMA with atomics, or
    RMA with FI_MSG to carry atomics and gets as messages (NOTES.txt 2)."""
    mod = _extension()
    names = []
    for name in mod.ffi.string(mod.lib.btlofi_tests_rdm_names()).decode().splitlines():
        caps = rdm_caps(name)
        if name not in names and caps is not None and caps & FI_RMA and \
                caps & (FI_ATOMIC | FI_MSG):
            names.append(name)
    return tuple(names)


def fi_domains(provider, netns=None):
    """[(domain, fabric)] of the provider's RDM entries as fi_info prints them, in its order,
    once each; netns: as seen inside that network namespace."""
    argv = (["ip", "netns", "exec", netns] if netns else []) + \
        ["fi_info", "-p", provider, "-t", "FI_EP_RDM"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    seen, fabric = [], None
    for line in out.splitlines():
        key, _, value = line.strip().partition(": ")
        if key == "fabric":
            fabric = value
        elif key == "domain" and (value, fabric) not in seen:
            seen.append((value, fabric))
    return seen
