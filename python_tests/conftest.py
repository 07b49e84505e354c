"""pytest wiring: the --provider option, the matrix parametrization, and one
mpirun per launch group shared by all the tests that report on it."""

import fnmatch
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import check_sets  # noqa: E402
import launcher  # noqa: E402
import matrix  # noqa: E402
import netns  # noqa: E402


def pytest_addoption(parser):
    group = parser.getgroup("btl-ofi")
    group.addoption("--provider", default=None,
                    help="comma-separated libfabric providers to test (exact fi_info names, "
                         "e.g. 'shm,tcp;ofi_rxm'); 'all' = every RDM provider with RMA and "
                         "atomics that fi_getinfo lists. Default: the project's named "
                         f"providers {', '.join(matrix.NAMED_PROVIDERS)} that are present")
    group.addoption("--full", action="store_true", default=False,
                    help="the whole matrix: every parametrized case, launch group and check, "
                         "and the multihost suite (not the opt-in endurance runs). Default: "
                         "the slice that crosses every axis value at least once (matrix.py)")
    group.addoption("--mca", action="append", default=[], metavar="NAME=VALUE",
                    help="an MCA parameter for every mpirun (repeatable; added to "
                         "BTL_OFI_TEST_MCA); a test's own value for it wins")
    group.addoption("--timeout-scale", type=float, default=1.0,
                    help="multiply every mpirun timeout (slow machines)")
    group.addoption("--endurance-jobs", type=int, default=50,
                    help="consecutive 2-rank jobs per provider for -m endurance (default 50)")
    group.addoption("--multihost-per-host", type=int, default=1, choices=(1, 2),
                    help="-m multihost: ranks per host namespace (2: a 3-rank launch has two "
                         "ranks on the first host, which btl-ofi reaches over shm, and one on "
                         "the second, over the network, in one module; NOTES.txt 2c)")
    group.addoption("--multihost-nics", type=int, default=1, choices=(1, 2, 3, 4),
                    help="-m multihost: NICs per host namespace, each on a subnet of its own "
                         "(check-multihost.sh --nics); with several, btl-ofi takes them all "
                         "and stripes puts and gets from 4 KiB over them")
    group.addoption("--multihost-dynamic", action="store_true", default=False,
                    help="-m multihost: also run the checks on MPI_Win_create_dynamic windows "
                         "across namespaces with Open MPI 4.1 (excluded by default there: "
                         "they hang with 4.1.4, see test_multihost.py; 5.0 always runs them)")
    group.addoption("--multihost-profiles", action="store_true", default=False,
                    help="-m multihost: also run the launch groups of ofi_strictmr's NIC "
                         "profiles (verbs-, efa-, cxi-, psm3-like over tcp;ofi_rxm) at 2 and "
                         "3 ranks across namespaces, one rank per host, judged with the "
                         "provider's report")


def _group_marks(group):
    return [pytest.mark.full] if matrix.group_tier(group) == "full" else []


def pytest_generate_tests(metafunc):
    names = metafunc.fixturenames
    if "declined_provider" in names:
        # one case per provider asked for that btl-ofi declines by design (test_bad_input)
        metafunc.parametrize("declined_provider", matrix.providers_of(metafunc.config)[1])
    if "group" not in names:
        return
    providers = matrix.providers_of(metafunc.config)[0]
    groups = matrix.groups(providers, full=True)
    if "check" in names:
        params = []
        for g in groups:
            for spec in check_sets.checks_for(g):
                marks = _group_marks(g)
                if spec["tier"] == "full" and not marks:
                    marks = [pytest.mark.full]
                reason = matrix.known_failure(spec, g)
                if reason:
                    marks.append(pytest.mark.xfail(strict=True, reason=reason))
                params.append(pytest.param(g, spec, id=f"{g.label}::{spec['id']}", marks=marks))
        metafunc.parametrize(("group", "check"), params)
    else:
        metafunc.parametrize("group", [pytest.param(g, id=g.label, marks=_group_marks(g))
                                       for g in groups])


