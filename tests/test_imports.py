"""The import graph of app/, read from the source with `ast` (module-level and function-level
imports alike, `if TYPE_CHECKING:` ones left out): it has no cycle, and only the app factory and
the routes import the routes (pages never depend on the routes that serve them)."""

import ast
from collections.abc import Container, Iterator
from pathlib import Path

# Read from the files, not from sys.modules: a copy of another checkout's app/ can be checked.
APP = Path(__file__).resolve().parents[1] / "app"

Graph = dict[str, set[str]]


def module_names(root: Path) -> dict[str, Path]:
    """Every module of the package at `root`, by dotted name (a package by its own name)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import under `node`, at any depth, but the ones only a type checker runs."""
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.orelse:
            yield from _imports(child)
        return
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    for child in ast.iter_child_nodes(node):
        yield from _imports(child)


def _targets(
    node: ast.Import | ast.ImportFrom, name: str, is_package: bool, modules: Container[str]
) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        # Relative: from the module's own package, one level up per dot after the first.
        package = name.split(".") if is_package else name.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    for alias in node.names:
        # `from app import repo` imports the module app.repo; `from app.x import name`, app.x.
        submodule = f"{base}.{alias.name}"
        yield submodule if submodule in modules else base


def _with_packages(target: str) -> Iterator[str]:
    """Importing app.pages.live runs app/pages/__init__.py first: the packages above count."""
    parts = target.split(".")
    for end in range(2, len(parts) + 1):
        yield ".".join(parts[:end])


def import_graph(root: Path = APP) -> Graph:
    """For each module of the package at `root`, the package's modules it imports."""
    modules = module_names(root)
    graph: Graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        graph[name] = {
            each
            for node in _imports(tree)
            for target in _targets(node, name, is_package, modules)
            for each in _with_packages(target)
            # A package's own modules importing it back is how Python packages work.
            if each in modules and each != name and not name.startswith(each + ".")
        }
    return graph


def find_cycle(graph: Graph) -> list[str] | None:
    """A cycle of the graph as its path (its first module again at the end), or None."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(name: str) -> list[str] | None:
        path.append(name)
        on_path.add(name)
        for target in sorted(graph.get(name, ())):
            if target in on_path:
                return [*path[path.index(target) :], target]
            if target not in done:
                found = visit(target)
                if found:
                    return found
        on_path.discard(path.pop())
        done.add(name)
        return None

    for name in sorted(graph):
        if name not in done:
            found = visit(name)
            if found:
                return found
    return None


def test_the_graph_is_read_whole() -> None:
    """The walk sees function-level and relative imports, and skips TYPE_CHECKING ones."""
    graph = import_graph()
    assert "app.web" in graph["app.cli"]  # imported inside the serve command's function
    assert {"app.repo.cards", "app.repo.events"} <= graph["app.repo"]
    assert graph["app.pages"] >= {"app.pages.campaign", "app.pages.attempt", "app.pages.share"}
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from app import web\nelse:\n    from . import repo\n"
        "def f() -> None:\n    from .pages import live\n"
    )
    found = {t for node in _imports(tree) for t in _targets(node, "app.x", False, graph)}
    assert found == {"typing", "app.repo", "app.pages.live"}
    assert "app.pages" in graph["app.sharing"] or not any(
        t.startswith("app.pages.") for t in graph["app.sharing"]
    )  # a package's modules come with the package itself


def test_the_app_imports_no_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_only_the_app_factory_and_the_routes_import_the_routes() -> None:
    """Routes depend on pages, never the reverse."""
    graph = import_graph()
    allowed = {"app.web", "app.routes"}
    wrong = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if name not in allowed and not name.startswith("app.routes.")
        for target in targets
        if target == "app.routes" or target.startswith("app.routes.")
    )
    assert not wrong, "imports of the routes outside them: " + ", ".join(wrong)
