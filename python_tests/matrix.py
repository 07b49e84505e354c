"""The test matrix, in one place.

Axes: provider x MR path x rank count x variant (MCA settings) select one
mpirun launch (a Group); within a launch, flavor x sync x op x dtype x
layout x count select the checks, which check_sets.py builds from the axes
declared here. Each check carries its tier: "fast" checks make the default
run (a slice that still crosses every axis value at least once), "full"
ones only run with `-m full`.

No MPI here: this module is imported by the pytest process.
"""

import dataclasses
import math
from pathlib import Path

import fabric
import launcher
import semantics as sem

# Providers named by the project; others that fi_getinfo lists run with
# --provider all or by name.
NAMED_PROVIDERS = ("shm", "sockets", "tcp;ofi_rxm", "udp;ofi_rxd")

# Providers btl-ofi declines by design (the quirk table of btl_ofi_discovery.c):
# name -> (last provider version known broken, the reason its message gives).
# They stay out of the matrix: test_bad_input checks each one's message, once.
DECLINED = {
    "udp;ofi_rxd": ((201, 0), "its atomics crash inside libfabric (segmentation fault when an "
                              "atomic is the first operation to a peer or follows a "
                              "multi-packet write; reproduced without MPI by "
                              "tools/rxd_atomic_repro.c)"),
}


def declined_reason(provider):
    """btl-ofi's reason for declining this provider at the version libfabric
    has here, or None if it serves it (or libfabric does not list it)."""
    last_bad, reason = DECLINED.get(provider, (None, None))
    version = next((p.version for p in fabric.rdm_rma_atomic_providers() if p.name == provider),
                   None)
    if last_bad is None or not version:
        return None
    return reason if tuple(int(v) for v in version.split(".")) <= last_bad else None

def selected_providers(config):
    """(providers to test, providers asked for that btl-ofi declines by design
    (DECLINED: each gets one test of its message, no matrix rows), providers
    discovered but not asked for): from --provider (conftest.py's option)."""
    discovered = [p.name for p in fabric.rdm_rma_atomic_providers()]
    wanted = config.getoption("--provider")
    if wanted == "all":
        chosen = discovered
    elif wanted:
        chosen = [p for p in wanted.split(",") if p]
    else:
        chosen = [p for p in NAMED_PROVIDERS if p in discovered]
    declined = [p for p in chosen if declined_reason(p)]
    return ([p for p in chosen if p not in declined], declined,
            [p for p in discovered if p not in chosen])


def providers_of(config):
    """selected_providers(config), worked out once per session."""
    if getattr(config, "_btlofi_providers", None) is None:
        config._btlofi_providers = selected_providers(config)
    return config._btlofi_providers


# MR path name -> value of the component's mr_mode parameter (None: not set)
MR_PATHS = {"default": None, "0": "0", "virt_addr": "virt_addr", "prov_key": "prov_key",
            "allocated": "allocated"}
MR_ALLOWED = {"default": {"virt_addr", "prov_key", "allocated", "local", "endpoint"}, "0": set(),
              "virt_addr": {"virt_addr"}, "prov_key": {"prov_key"},
              "allocated": {"allocated"}}

# ofi_strictmr (strictmr/, issue 13) over these cores demands what real NICs do:
# mode set name -> FI_MR_* bits it demands; each runs with 2- and 4-byte keys.
STRICT_CORES = ("shm", "tcp;ofi_rxm")
STRICT_SETS = {
    "verbs-like": ("local", "virt_addr", "allocated", "prov_key"),
    "cxi-like": ("allocated", "endpoint"),
    "efa-like": ("local", "virt_addr", "allocated", "prov_key", "endpoint"),
}
STRICT_KEY_SIZES = (2, 4)
# ofi_strictmr's NIC profiles (FI_OFI_STRICTMR_PROFILE, strictmr/README.md "Profiles"):
# name -> (the FI_MR_* bits and key size it demands); its behaviours (reordering, own
# progress, queue sizes, completion level, atomics, registration cost) are in the
# "nic" object of each report line.
STRICT_PROFILES = {
    "verbs-like": (("local", "virt_addr", "allocated", "prov_key"), 4),
    "efa-like": (("virt_addr", "allocated", "prov_key"), 2),
    "cxi-like": (("endpoint", "allocated", "prov_key"), 8),
    "psm3-like": ((), 8),
}
STRICT_REPORT_SETTINGS = "nic"
# Profiles whose NIC has only 64-bit atomics (verbs: fetch-add and compare-swap): btl-ofi
# then advertises no 32-bit atomics and osc/rdma does those with get, op and put.
STRICT_PROFILES_64BIT_ATOMICS = {"verbs-like"}