class LaunchCache:
    """One mpirun per group, running exactly the checks this session selected."""

    def __init__(self, session, tmp_root, scale):
        self.session = session
        self.tmp_root = tmp_root
        self.scale = scale
        self.launches = {}
        self.preflight = {}

    def selected_checks(self, group):
        specs = []
        for item in self.session.items:
            params = getattr(getattr(item, "callspec", None), "params", {})
            if params.get("group") == group and "check" in params:
                specs.append(params["check"])
        if not specs:  # only the group-level test was selected: run its fast checks
            specs = [c for c in check_sets.checks_for(group) if c["tier"] == "fast"]
        return check_sets.dedupe(specs)

    def provider_status(self, provider):
        """Preflight, once per provider: does btl-ofi carry a Put on it, or does
        it decline it with a reason, or pass it over for the next provider
        (a provider naming FI_ATOMIC without a 64-bit compare-and-swap: plain
        net of libfabric 1.17, whose name also stands for net;ofi_rxm)?
        Open MPI's show_help delivery loses messages now and then (measured
        with stock components too), so an unexplained refusal is retried, at
        most 3 times."""
        if provider not in self.preflight:
            import outcome

            probe = matrix.Group(provider, "default", 2, "base")
            plan = {"checks": [check_sets.op_check("put", "create_du8", "fence", "int64", 4)]}
            status = ("unknown", "btl-ofi neither carried a Put nor said why, 3 attempts")
            for attempt in range(3):
                workdir = self.tmp_root / ("preflight-" + provider.replace(";", "+")
                                           + f"-{attempt}")
                launch = launcher.run_mpi(2, plan, 60 * self.scale, provider=provider,
                                          workdir=workdir)
                if outcome.proof_of_path(launch, probe)[0]:
                    status = ("selected", "")
                    break
                reason = outcome.declined_by_design(launch, probe)
                if reason:
                    status = ("declined", f"declined by design: {reason}")
                    break
                why = outcome.passed_over(launch).get(provider)
                if why and provider not in matrix.NAMED_PROVIDERS:
                    used = sorted({p for p, *_ in outcome.selections(launch)}) or ["none"]
                    status = ("declined", f"refused: passed over ({why}); btl-ofi used "
                                          f"{', '.join(used)} instead")
                    break
                messages = outcome.our_messages(launch)
                if messages and provider not in matrix.NAMED_PROVIDERS:
                    # a provider the project does not name, refused with a reason
                    # (e.g. no 64-bit compare-and-swap): not a failure of the suite
                    first = " ".join(ln.strip() for ln in messages[0].splitlines()[:4])
                    status = ("declined", f"refused: {first}")
                    break
            self.preflight[provider] = status
        return self.preflight[provider]

    def get(self, group):
        if group not in self.launches:
            # the strict provider must be served: no preflight may excuse it
            state, reason = ("strict", "") if group.strict else \
                self.provider_status(group.provider)
            if state == "declined":
                self.launches[group] = launcher.Launch.not_run(declined_reason=reason)
                return self.launches[group]
            specs = self.selected_checks(group)
            timeout = (45 + sum(matrix.budget_seconds(s, group) for s in specs)) * self.scale
            workdir = self.tmp_root / group.label.replace("|", "_").replace(";", "+").replace(
                ",", "_")
            launch = launcher.run_mpi(group.nranks, {"checks": specs}, timeout,
                                      provider=group.provider, ours=group.ours(),
                                      workdir=workdir, env_overrides=group.env(workdir))
            launch.check_ids = [s["id"] for s in specs]
            launch.strict_report = group.report(workdir)
            self.launches[group] = launch
        return self.launches[group]


@pytest.fixture(scope="session")
def launches(request, tmp_path_factory):
    if shutil.which("mpirun") is None:
        pytest.fail("mpirun not found in PATH", pytrace=False)
    cache = LaunchCache(request.session, tmp_path_factory.mktemp("launches"),
                        request.config.getoption("--timeout-scale"))
    request.config._btlofi_cache = cache
    return cache


