"""The shape of btl_ofi/: its files call only down the floors below, with no cycle, and no
file, function or module struct grows past the limits a maintainer can hold (NOTES.txt
section 1). No MPI: reads the sources and the object files of the build (scripts/test.sh
builds first).

The call graph comes from scripts/import-graph.py (nm over the objects): file A calls file B
when A uses a function or datum only B defines.
"""

import importlib.util
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(REPO, "btl_ofi")

# The floors, top first: a file may call files on its own floor or below, never above.
FLOORS = [
    ["btl_ofi_component.c"],
    ["btl_ofi_module_setup.c"],
    ["btl_ofi_route.c"],
    ["btl_ofi_stripe.c"],
    ["btl_ofi_rail_setup.c"],
    ["btl_ofi_rdma.c", "btl_ofi_atomics.c"],
    ["btl_ofi_am.c", "btl_ofi_coalesce.c", "btl_ofi_locate.c"],
    ["btl_ofi_msg.c", "btl_ofi_pace.c"],
    ["btl_ofi_ops.c"],
    ["btl_ofi_register.c", "btl_ofi_fault.c", "btl_ofi_endpoint.c"],
    ["btl_ofi_rcache.c", "btl_ofi_device.c"],
    ["btl_ofi_mr.c", "btl_ofi_wake.c", "btl_ofi_discovery.c"],
    ["btl_ofi_explain.c"],
    ["btl_ofi_hints.c"],
    ["btl_ofi_filter.c", "btl_ofi_topo.c"],
    ["btl_ofi_params.c"],
    ["btl_ofi_report.c", "btl_ofi_pvar.c", "btl_ofi_reg_pool.c"],
]
# Calls from a lower floor to a higher one, each with the reason it must go up (at most 3).
UPWARD = {}

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 60
MAX_MODULE_FIELDS = 25


def _import_graph():
    path = os.path.join(REPO, "scripts", "import-graph.py")
    spec = importlib.util.spec_from_file_location("import_graph", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def graph():
    ig = _import_graph()
    objects = ig.object_files([SRC, os.path.join(SRC, ".libs")])
    objects = {s: p for s, p in objects.items() if os.path.exists(os.path.join(SRC, s))}
    if not objects:
        pytest.fail("no object files of btl_ofi/*.c: build first (scripts/test.sh does)")
    return ig, objects, ig.file_graph(objects, False)


def test_no_cycle(graph):
    ig, objects, edges = graph
    found = ig.cycles(objects, edges)
    assert not found, "files of btl_ofi call each other in a cycle: " + "; ".join(
        " <-> ".join(c) for c in found)


def test_every_file_has_a_floor(graph):
    _, objects, _ = graph
    placed = {f for floor in FLOORS for f in floor}
    missing = sorted(set(objects) - placed)
    assert not missing, f"give these files a floor in FLOORS: {missing}"


def test_calls_go_down(graph):
    _, objects, edges = graph
    floor_of = {f: i for i, floor in enumerate(FLOORS) for f in floor}
    upward = [(a, b, sorted(edges[a][b])) for a in sorted(edges) for b in sorted(edges[a])
              if a in floor_of and b in floor_of and floor_of[a] > floor_of[b]
              and (a, b) not in UPWARD]
    assert not upward, "calls from a lower floor to a higher one: " + "; ".join(
        f"{a} -> {b} ({', '.join(names)})" for a, b, names in upward)
    assert len(UPWARD) <= 3


def _sources():
    return sorted(n for n in os.listdir(SRC) if n.endswith((".c", ".h")) and n.startswith("btl_"))


def _functions(text):
    """(name, lines) of each function: from a '{' alone at column 0 to the next '}' there."""
    lines = text.split("\n")
    found, start = [], None
    for i, line in enumerate(lines):
        if line.startswith("{") and start is None:
            start = i
        elif line.startswith("}") and start is not None:
            if not line.startswith("};"):
                head = next((lines[j] for j in range(start - 1, -1, -1) if "(" in lines[j]), "")
                name = re.findall(r"(\w+)\s*\(", head)
                found.append((name[0] if name else f"line {start}", i - start + 1))
            start = None
        elif line.startswith("};"):
            start = None
    return found


def test_file_and_function_size():
    """Every file of btl_ofi/ (one test: it reads text only, and the default slice of the
    suite keeps a parametrized test's first case alone)."""
    over = []
    for name in _sources():
        with open(os.path.join(SRC, name), encoding="utf-8") as f:
            text = f.read()
        lines = text.count("\n")
        if lines > MAX_FILE_LINES:
            over.append(f"{name} has {lines} lines (at most {MAX_FILE_LINES})")
        over += [f"{name}: {fn} has {n} lines (at most {MAX_FUNCTION_LINES})"
                 for fn, n in _functions(text) if n > MAX_FUNCTION_LINES]
    assert not over, "; ".join(over)


def test_module_struct_size():
    with open(os.path.join(SRC, "btl_ofi_module.h"), encoding="utf-8") as f:
        text = f.read()
    body = re.search(r"struct mca_btl_ofi_module_t \{(.*?)\n\};", text, re.S)
    assert body, "struct mca_btl_ofi_module_t not found in btl_ofi_module.h"
    code = re.sub(r"/\*.*?\*/", "", body.group(1), flags=re.S)
    fields = [s for s in code.split(";") if s.strip()]
    assert len(fields) <= MAX_MODULE_FIELDS, f"the module struct has {len(fields)} fields"


def test_function_counter_can_fail():
    """The function measure is not blind: a 61-line body counts as 61."""
    body = "int f(void)\n{\n" + "    x();\n" * 59 + "}\n"
    assert _functions(body) == [("f", 61)]