def no_32bit_atomics(group):
    """Does this launch's provider leave btl-ofi without 32-bit atomics?"""
    return bool(group.profile and group.strict and
                group.strict[0] in STRICT_PROFILES_64BIT_ATOMICS)

PUT_GET_LIMIT = 65536  # the "split" variant caps BTL put/get at this size

# variant -> the component's parameters (names after btl_<component>_)
VARIANTS = {
    "base": {},
    "emulate": {"debug_atomic_emulation": "1"},
    "split": {"put_limit": str(PUT_GET_LIMIT), "get_limit": str(PUT_GET_LIMIT)},
    "read_proof": {"completion": "read_proof"},
    "batch1": {"progress_batch": "1"},
    # every 3rd access takes its registration handle as stale: the peer is asked
    # which registration covers it (NOTES.txt section 3c)
    "stale": {"debug_inject_stale_handle": "3"},
    # every atomic and every get travels as a message that the target's progress
    # applies and answers, as on a provider without atomics or RMA read (NOTES.txt 4, 6)
    "messages": {"atomics": "messages", "gets": "messages"},
}
# Variants a provider may legitimately refuse (the component then says why).
OPTIONAL_VARIANTS = {"read_proof"}

FLAVORS = {  # name -> (window flavor, disp_unit; None = element size)
    "create_du1": ("create", 1), "create_du4": ("create", 4), "create_du8": ("create", 8),
    "create_du3": ("create", 3), "allocate": ("allocate", None), "dynamic": ("dynamic", 1),
}
SYNCS = ("fence", "fence_assert", "pscw", "lock_shared", "lock_exclusive", "lock_all",
         "flush", "flush_all", "flush_local", "flush_local_all", "sync")
PASSIVE_SYNCS = ("lock_shared", "lock_exclusive", "lock_all", "flush", "flush_all",
                 "flush_local", "flush_local_all", "sync")
OPS = ("put", "get", "acc", "gacc", "fop", "cas", "rput", "rget", "racc", "rgacc")
REQUEST_OPS = ("rput", "rget", "racc", "rgacc")
DTYPES = ("int8", "int16", "int32", "int64", "uint32", "uint64", "float32", "float64",
          "complex128")
LAYOUTS = ("contig", "vector", "indexed", "struct", "subarray")
CAS_DTYPES = ("int8", "int16", "int32", "int64", "uint32", "uint64")

# osc/rdma 4.1.4 hands accumulate-type ops of <= network_amo_max_count (32)
# elements of 4/8-byte types to the BTL's atomics, larger ones to get-op-put
# in pieces of at most buffer_size/8 = 4096 bytes.
AMO_MAX_COUNT = 32
AMO_OPS = {"SUM", "MIN", "MAX", "BAND", "BOR", "BXOR", "LAND", "LOR", "LXOR", "REPLACE"}
ACC_LIMIT_BYTES = 4096

XFAIL_UNSIGNED = ("known upstream limitation: osc/rdma (4.1.4, 5.0.7) passes MIN/MAX to the BTL "
                  "without signedness, so unsigned values >= 2**(bits-1) get signed semantics "
                  "on the BTL atomic path (NOTES.txt 6)")
XFAIL_GACC_DERIVED = ("known upstream bug in osc/rdma 4.1.4 (ompi_osc_rdma_gacc_amo): with a "
                      "derived origin/result or target datatype the fetched values are unpacked "
                      "from the already-advanced result pointer, so Get_accumulate returns "
                      "garbage; same with btl/vader, correct with osc/pt2pt (fixed in 5.0; "
                      "NOTES.txt 10)")


