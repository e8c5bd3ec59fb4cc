"""The Python package's map (README "Layout", docs/design.md "The Python package"): which folder may import
which, and no import cycles. Read from the source with `ast`, function-level imports included (a lazy
import is still a dependency); imports under `if TYPE_CHECKING:` are for annotations only and left out."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "bpeforge"

# What each part of the package may import from bpeforge, besides itself and the Rust core (`_core`).
# The CLI sits on top and nothing imports it; `formats` sits at the bottom and imports nothing above.
ALLOWED = {
    "formats": set(),
    "inspection": {"formats", "tokenizer"},
    "tiktoken": {"formats", "tokenizer", "special_policy", "patterns", "arguments", "streaming"},
    "ray": {"formats", "tokenizer", "train", "inputs", "patterns", "encode_files", "counts"},
}
NOBODY_IMPORTS = {"cli"}
CORE = "bpeforge._core"  # the Rust extension: below everything


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _imported_modules(path: Path, modules: dict[str, Path]) -> set[str]:
    """The bpeforge modules `path` imports at run time (`from pkg import submodule` counts as the submodule)."""
    targets: set[str] = set()
    for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names if alias.name.startswith("bpeforge"))
        elif node.module and node.module.startswith("bpeforge"):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                targets.add(submodule if submodule in modules or submodule == CORE else node.module)
    return {target for target in targets if target in modules}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imported_modules(path, modules) for name, path in modules.items()}


def _part(module: str) -> str:
    """The folder or top-level module a module belongs to: `bpeforge.formats.hf` -> `formats`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles, each as the list of modules on it (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return cycles


def test_the_scan_sees_the_package():
    graph = _graph()
    # A guard on the test itself: the map below is only as good as the edges it finds.
    assert "bpeforge.tokenizer" in graph["bpeforge.cli.encode"]
    assert "bpeforge.formats.gpt2" in graph["bpeforge.tokenizer"]
    assert "bpeforge.cli.on_ray" in graph["bpeforge.cli.train"], "function-level imports count"
    assert "bpeforge.tokenizer" not in graph["bpeforge.formats.hf"], "TYPE_CHECKING imports do not"


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_each_folder_imports_only_below_it(part):
    allowed = ALLOWED[part] | {part}
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in _graph().items()
        if _part(module) == part
        for target in targets
        if _part(target) not in allowed
    )
    assert wrong == []


def test_nothing_below_the_cli_imports_it():
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in _graph().items()
        if _part(module) not in NOBODY_IMPORTS and module != "bpeforge.__main__"
        for target in targets
        if _part(target) in NOBODY_IMPORTS
    )
    assert wrong == []


def test_the_public_api_is_where_the_readme_says():
    import bpeforge
    import bpeforge.ray
    import bpeforge.tiktoken
    from bpeforge.cli import main

    for name in bpeforge.__all__:
        assert getattr(bpeforge, name) is not None, name
    assert callable(main)  # the console script `bpeforge = bpeforge.cli:main`
    assert callable(bpeforge.tiktoken.get_encoding)
    assert callable(bpeforge.ray.count) and callable(bpeforge.ray.encode)


# A module a reader can hold in mind at once; past this, split it by concept (the Rust core's own limit,
# 700 lines, is checked by crates/bpeforge/tests/layout.rs).
MAX_MODULE_LINES = 450


def test_no_module_is_longer_than_a_reader_can_hold():
    long = {
        name: n for name, path in _modules().items() if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"split these modules by concept (at most {MAX_MODULE_LINES} lines): {long}"
