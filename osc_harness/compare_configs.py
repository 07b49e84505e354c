"""compare.py's configurations: what each one runs (Config; ours, stock, raw, the node
BTL, osc/ucx, osc/pt2pt), the btl-ofi env file their paths come from, and which of them a
run takes (--also, --ours-variant, --only; --net adds the other MPIs of compare_net.py).
"""

import os
import subprocess
import sys
from dataclasses import dataclass, field, replace

import compare_net

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python_tests"))
import launcher  # noqa: E402  the suite's env-file reader


@dataclass
class Config:
    name: str          # "ours", "stock", ...
    provider: str      # libfabric provider, or "" when the configuration has none
    kind: str          # "mpi" (Open MPI's mpirun), "raw", or "hydra" (another MPI, --net)
    component_path: str = ""
    mca: list = field(default_factory=list)
    note: str = ""     # "hydra": the MPI's install root (its bin/mpiexec launches)
    env: dict = field(default_factory=dict)  # extra environment of its runs
    ours_dir: str = ""  # a btl-ofi configuration: the directory its DSO must be mapped from

    @property
    def label(self):
        return f"{self.name}[{self.provider}]" if self.provider else self.name


def read_env_file(path):
    """The variables a btl-ofi env file exports that the configurations need."""
    try:
        env = launcher.load_env_file(path)
    except (OSError, RuntimeError) as err:
        sys.exit(f"compare.py: {err}")
    wanted = ("OMPI_MCA_mca_base_component_path", "BTL_OFI_COMPONENT_DIR",
              "BTL_OFI_OMPI_PKGLIBDIR", "BTL_OFI_COMPONENT", "BTL_OFI_NODE_BTL",
              "BTL_OFI_OMPI_VERSION")
    missing = [k for k in wanted if not env.get(k)]
    if missing:
        sys.exit(f"compare.py: {path} does not export {', '.join(missing)}")
    paths = {k: env[k] for k in wanted}
    paths["PMIX_MCA_mca_base_component_path"] = env.get("PMIX_MCA_mca_base_component_path", "")
    paths["major"] = int(paths["BTL_OFI_OMPI_VERSION"].split(".")[0])
    return paths


def find_env_file(arg):
    candidates = [arg, os.environ.get("BTL_OFI_ENV_FILE"), os.path.join(REPO, "btl-ofi-env.sh")]
    for path in candidates:
        if path and os.path.isfile(path):
            return path
    sys.exit("compare.py: no btl-ofi env file; set BTL_OFI_ENV_FILE or pass --env-file "
             "(make install puts it in $(pkgdatadir)/btl-ofi-env.sh)")