@dataclasses.dataclass(frozen=True)
class Group:
    """One mpirun launch. Its label names the MR mode the component must
    negotiate (mr: bits joined by "+", or "none"), checked against what every
    rank reports, not the mask (mr_path) that selects it."""
    provider: str
    mr_path: str
    nranks: int
    variant: str
    mr: str = ""
    strict: tuple = ()  # (mode set name, key size) for provider "<core>;ofi_strictmr"
    profile: bool = False  # strict[0] names a STRICT_PROFILES profile, not a mode set

    @property
    def label(self):
        strict = f"|{'profile ' if self.profile else ''}{self.strict[0]},key{self.strict[1]}" \
            if self.strict else ""
        return f"{self.provider}{strict}|mr={self.mr or '?'}|np{self.nranks}|{self.variant}"

    def mr_bits(self):
        """The negotiated MR bits this group's name promises, or None if unknown."""
        if not self.mr:
            return None
        return set() if self.mr == "none" else set(self.mr.split("+"))

    def ours(self):
        """The component's parameters for this launch (names after btl_<component>_)."""
        params = dict(VARIANTS[self.variant])
        if MR_PATHS[self.mr_path] is not None:
            params["mr_mode"] = MR_PATHS[self.mr_path]
        return params

    def report(self, workdir):
        """Where the strict provider writes its report for a launch in workdir (env), or
        None when the launch has no strict provider: a Launch's strict_report."""
        return Path(workdir) / "strictmr.jsonl" if self.strict else None

    def env(self, workdir):
        """libfabric variables of this launch: the strict provider's demands and report."""
        if not self.strict:
            return {}
        if self.profile:
            return profile_env(self.strict[0], self.report(workdir))
        return {"FI_PROVIDER_PATH": str(strict_provider_dir()),
                "FI_OFI_STRICTMR_MR_MODE": ",".join(STRICT_SETS[self.strict[0]]),
                "FI_OFI_STRICTMR_KEY_SIZE": str(self.strict[1]),
                "FI_OFI_STRICTMR_REPORT": str(self.report(workdir))}


def strict_provider_dir():
    """Where make install put libstrictmr-fi.so (beside the component)."""
    return Path(launcher.load_env_file()["BTL_OFI_COMPONENT_DIR"]) / "prov"


def strict_installed():
    """Did make install put ofi_strictmr beside the component?"""
    return (strict_provider_dir() / "libstrictmr-fi.so").exists()


def profile_env(profile, report):
    """libfabric variables that make ofi_strictmr behave as a NIC profile."""
    return {"FI_PROVIDER_PATH": str(strict_provider_dir()), "FI_OFI_STRICTMR_PROFILE": profile,
            "FI_OFI_STRICTMR_REPORT": str(report)}


def profile_events(settings, one_at_a_time=False):
    """behaviour -> the report event that must have moved in a run with these settings
    (a report line's "nic" object). A queue size is a limit that a run may not reach, so
    it is judged by the tight-queue rows, not here. A program that waits for each operation
    before the next (one_at_a_time) has nothing to reorder, and its few completions are
    mostly reaped by its own polling before the provider's thread wakes (thread_completions
    counts only what the thread reaped), so neither is asked of it."""
    need = {}
    if settings.get("reorder") and not one_at_a_time:
        need["reordering"] = "reordered"
    if settings.get("progress_us", -1) >= 0 and not one_at_a_time:
        need["its own progress"] = "thread_completions"
    if settings.get("reg_cost_us") or settings.get("reg_cost_page_ns"):
        need["the registration cost"] = "reg_charged"
    return need


def mr_label(bits):
    """MR bits in libfabric's order joined by "+" ("|" separates a label's fields)."""
    ordered = [name for name in fabric.MR_BITS if name in bits]
    return "+".join(ordered) if ordered else "none"


def negotiated_label(provider, mask="default", variant="base"):
    """The name of the MR mode btl-ofi must negotiate for this row ("" if unknown)."""
    completion = VARIANTS[variant].get("completion", "auto")
    bits = fabric.negotiated_mr(provider, frozenset(MR_ALLOWED[mask]), completion)
    return "" if bits is None else mr_label(bits)


