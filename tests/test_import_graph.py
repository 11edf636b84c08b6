"""The package's import graph, read from the source with ``ast``: no cycles, and torch-free layers.

How the graph is built (the decisions the checks rest on):

- A node is a module of ``torchscan``; a package is the node of its ``__init__.py``.
- Every import statement is an edge, wherever it sits: module level, inside a function or a class,
  under ``if TYPE_CHECKING:``. A function-local import only delays the moment a cycle bites, it
  does not remove the cycle, so hiding one that way fails here too.
- ``import torchscan.a.b`` and ``from torchscan.a import b`` (``b`` a submodule) are edges to
  ``torchscan.a.b``; ``from torchscan.a import name`` (``name`` not a submodule) is an edge to the
  package ``torchscan.a`` itself. Relative imports are resolved against the importing module.
- A string constant naming a torchscan module is an edge too: that is how ``torchscan/__init__.py``
  imports its public names lazily (PEP 562 ``__getattr__`` over ``_EXPORTS``) and how
  ``importlib.import_module("torchscan....")`` would.
- Importing ``torchscan.a.b`` first runs ``torchscan/a/__init__.py``, so an importer *outside*
  ``torchscan.a`` also gets an edge to the package ``torchscan.a``. A module *inside* the package
  does not: its package has already started initialising before any of its submodules can run, so
  a package ``__init__`` that imports its own submodules (``process/__init__.py``, a ``cli/``
  package) is not a cycle -- unless a submodule imports back something that imports the package,
  which is a real cycle and is reported. ``torchscan`` itself is never an implied edge (everything
  is inside it); ``import torchscan`` / ``from torchscan import x`` are ordinary edges.
- Imports of modules outside torchscan (``torch``, ``torch.utils.flop_counter``, ``transformers``)
  are not nodes and never make a torchscan cycle: importing them lazily inside the function that
  needs them is how ``import torchscan`` stays cheap (checked at run time by test_public_api).
  For the torch-free layers every ``torch`` import counts, lazy or not.

Beyond module cycles, the first-level subpackages (``analysis``, ``measure``, ``process``, ...; a
top-level module is its own node) must depend on each other in one direction only.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "torchscan"


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    edges: dict[str, int] = field(default_factory=dict)  # target module -> first line importing it
    torch_line: int | None = None  # first line importing torch (or a torch submodule)


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def _imports(node: ast.AST, module: Module) -> Iterator[tuple[str, int, str | None]]:
    """``(absolute name, line, fallback)`` per imported name in ``node``, relative ones resolved.

    ``from a import b`` yields ``("a.b", line, "a")``: the edge goes to ``a.b`` when that is a
    module, else to the package ``a`` that defines the name ``b``.
    """
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    for item in ast.walk(node):
        if isinstance(item, ast.Import):
            for alias in item.names:
                yield alias.name, item.lineno, None
        elif isinstance(item, ast.ImportFrom):
            if item.level:
                base = package.split(".")
                base = base[: len(base) - item.level + 1]
                target = ".".join([*base, item.module] if item.module else base)
            else:
                target = item.module or ""
            for alias in item.names:
                yield f"{target}.{alias.name}", item.lineno, target


def _lazy_imports(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """Modules imported by name at run time: ``importlib.import_module("...")`` and lazy export tables
    (a dict literal whose values are module names, like ``_EXPORTS`` in ``torchscan/__init__.py``)."""
    for item in ast.walk(tree):
        if isinstance(item, ast.Call) and item.args and isinstance(item.args[0], ast.Constant):
            func = item.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("import_module", "__import__") and isinstance(item.args[0].value, str):
                yield item.args[0].value, item.lineno
        elif isinstance(item, ast.Dict):
            for value in item.values:
                if isinstance(value, ast.Constant) and str(value.value).startswith("torchscan."):
                    yield str(value.value), value.lineno


def build_graph() -> dict[str, Module]:
    """Every torchscan module with its edges (see the module docstring for what counts)."""
    modules: dict[str, Module] = {}
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        name, is_package = _module_name(path)
        modules[name] = Module(name, path, is_package, ast.parse(path.read_text(encoding="utf-8")))

    def add(source: Module, target: str, line: int) -> None:
        if target == source.name:
            return
        source.edges.setdefault(target, line)
        # Importing ``torchscan.a.b`` runs ``torchscan/a/__init__.py`` first, unless the importer is
        # already inside ``torchscan.a`` (then that package is initialising already).
        parts = target.split(".")
        for depth in range(2, len(parts)):
            parent = ".".join(parts[:depth])
            inside = source.name == parent or source.name.startswith(parent + ".")
            if parent in modules and not inside:
                source.edges.setdefault(parent, line)

    for module in modules.values():
        for target, line, fallback in _imports(module.tree, module):
            if target.split(".")[0] == "torch" and module.torch_line is None:
                module.torch_line = line
            if target.split(".")[0] != "torchscan":
                continue
            if target in modules or fallback is None:
                add(module, target, line)
            else:  # ``from torchscan.a import name``: the package ``torchscan.a`` defines ``name``
                add(module, fallback, line)
        for target, line in _lazy_imports(module.tree):
            if target in modules:
                add(module, target, line)
    return modules


def _cycles(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _cycle_path(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """One concrete cycle through the component's first node (breadth-first, shortest)."""
    start, members = component[0], set(component)
    previous: dict[str, str] = {}
    queue = [start]
    for node in queue:
        for child in sorted(edges.get(node, ())):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child in members and child not in previous:
                previous[child] = node
                queue.append(child)
    return component  # unreachable for a strongly connected component


