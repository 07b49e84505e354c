"""The suite's own layout (no MPI): test modules import no other test module
(shared fixtures live in conftest.py, shared helpers in plain modules), no
import cycle among python_tests' modules, and README.md names every file."""

import ast
from pathlib import Path

HERE = Path(__file__).resolve().parent


def local_imports():
    """{module: the python_tests modules it imports (at any depth of its code)}."""
    modules = {p.stem for p in HERE.glob("*.py")}
    graph = {}
    for path in sorted(HERE.glob("*.py")):
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
        graph[path.stem] = sorted(found & modules - {path.stem})
    return graph


def find_cycle(graph):
    """One import cycle as a list of modules (first == last), or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in graph.get(node, ()):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt, path + [nxt])
                if cycle:
                    return cycle
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start, [start])
            if cycle:
                return cycle
    return None


def test_no_test_module_imports_another():
    graph = local_imports()
    wrong = {mod: [m for m in deps if m.startswith("test_") or m == "conftest"]
             for mod, deps in graph.items()}
    wrong = {mod: deps for mod, deps in wrong.items() if deps}
    assert not wrong, f"modules importing test modules or conftest: {wrong}"


def test_no_import_cycle():
    cycle = find_cycle(local_imports())
    assert cycle is None, f"import cycle: {' -> '.join(cycle)}"


def test_cycle_finder_finds_one():
    """The check above can fail: a made-up cycle is found, a chain is not."""
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) is None


def test_readme_names_every_file():
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    files = sorted(p.relative_to(HERE).as_posix() for p in HERE.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts and p.name != "README.md")
    missing = [f for f in files if f"`{f}`" not in readme]
    assert not missing, f"python_tests/README.md does not name: {missing}"


def test_default_slice_crosses_every_axis():
    """The default slice (conftest.default_slice) still has every named provider, each
    NIC profile, window flavor and sync mode, the mixed job, striping and a test
    across host namespaces: collected here as `scripts/test.sh` would."""
    import subprocess
    import sys

    import fabric
    import matrix

    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                          "no:cacheprovider", str(HERE)], capture_output=True, text=True,
                         cwd=HERE.parent, timeout=300)
    ids = [line for line in run.stdout.splitlines() if "::" in line]
    assert ids, f"nothing collected:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    launches = [i.split("[", 1)[1] for i in ids if "test_conformance.py::test_launch[" in i]
    checks = [i for i in ids if "test_conformance.py::test_check[" in i]
    present = {p.name for p in fabric.rdm_rma_atomic_providers()}
    missing = [f"provider {p}" for p in matrix.NAMED_PROVIDERS
               if p in present and not matrix.declined_reason(p)
               and not any(label.startswith(f"{p}|") for label in launches)]
    missing += [f"NIC profile {p}" for p in matrix.STRICT_PROFILES
                if not any(f"|profile {p}," in label for label in launches)]
    missing += [f"flavor {f}" for f in matrix.FLAVORS if not any(f"/{f}/" in c for c in checks)]
    missing += [f"sync {s}" for s in matrix.SYNCS if not any(f"/{s}/" in c for c in checks)]
    for what, test in (("the mixed job", "test_node_local.py::test_node_peers_over_shm"),
                       ("striping", "test_stripes.py::test_large_transfers_use_both_nics"),
                       ("a NIC going down", "test_nic_down.py::test_further_nic_down_moves_parts")):
        if not any(test in i for i in ids):
            missing.append(f"{what} ({test})")
    assert not missing, f"the default slice lacks: {missing}"