@pytest.fixture(scope="session")
def harness_program(launches):
    """(provider, name) -> the installed osc_harness program name for a run on provider: the
    test is skipped where btl-ofi declines the provider, and fails if the program is not
    installed."""
    def find(provider, name):
        state, reason = launches.provider_status(provider)
        if state == "declined":
            pytest.skip(f"btl-ofi does not serve {provider}: {reason}")
        program = Path(launcher.mpi_env().get("BTL_OFI_LIBEXECDIR", ""), name)
        if not program.exists():
            pytest.fail(f"{program} is not installed: run 'make install'", pytrace=False)
        return program
    return find


@pytest.fixture(scope="session")
def tested_providers(request):
    return matrix.providers_of(request.config)[0]


@pytest.fixture(scope="session")
def mpi_env_file():
    path = launcher.env_file_path()
    if not Path(path).exists():
        pytest.fail(f"btl-ofi env file {path} not found (set BTL_OFI_ENV_FILE)", pytrace=False)
    return launcher.load_env_file(path)


@pytest.fixture(scope="module")
def netns_hosts(request, tmp_path_factory):
    """Host namespaces (test_multihost, test_node_local, test_lone_rank_cas):
    BTL_OFI_NETNS's (check-multihost.sh made them and removes them), or the
    module's own from check-multihost.sh --setup-only, removed (and checked gone)
    with --teardown after the module's tests (netns.own_hosts)."""
    conf = os.environ.get("BTL_OFI_NETNS")
    if conf:
        hosts = launcher.Hosts.from_conf(conf)
        gone = [ns for ns in (hosts.hub, *hosts.namespaces)
                if not Path("/run/netns", ns).exists()]
        if gone:
            pytest.fail(f"BTL_OFI_NETNS={conf}: namespaces {gone} do not exist", pytrace=False)
        yield hosts
        return
    yield from netns.own_hosts(tmp_path_factory.mktemp("netns"), "--hosts", netns.MAX_HOSTS,
                               "--nics", request.config.getoption("--multihost-nics"))


def pytest_report_header(config):
    providers, declined, others = matrix.providers_of(config)
    lines = [f"btl-ofi env file: {launcher.env_file_path()}",
             f"providers under test: {', '.join(providers) or '(none)'}"]
    if launcher.extra_mca():
        lines.append("every mpirun also gets: " + " ".join(
            f"--mca {k} {v}" for k, v in launcher.extra_mca().items()))
    if declined:
        lines.append(f"declined by btl-ofi by design (one test of the message each, no matrix "
                     f"rows): {', '.join(declined)}")
    if others:
        lines.append(f"also discovered (run with --provider all or by name): {', '.join(others)}")
    return lines


def pytest_terminal_summary(terminalreporter, config):
    multihost = getattr(config, "_btlofi_multihost", None)  # test_multihost.py's launches
    if multihost is not None and multihost.launches:
        terminalreporter.section("btl-ofi across network namespaces")
        for line in multihost.summary_lines():
            terminalreporter.write_line(line)
    cache = getattr(config, "_btlofi_cache", None)
    if not cache or not cache.launches:
        return
    import outcome

    tr = terminalreporter
    tr.section("btl-ofi launches (provider | negotiated MR mode | ranks | variant)")
    waited = sum(launch.lock_wait for launch in cache.launches.values())
    ran = sum(launch.seconds for launch in cache.launches.values())
    tr.write_line(f"{len(cache.launches)} launches: {ran:.0f}s running mpirun, {waited:.0f}s "
                  f"waiting for {launcher.MPI_LOCK} (other suites/benchmarks)")
    for group, launch in cache.launches.items():
        if launch.declined_reason:
            tr.write_line(f"{group.label:44s} SKIPPED  btl-ofi declines the provider: "
                          f"{launch.declined_reason[:80]}")
            continue
        sel = outcome.selections(launch)
        modes = sorted({matrix.mr_label(b) + f"/key{k}/" + c for _, b, c, k in sel})
        checks = outcome.records(launch, "check")
        bad = sum(1 for r in checks if r["errors"])
        state = "TIMEOUT" if launch.timed_out else (
            launch.signal_name or ("ok" if launch.returncode == 0 else f"rc={launch.returncode}"))
        strict = outcome.strict_report(launch) if group.strict else None
        strict = (f" strictmr_checked={strict[0]} violations={strict[1] or 0}"
                  if strict else "")
        tr.write_line(f"{group.label:44s} {state:8s} {launch.seconds:6.1f}s "
                      f"(lock wait {launch.lock_wait:5.1f}s) "
                      f"negotiated={','.join(modes) or '-':28s} checks={len(checks)} "
                      f"with_errors={bad}{strict}")


