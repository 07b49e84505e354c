"""Provider names as libfabric users write them (issue 15, item 1).

btl_<component>_provider_include takes names the way FI_PROVIDER does
(fabric(7), fi_fabric(3)): a comma list, case does not matter, a core
provider ("tcp") stands for every stack over it ("tcp;ofi_rxm": what
`fi_info -p tcp` and `FI_PROVIDER=tcp fi_info` list), a leading "^" leaves
the names out. A full name as fi_info prints it ("tcp;ofi_rxm",
"shm;ofi_strictmr") stands for that stack only. FI_PROVIDER itself filters
what fi_getinfo offers, and the parameter narrows within it.

Every selection case is a real 2-rank job whose one-sided results must be
exact and whose traffic must go through btl-ofi on the expected provider
(every rank's "selected provider" line and our counters, outcome.py); every
refusal is btl-ofi's message, word for word (refusals.py).
"""

import pytest

import fabric
import launcher
import matrix
import outcome
import refusals

# provider_include (None: not set), FI_PROVIDER (None: not set) -> the stack
# btl-ofi must select. The default selection here is tcp;ofi_rxm (the first
# stack libfabric lists), so each case that expects another one shows that
# the name or FI_PROVIDER was obeyed.
SELECTS = {
    # a core name means its RDM stack, on libfabric 1.17 and 2.x alike (2.x's
    # plain tcp has RMA but no atomics, which osc/rdma needs)
    "core_name": ("tcp", None, "tcp;ofi_rxm"),
    "core_name_any_case": ("TCP", None, "tcp;ofi_rxm"),
    "full_name": ("tcp;ofi_rxm", None, "tcp;ofi_rxm"),
    # a list; udp stands for udp;ofi_rxd, which btl-ofi declines
    "list": ("udp,sockets", None, "sockets"),
    # FI_PROVIDER alone is honoured (libfabric registers only what it names)
    "fi_provider": (None, "sockets", "sockets"),
    "fi_provider_list": (None, "udp,sockets", "sockets"),
    # the parameter narrows within FI_PROVIDER
    "narrows_fi_provider": ("tcp", "shm,tcp", "tcp;ofi_rxm"),
    # as in FI_PROVIDER, a leading ^ leaves the names out: what is left here is sockets
    "caret_excludes": ("^tcp,net,udp,shm", None, "sockets"),
}
# provider_exclude -> the stack btl-ofi must select: a name leaves out every
# stack it is part of ("ofi_rxm": tcp;ofi_rxm and net;ofi_rxm)
EXCLUDES = {
    "utility_names": ("ofi_rxm,ofi_rxd,net,shm", "sockets"),
    "core_name": ("TCP,net,udp,shm", "sockets"),
}

PLAN = refusals.PLAN


def _selected(tmp_path, expected, provider=None, ours=None, env=None):
    """Run the plan; the job must be exact and carried by btl-ofi on `expected`."""
    launch = launcher.run_mpi(2, {"checks": PLAN}, timeout=90, workdir=tmp_path,
                              provider=provider, ours=ours, env_overrides=env)
    where = f"provider_include={provider!r} ours={ours} env={env}"
    failed = outcome.launch_failure(launch, where)
    if failed:
        failed.apply()
    recs = outcome.records(launch, "check")
    wrong = [f"{r['id']}: {r['errors'][:2]}" for r in recs if r["errors"]]
    assert len(recs) == len(PLAN) and not wrong, \
        f"{where}: {len(recs)}/{len(PLAN)} checks reported, wrong: {wrong}"
    carried, reasons = outcome.proof_of_path(launch, matrix.Group(expected, "default", 2, "base"))
    assert carried, f"{where}: not carried by btl-ofi on {expected}: {reasons}\n" \
                    f"  {launch.command_line()}"


def _present(*providers):
    names = {p.name for p in fabric.rdm_rma_atomic_providers()}
    missing = [p for p in providers if p not in names]
    assert not missing, f"fi_getinfo lists no {missing} here (lists {sorted(names)})"


@pytest.mark.parametrize("case", sorted(SELECTS))
def test_name_selects(case, tmp_path, mpi_env_file):
    include, fi_provider, expected = SELECTS[case]
    _present(expected)
    _selected(tmp_path, expected, provider=include,
              env={"FI_PROVIDER": fi_provider} if fi_provider else None)