def _describe(path: list[str], locate: dict[tuple[str, str], str]) -> str:
    steps = [f"{a} -> {b} ({locate[(a, b)]})" for a, b in itertools.pairwise(path)]
    return "\n  ".join(steps)


def _top(name: str) -> str:
    return ".".join(name.split(".")[:2])


GRAPH = build_graph()


def test_the_graph_sees_every_kind_of_import():
    """The parser itself: function-level, relative, submodule-as-name and lazy string imports."""
    hooks = GRAPH["torchscan.analysis.crawl.hooks"].edges
    assert "torchscan.analysis.crawl.inputs" in hooks  # ``from torchscan.analysis.crawl.inputs import ...``
    assert "torchscan.formulas.registry" in hooks  # ``from torchscan.formulas import registry``
    assert "torchscan.formulas" in hooks  # its package runs first
    assert "torchscan.analysis.crawl" not in hooks  # ... but not the importer's own package
    render = GRAPH["torchscan.views.render"].edges
    assert "torchscan.views.analysis.explorer" in render  # imported inside ``render_report``
    assert set(GRAPH["torchscan"].edges) >= {
        "torchscan.analysis.crawl.api",
        "torchscan.measure.summary_table",
        "torchscan.process.rss",
    }  # _EXPORTS
    assert GRAPH["torchscan.analysis.crawl.api"].torch_line is not None
    source = Module("torchscan.x.y", PACKAGE_ROOT / "x" / "y.py", False, ast.parse("from ..a import b\n"))
    assert list(_imports(source.tree, source)) == [("torchscan.a.b", 1, "torchscan.a")]


def test_no_import_cycle_between_torchscan_modules():
    edges = {name: set(module.edges) & GRAPH.keys() for name, module in GRAPH.items()}
    locate = {
        (name, target): f"{module.path.relative_to(PACKAGE_ROOT.parent)}:{line}"
        for name, module in GRAPH.items()
        for target, line in module.edges.items()
    }
    cycles = [_describe(_cycle_path(c, edges), locate) for c in _cycles(sorted(GRAPH), edges)]
    assert not cycles, "import cycles:\n  " + "\n\n  ".join(cycles)


def test_subpackages_depend_on_each_other_in_one_direction():
    """``measure/`` composes ``process/`` (measure_workload); ``process/`` must not import ``measure/``."""
    edges: dict[str, set[str]] = {}
    locate: dict[tuple[str, str], str] = {}
    for name, module in GRAPH.items():
        for target, line in module.edges.items():
            if target in GRAPH and _top(target) != _top(name):
                edges.setdefault(_top(name), set()).add(_top(target))
                where = f"{name} imports {target} at {module.path.relative_to(PACKAGE_ROOT.parent)}:{line}"
                locate.setdefault((_top(name), _top(target)), where)
    nodes = sorted({_top(name) for name in GRAPH})
    cycles = [_describe(_cycle_path(c, edges), locate) for c in _cycles(nodes, edges)]
    assert not cycles, "cycles between subpackages:\n  " + "\n\n  ".join(cycles)