def mr_groups(provider):
    """(mask name, negotiated label) for each MR mask that changes what is
    negotiated with provider, the default first; a mask that would negotiate
    the same as an earlier one is dropped (its row would test nothing new)."""
    out, seen = [], set()
    for mask in MR_PATHS:
        label = negotiated_label(provider, mask)
        if mask == "default" or (label and label not in seen):
            seen.add(label)
            out.append((mask, label))
    return out


def strict_groups(providers):
    """ofi_strictmr rows over each strict core under test, if it is installed."""
    if not strict_installed():
        return []
    sets = [Group(f"{core};ofi_strictmr", "default", 2, "base", mr_label(set(bits)),
                  (name, key))
            for core in STRICT_CORES if core in providers
            for name, bits in STRICT_SETS.items() for key in STRICT_KEY_SIZES]
    profiles = [profile_group(core, name, 2)
                for core in STRICT_CORES if core in providers for name in STRICT_PROFILES]
    return sets + profiles


def profile_group(core, profile, nranks, variant="base"):
    """A launch of nranks over ofi_strictmr on core, behaving as the NIC profile."""
    bits, key = STRICT_PROFILES[profile]
    return Group(f"{core};ofi_strictmr", "default", nranks, variant, mr_label(set(bits)),
                 (profile, key), profile=True)


def groups(providers, full=False, strict=True):
    """Launch groups for these providers. The fast set: every provider x MR
    mode it can be made to negotiate at 2 ranks, plus 3 and 4 ranks, emulation,
    split transfers, read-proof completion and progress batch 1 on the default
    MR path, plus the strict provider's NIC-like mode sets and key sizes."""
    out = []
    for prov in providers:
        modes = mr_groups(prov)
        default = modes[0][1]
        for mask, mr in modes:
            out.append(Group(prov, mask, 2, "base", mr))
        for n in (3, 4):
            out.append(Group(prov, "default", n, "base", default))
        for variant in ("emulate", "split", "read_proof", "batch1", "stale", "messages"):
            out.append(Group(prov, "default", 2, variant,
                             negotiated_label(prov, "default", variant)))
        if full:
            for mask, mr in modes[1:]:
                out.append(Group(prov, mask, 4, "base", mr))
                out.append(Group(prov, mask, 2, "emulate", mr))
    if strict:  # ofi_strictmr checks remote keys through one host's shared memory
        out += strict_groups(providers)
    return out


def group_tier(group):
    """Groups that exist only in the full matrix."""
    return "full" if (group.mr_path != "default" and group.variant != "base") or \
        (group.mr_path != "default" and group.nranks != 2) else "fast"


# ---------------------------------------------------------------- the default slice
#
# `scripts/test.sh` runs a slice of the matrix that still crosses every axis value at
# least once; `--full` runs every cell. conftest.py applies these to what pytest
# collected (default_slice), nothing else chooses:
#   - launch groups (conformance, on one host and across hosts): a covering of
#     group_axes; a chosen group runs its whole fast tier of checks (check_sets.checks_for:
#     every flavor, sync, op, dtype, layout and size), the others run nothing;
#   - every other parametrized test: a covering of its parameters' values;
#   - a strict xfail once per upstream cause (its reason): the first cell that has it.

# Parameters that name an axis the whole suite shares: each value is covered once across
# all tests (test_attach's shm covers shm for test_coalesce too). A test's own
# parameters (test_bad_parameter's inputs, test_name_selects' names) are no axis: the
# slice runs one of its cases, --full all.
SHARED_AXES = {"provider": "provider", "refusing_provider": "provider", "core": "provider",
               "profile": "NIC profile", "mode": "mode set", "key_size": "key size",
               "wake": "wake", "nranks": "ranks"}

# Modules that launch nothing: they run whole, slicing them would save nothing.
NO_LAUNCH = ("test_domains_compare.py", "test_notes_file_map.py", "test_outcome_mapping.py",
             "test_scripts_lint.py", "test_suite_layout.py")