def has_osc_ucx(env):
    try:
        out = subprocess.run(["ompi_info"], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return False, "ompi_info did not run"
    for line in out.stdout.splitlines():
        if "MCA osc:" in line and " ucx " in line:
            return True, line.strip()
    return False, "this Open MPI has no osc/ucx (ompi_info lists none)"


# Core providers that libfabric 2.x offers as RDM providers by themselves, and the
# utility provider that their name selects first (`tcp` = tcp;ofi_rxm, as with
# FI_PROVIDER=tcp). Ours on such a name runs the plain provider: FI_PROVIDER=NAME
# with the utility provider excluded (btl-ofi then carries atomics, and gets where
# needed, as messages its target applies; its "selected provider" line says so).
PLAIN_RDM_2X = {"tcp": "ofi_rxm"}


def build_configs(providers, paths, ucx, net_iface=None, libfabric_major=0):
    """net_iface: ranks on different hosts (--net), reached through this interface:
    btl/tcp instead of the node BTL, no node-local configurations. libfabric_major >= 2:
    ours on a name in PLAIN_RDM_2X is the plain provider, not the stack it names."""
    rdma = ["--mca", "pml", "ob1", "--mca", "osc", "rdma"]
    ours_path, stock_path = paths["OMPI_MCA_mca_base_component_path"], paths["BTL_OFI_OMPI_PKGLIBDIR"]
    ours = paths["BTL_OFI_COMPONENT"]
    node = "tcp" if net_iface else paths["BTL_OFI_NODE_BTL"]
    configs = []
    for prov in providers:
        if libfabric_major >= 2 and prov in PLAIN_RDM_2X:
            pick, env = ["--mca", f"btl_{ours}_provider_exclude", PLAIN_RDM_2X[prov]], \
                {"FI_PROVIDER": prov}
        else:
            pick, env = ["--mca", f"btl_{ours}_provider_include", prov], {}
        configs.append(Config("ours", prov, "mpi", ours_path, rdma + [
            "--mca", "btl", f"self,{node},{ours}"] + pick, env=env))
        # The stock component excludes shm, sockets, tcp and udp by default: without
        # clearing its exclude list the window would silently go to another BTL.
        configs.append(Config("stock", prov, "mpi", stock_path, rdma + [
            "--mca", "btl", f"self,{node},ofi", "--mca", "btl_ofi_provider_include", prov,
            "--mca", "btl_ofi_provider_exclude", ""]))
        configs.append(Config("raw", prov, "raw"))
    # the node BTL with osc/rdma: btl/vader directly (4.1), active messages over btl/sm (5.0)
    if not net_iface:
        configs.append(Config(node, "", "mpi", stock_path, rdma + ["--mca", "btl", f"self,{node}"]))
    if paths["major"] >= 5:
        # what a 5.0 user gets between hosts without btl-ofi: active messages over btl/tcp
        configs.append(Config("tcp", "", "mpi", stock_path, rdma + ["--mca", "btl", "self,tcp"] + (
            [] if net_iface else ["--mca", "btl_tcp_if_include", "lo"])))
    if ucx[0]:
        # between hosts UCX gets TCP only: with its shared-memory transports it would
        # bypass the network (the namespaces share one kernel)
        configs.append(Config("ucx", "", "mpi", stock_path, [
            "--mca", "pml", "ob1", "--mca", "btl", f"self,{node}", "--mca", "osc", "ucx"],
            env={"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": net_iface} if net_iface else {}))
    if paths["major"] < 5:
        configs.append(Config("pt2pt", "", "mpi", stock_path, [
            "--mca", "pml", "ob1", "--mca", "btl", "self,tcp" if net_iface else "self,vader",
            "--mca", "osc", "pt2pt"]))
    else:
        # osc/rdma 5.0 says which BTL it uses, directly or through active messages, and
        # btl-ofi which provider it selected, with atomics and gets native or as messages
        for cfg in configs:
            if cfg.kind == "mpi" and "rdma" in cfg.mca:
                cfg.mca = cfg.mca + ["--mca", "osc_base_verbose", "100"]
            if cfg.name == "ours":
                cfg.mca = cfg.mca + ["--mca", "btl_base_verbose", "10"]
    return configs


# --ours-variant names that are whole MCA names, not the component's own
FULL_MCA_PREFIXES = ("osc_", "pml_", "btl_", "mpi_", "opal_")


def with_also(configs, also_args, paths):
    """configs and, per --also NAME=ENVFILE, each of ours again as that install's (NAME)."""
    for also in also_args:
        name, _, env_file = also.partition("=")
        if not name or not env_file:
            sys.exit(f"compare.py: --also {also!r}: want NAME=ENVFILE")
        other = read_env_file(env_file)
        if other["BTL_OFI_COMPONENT"] != paths["BTL_OFI_COMPONENT"]:
            sys.exit(f"compare.py: --also {name}: {env_file} is for component "
                     f"{other['BTL_OFI_COMPONENT']}, ours is {paths['BTL_OFI_COMPONENT']}")
        configs += [replace(c, name=name, component_path=other["OMPI_MCA_mca_base_component_path"],
                            ours_dir=other["BTL_OFI_COMPONENT_DIR"])
                    for c in configs if c.name == "ours"]
    return configs


def with_variants(configs, variants, paths):
    """configs and, per --ours-variant NAME:PARAM=VALUE,..., each of ours again with those
    parameters (ours-NAME)."""
    for variant in variants:
        name, _, settings = variant.partition(":")
        pairs = [kv.partition("=") for kv in settings.split(",") if kv]
        if not name or not pairs or any(not k or not eq for k, eq, _ in pairs):
            sys.exit(f"compare.py: --ours-variant {variant!r}: want NAME:PARAM=VALUE[,...]")
        mca = [x for k, _, v in pairs
               for x in ("--mca", k if k.startswith(FULL_MCA_PREFIXES)
                         else f"btl_{paths['BTL_OFI_COMPONENT']}_{k}", v)]
        configs += [replace(c, name=f"ours-{name}", mca=c.mca + mca)
                    for c in configs if c.name == "ours"]
    return configs


def select_configs(args, providers, paths, ucx, hosts):
    """The run's configurations (args: also, ours_variant, only) and --net's notes on the
    other MPIs."""
    net_notes = []
    configs = build_configs(providers, paths, ucx, hosts.iface if hosts else None,
                            compare_net.libfabric_major())
    configs = with_also(configs, args.also, paths)
    configs = with_variants(configs, args.ours_variant, paths)
    if hosts:
        configs += compare_net.family_configs(Config, compare_net.families(), net_notes)
    if args.only:
        keep = set(args.only.split(","))
        configs = [c for c in configs if c.name in keep or c.name.split("-")[0] in keep]
    return configs, net_notes