@pytest.mark.parametrize("case", sorted(EXCLUDES))
def test_exclude_names(case, tmp_path, mpi_env_file):
    exclude, expected = EXCLUDES[case]
    _present(expected)
    _selected(tmp_path, expected, ours={"provider_exclude": exclude})


# libfabric 1.17's plain "net" names FI_ATOMIC but implements no atomic (its
# endpoint has no compare-and-swap; fi_fetch_atomic returns -FI_ENOSYS), and it
# comes before net;ofi_rxm in libfabric's order (tcp;ofi_rxm, net, net;ofi_rxm,
# ...). btl-ofi opens it, finds no 64-bit compare-and-swap and passes it over
# for the next provider: (mca parameters, FI_PROVIDER) -> the stack selected.
PASSES_OVER = {
    "include_net": ({"provider_include": "net"}, None),
    "fi_provider_net": (None, "net"),
    "exclude_tcp": ({"provider_exclude": "tcp"}, None),
}


def test_passes_over_provider_without_cas(tmp_path, mpi_env_file):
    """Each way of naming net (or leaving tcp out) ends on net;ofi_rxm. One
    test, so that libfabric 2.x, which has no plain net, skips it once."""
    names = {p.name for p in fabric.rdm_rma_atomic_providers()}
    if "net" not in names:
        pytest.skip(f"no plain 'net' provider here (libfabric 1.17 has one); lists {sorted(names)}")
    _present("net;ofi_rxm")
    for case, (ours, fi_provider) in sorted(PASSES_OVER.items()):
        _selected(tmp_path / case, "net;ofi_rxm", ours=ours,
                  env={"FI_PROVIDER": fi_provider} if fi_provider else None)


def test_full_names_stay_exact(tmp_path, mpi_env_file):
    """With ofi_strictmr loaded, "tcp;ofi_rxm" is that stack, not the strict
    one over it, and the strict provider's layered names select it."""
    prov_dir = matrix.strict_provider_dir()
    assert (prov_dir / "libstrictmr-fi.so").exists(), f"{prov_dir}: make install missing"
    env = {"FI_PROVIDER_PATH": str(prov_dir)}
    for name in ("tcp;ofi_rxm", "shm;ofi_strictmr", "tcp;ofi_rxm;ofi_strictmr"):
        _selected(tmp_path / name.replace(";", "+"), name, provider=name, env=env)


def _declined(tmp_path, component, expected, provider=None, env=None, ours=None):
    refusals.run_and_judge(tmp_path, 2, expected, f"provider_include={provider!r} env={env}",
                           component, ours=ours, provider=provider, env_overrides=env)


def test_core_of_declined_stack(tmp_path, mpi_env_file, component):
    """"udp" stands for udp;ofi_rxd, which btl-ofi declines: the same message
    and reason as for the full name."""
    provider = "udp;ofi_rxd"
    reason = matrix.declined_reason(provider)
    assert reason, f"btl-ofi serves {provider} here: choose another declined stack"
    version = next(p.version for p in fabric.rdm_rma_atomic_providers()
                   if p.name == provider)
    expected = (refusals.BROKEN.replace("{provider}", provider).replace("{version}", version)
                .replace("{reason}", reason))
    _declined(tmp_path, component, expected, provider="udp")


@pytest.mark.parametrize("name", ("ofi_rxm", "tcp;"))
def test_name_matching_nothing(name, tmp_path, mpi_env_file, component):
    """A utility provider alone is no core (FI_PROVIDER=ofi_rxm offers nothing
    either), and a full name must be whole: both match nothing, and the
    message lists what is available."""
    expected = (refusals.NOT_FOUND.replace("nosuchprov", name).replace("{available}", refusals.available())
                .replace("{fi_provider}", "(not set)"))
    _declined(tmp_path, component, expected, provider=name)


def test_name_outside_fi_provider(tmp_path, mpi_env_file, component):
    """FI_PROVIDER=shm leaves libfabric offering shm only: "tcp" matches
    nothing, and the message says what FI_PROVIDER is."""
    expected = (refusals.NOT_FOUND.replace("nosuchprov", "tcp").replace("{available}", "shm")
                .replace("{fi_provider}", "shm"))
    _declined(tmp_path, component, expected, provider="tcp", env={"FI_PROVIDER": "shm"})


@pytest.fixture(scope="module")
def component():
    return launcher.component_name()