# Tests (fnmatch patterns of node ids) the default slice leaves to --full, each with
# what still covers its axes there.
FULL_ONLY = {
    "test_node_local.py::test_stress_mixed[[]*": "osc_stress on the mixed job, 45 s a run; "
    "the mixed job's exactness under contention: test_node_peers_over_shm",
    "test_node_local.py::test_threads_mixed[[]*": "osc_threads on the mixed job, 45 s a run; "
    "wake's arming and waking: test_wake",
    "test_node_local.py::test_node_atomics_over_network": "local_atomics=network, 15 s; "
    "atomics to node partners through the network provider: test_nic_profile_beside_shm",
    "test_node_local.py::test_no_long_pause": "local_busy_poll_us=0, 9 s; the pace beside "
    "shm, long pauses included: test_node_peers_over_shm",
    "test_node_local.py::test_idle_poll_every_pass": "idle_poll_ratio=0, 6 s; the pace "
    "beside shm: test_node_peers_over_shm",
    "test_stripes.py::test_stress_beside_shm[[]*": "osc_stress over shm and two NICs, 20-35 s "
    "a run; striping: test_large_transfers_use_both_nics",
    "test_stale_key.py::*[[]shm*": "shm never completes an access through a closed key, so "
    "the tool waits out every probe (100 s); the other providers' cells run",
    "test_reliability.py::test_stress_fast[[]*": "scripts/check-stress.sh --fast, 35-55 s "
    "per provider; exactness under random mixes: the conformance concurrency checks, fault "
    "injection: test_strictmr_provider, -FI_EAGAIN: test_nic_profiles' tight queues",
}


def group_axes(group):
    """The axis values a launch group stands for. A plain provider with each MR mode
    it negotiates, and as the core of ofi_strictmr once more with the plain base
    checks; a variant, a rank count, a mode set, a NIC profile, a key size."""
    axes = {("ranks", group.nranks), ("variant", group.variant)}
    if group.strict:
        axes |= {("provider", group.provider), ("key size", group.strict[1]),
                 ("profile" if group.profile else "mode set", group.strict[0])}
    else:
        axes |= {("provider and MR mode", group.provider, group.mr)}
        if group.variant == "base" and group.nranks == 2:
            axes.add(("base checks over", group.provider))
    return frozenset(axes)


def cover(cells, axes):
    """The cells (in their order) that a greedy covering keeps: each round the cell
    with the most axis values not had yet; of equals, the one whose other values were
    had the fewest times (spreading the picks), then the earliest; until every value
    some cell has is had. The same cells give the same slice."""
    values = [set(axes(cell)) for cell in cells]
    need = set().union(*values)
    had = {}
    chosen = set()
    while need:
        best = max(range(len(cells)), key=lambda i: (len(values[i] & need),
                                                     -sum(had.get(v, 0) for v in values[i]),
                                                     -i))
        chosen.add(best)
        need -= values[best]
        for v in values[best]:
            had[v] = had.get(v, 0) + 1
    return [cell for i, cell in enumerate(cells) if i in chosen]


# ---------------------------------------------------------------- expectations

def amo_path(spec):
    """Does osc/rdma send this check's accumulate to the BTL's atomics?"""
    if spec["kind"] != "rma" or spec["op"] not in ("acc", "racc", "gacc", "rgacc", "fop"):
        return False
    if spec["flavor"] == "allocate":
        return False
    return (spec["dtype"] in ("int64", "uint64") and spec["mpi_op"] in AMO_OPS
            and 0 < spec["count"] <= AMO_MAX_COUNT)


def known_failure(spec, group=None):
    """Reason for a strict xfail, or None. group: the launch, where its provider decides
    whether osc/rdma reaches the BTL's atomics at all."""
    if spec.get("highbit") and spec["kind"] == "rma" and spec["flavor"] != "allocate" and \
            spec.get("mpi_op") in ("MIN", "MAX") and spec["count"] <= AMO_MAX_COUNT and \
            not (group is not None and spec.get("dtype") in ("int32", "uint32")
                 and no_32bit_atomics(group)):
        return XFAIL_UNSIGNED
    if spec["kind"] == "rma" and spec["op"] in ("gacc", "rgacc") and amo_path(spec) and \
            (spec.get("olayout", "contig") != "contig" or spec.get("tlayout", "contig") != "contig") \
            and launcher.ompi_major() < 5:
        return XFAIL_GACC_DERIVED
    return None