def _params(item):
    return getattr(getattr(item, "callspec", None), "params", {})


def _value_key(value):
    """A hashable stand-in for a parameter's value (a check spec by its id)."""
    if isinstance(value, dict):
        return value.get("id") or repr(sorted(value.items()))
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


LAUNCH_PARAMS = ("group", "mh_group")  # a matrix.Group: one launch, its checks ride along


def _node(item):
    return item.nodeid.split("/")[-1]


def _axes(item):
    """A parametrized test's axis values: the test itself and the values of the axes
    the suite shares (matrix.SHARED_AXES); its own parameters are not axes."""
    axes = {("test", _node(item).split("[")[0])}
    for name, value in _params(item).items():
        if name in matrix.SHARED_AXES:
            axes.add((matrix.SHARED_AXES[name], _value_key(value)))
    return axes


def default_slice(items):
    """(kept, dropped): the slice of items that crosses every axis value at least once
    (matrix.py, "the default slice"). Full-tier items and matrix.FULL_ONLY are dropped;
    of the launch groups a covering of their axes is kept, with their checks; of the
    other parametrized tests a covering of their axis values (_axes: each test at least
    once; matrix.NO_LAUNCH's run whole); a strict xfail is kept once per reason."""
    kept = [item for item in items if not item.get_closest_marker("full") and
            not any(fnmatch.fnmatchcase(_node(item), p) for p in matrix.FULL_ONLY)]
    for name in LAUNCH_PARAMS:
        groups = list(dict.fromkeys(_params(i)[name] for i in kept if name in _params(i)))
        chosen = set(matrix.cover(groups, matrix.group_axes))
        kept = [i for i in kept if name not in _params(i) or _params(i)[name] in chosen]
    cells = [i for i in kept if _params(i) and not set(_params(i)) & set(LAUNCH_PARAMS)
             and _node(i).split("::")[0] not in matrix.NO_LAUNCH]
    dropped = {id(i) for i in cells} - {id(i) for i in matrix.cover(cells, _axes)}
    kept = [i for i in kept if id(i) not in dropped]
    causes, once = set(), []
    for item in kept:
        mark = item.get_closest_marker("xfail")
        if mark is not None and mark.kwargs.get("strict", True):
            reason = mark.kwargs.get("reason", "")
            if reason in causes:
                continue
            causes.add(reason)
        once.append(item)
    kept_ids = {id(i) for i in once}
    return once, [i for i in items if id(i) not in kept_ids]


def _full(config):
    return config._btlofi_full


def pytest_configure(config):
    """--full (or -m full) runs the whole matrix, the multihost suite included: the
    default `-m` of pytest.ini then keeps out only the opt-in endurance runs. A SIGTERM
    ends the run as Ctrl-C does, with the MPI job it waits for (launcher.run_argv)."""
    launcher.end_jobs_on_sigterm()
    if config.getoption("--mca"):
        os.environ["BTL_OFI_TEST_MCA"] = " ".join(
            [os.environ.get("BTL_OFI_TEST_MCA", "")] + config.getoption("--mca")).strip()
    try:
        launcher.extra_mca()
    except RuntimeError as err:
        raise pytest.UsageError(str(err)) from None
    config._btlofi_full = config.getoption("--full") or \
        (config.option.markexpr or "").strip() == "full"
    if _full(config):
        addopts = config.getini("addopts")
        default = next((addopts[i + 1] for i, arg in enumerate(addopts[:-1]) if arg == "-m"),
                       None)
        if config.option.markexpr in (default, "full"):
            config.option.markexpr = "not endurance"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Without --full, keep the default slice of what -m and -k selected."""
    if _full(config):
        return
    kept, dropped = default_slice(items)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