TORCH_FREE = sorted(
    name
    for name in GRAPH
    if name.startswith("torchscan.views") or name.startswith("torchscan.report.validate")
)


@pytest.mark.parametrize("name", TORCH_FREE)
def test_torch_free_layers_never_import_torch(name):
    """Views and the saved-report validators, and everything they import, never import torch."""
    seen = {name}
    chain = {name: [name]}
    queue = [name]
    for current in queue:
        module = GRAPH[current]
        assert module.torch_line is None, (
            f"{' -> '.join(chain[current])} imports torch at "
            f"{module.path.relative_to(PACKAGE_ROOT.parent)}:{module.torch_line}"
        )
        for target in sorted(module.edges):
            if target in GRAPH and target not in seen:
                seen.add(target)
                chain[target] = [*chain[current], target]
                queue.append(target)


# issue #35: the rooms of the architecture, lowest first. A room may import the rooms below it, never
# one above: reports are read by everything and read nothing; formulas are pure functions of shapes.
_ABOVE_ANALYSIS = ("torchscan.measure", "torchscan.process", "torchscan.views", "torchscan.cli")
FORBIDDEN_ABOVE = {
    "torchscan.report": (
        "torchscan.analysis",
        "torchscan.measure",
        "torchscan.process",
        "torchscan.views",
        "torchscan.cli",
    ),
    "torchscan.formulas": (
        "torchscan.analysis",
        "torchscan.measure",
        "torchscan.process",
        "torchscan.views",
        "torchscan.cli",
    ),
    "torchscan.views": ("torchscan.analysis", "torchscan.measure", "torchscan.process", "torchscan.cli"),
    "torchscan.analysis": _ABOVE_ANALYSIS,
    # inside analysis/, by method: the dispatch observer is the floor the crawl and the ledger build on
    "torchscan.analysis.dispatch": (
        "torchscan.analysis.crawl",
        "torchscan.analysis.ledger",
        *_ABOVE_ANALYSIS,
    ),
    "torchscan.analysis.crawl": ("torchscan.analysis.ledger", *_ABOVE_ANALYSIS),
    "torchscan.analysis.ledger": ("torchscan.analysis.crawl", *_ABOVE_ANALYSIS),
    **{
        f"torchscan.analysis.{shared}": (
            "torchscan.analysis.crawl",
            "torchscan.analysis.dispatch",
            "torchscan.analysis.ledger",
            *_ABOVE_ANALYSIS,
        )
        for shared in ("lock", "recursion", "traversal")
    },
}


@pytest.mark.parametrize("room", sorted(FORBIDDEN_ABOVE))
def test_lower_rooms_import_nothing_from_higher_ones(room):
    found = [
        f"{name} imports {target} ({module.path.relative_to(PACKAGE_ROOT.parent)}:{line})"
        for name, module in GRAPH.items()
        if name == room or name.startswith(room + ".")
        for target, line in module.edges.items()
        if any(target == above or target.startswith(above + ".") for above in FORBIDDEN_ABOVE[room])
    ]
    assert not found, "\n".join(found)


PACKAGES = sorted(name for name, module in GRAPH.items() if module.is_package)


@pytest.mark.parametrize("name", PACKAGES)
def test_every_room_says_what_it_owns(name):
    """STYLE 14: a package's ``__init__`` opens with what the room owns and what it may import."""
    doc = ast.get_docstring(GRAPH[name].tree) or ""
    assert len(doc.split()) >= 20 and doc.rstrip(".").lower() != f"{name.rsplit('.', 1)[-1]} package", name
    assert "import" in doc, f"{name}: the docstring must say what the room may import"


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_no_library_file_is_over_500_lines(name):
    lines = GRAPH[name].path.read_text(encoding="utf-8").count("\n")
    assert lines <= 500, f"{GRAPH[name].path.relative_to(PACKAGE_ROOT.parent)}: {lines} lines (split it)"