def expected_counters(spec, group):
    """What this check must do to btl-ofi's counters (sums over all ranks).

    Returns (must_move, any_of, must_be_zero, minimums): every counter in
    must_move > 0; at least one of any_of > 0 (if given); every counter in
    must_be_zero == 0; counter >= value for minimums."""
    nranks = group.nranks
    kind = spec["kind"]
    must, any_of, zero, minimum = set(), set(), set(), {}
    traffic = {"put_count", "get_count", "atomic_count"}
    if spec.get("flavor") == "allocate":
        # one node: osc/rdma serves Win.Allocate from its shared segment, no BTL
        return must, any_of, traffic, minimum
    if kind in ("fadd_many", "acc_order") or (kind == "acc_atomic" and spec["count"] == 1
                                              and spec["dtype"] == "int64"):
        must.add("atomic_count")
    elif kind == "excl_lock":
        must.update({"get_count", "put_count"})
    elif kind in ("acc_atomic",):
        any_of.update(traffic)
    elif kind == "dynamic_regions":
        must.add("put_count")
    elif kind == "scatter_puts":
        must.add("put_count")
        minimum["put_count"] = nranks * (nranks - 1) * spec["count"]
    elif kind == "cas":
        if spec["dtype"] not in ("int64", "uint64"):
            any_of.update(traffic)
        elif launcher.ompi_major() >= 5:
            # within one node Open MPI 5's osc/rdma does compare-and-swap as a get
            # (and a put when it swaps) under its accumulate lock, not a BTL atomic
            any_of.update({"atomic_count", "get_count"})
        else:
            must.add("atomic_count")
    elif kind == "rma":
        op, count = spec["op"], spec["count"]
        nbytes = count * sem.NUMPY_DTYPES[spec["dtype"]].itemsize
        if count == 0:
            return must, any_of, zero, minimum
        if op in ("put", "rput"):
            must.add("put_count")
            minimum["put_bytes"] = nranks * nbytes
        elif op in ("get", "rget"):
            must.add("get_count")
            minimum["get_bytes"] = nranks * nbytes
        elif amo_path(spec):
            must.add("atomic_count")
        else:
            any_of.update(traffic)
        if group.variant == "split" and op in ("put", "rput", "get", "rget"):
            per_origin = math.ceil(nbytes / PUT_GET_LIMIT)
            minimum["put_count" if "put" in op else "get_count"] = nranks * per_origin
    _variant_counters(spec, group, must, any_of, zero)
    return must, any_of, zero, minimum


def _variant_counters(spec, group, must, any_of, zero):
    """expected_counters' additions for the launch's variant, to the sets the check's
    kind filled."""
    kind = spec["kind"]
    if group.variant == "emulate" and "atomic_count" in must and kind != "cas":
        must.add("atomic_emulated_count")
    if group.variant == "messages":
        # every BTL atomic and get went as a message; none through the compare-and-swap loop
        if "atomic_count" in must:
            must.add("atomics_as_messages")
        if "get_count" in must:
            must.add("gets_as_messages")
        zero.add("atomic_emulated_count")
    if group.variant == "read_proof" and kind == "rma" and spec.get("op") in ("put", "rput") \
            and spec.get("count", 1) > 0:
        # every put's callback waits for a read proving it landed (any sync), or, for a
        # small put that tcp's coalescing took into a batch while another was in flight
        # (put_gathered; timing decides), for the target's answer to the batch;
        # fetching atomics need none (their result is the proof)
        assert not any_of, any_of
        any_of.update({"proof_reads", "put_gathered"})


def budget_seconds(spec, group):
    """Generous time a check may take (the launch timeout sums these)."""
    nbytes = spec.get("count", 1) * sem.NUMPY_DTYPES.get(spec.get("dtype", "int64"),
                                                         sem.NUMPY_DTYPES["int64"]).itemsize
    per_rank = 2.0 + nbytes / 2e6 + spec.get("repeat", 0) * 0.05
    return per_rank * max(1, group.nranks / 2)
