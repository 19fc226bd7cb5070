"""The import graph of ``pipeline`` and ``studio``: no cycles, and the pipeline never imports the studio.

Every ``import`` statement in the source tree counts — at module level, inside functions and under
``if TYPE_CHECKING:`` alike — because a cycle hidden in a function is still a cycle in the design (it only fails
later, at call time, and it ties the two modules together just the same). The graph is read with ``ast``, not by
importing anything, so heavy optional libraries need not be installed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.repo import REPO_ROOT

PACKAGES = ("pipeline", "studio")


def module_name(path: Path) -> str:
    """``studio/web/app.py`` → ``studio.web.app``; ``studio/web/__init__.py`` → ``studio.web``."""
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules(root: Path = REPO_ROOT) -> dict[str, Path]:
    """Every module of :data:`PACKAGES` by dotted name (migration scripts included: they are code too)."""
    return {module_name(path): path for package in PACKAGES for path in sorted((root / package).rglob("*.py"))}


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """The dotted names each import statement of ``tree`` reaches (``from a import b`` yields ``a.b`` and ``a``)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the modules of :data:`PACKAGES` it imports (the longest known prefix of each imported name)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: set[str] = set()
        for imported in _imported_names(tree, name, path.name == "__init__.py"):
            parts = imported.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            if parts and ".".join(parts) != name:
                targets.add(".".join(parts))
        graph[name] = targets
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (each one holds at least one cycle)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        work = [(start, iter(sorted(graph[start])))]
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
                    work.append((child, iter(sorted(graph[child]))))
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

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(found)


def a_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete cycle through the first module of ``component`` (for the failure message)."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        node = frontier.pop(0)
        for child in sorted(graph[node] & members):
            if child == start:
                return [*paths[node], start]
            if child not in paths:
                paths[child] = [*paths[node], child]
                frontier.append(child)
    return component


def test_the_graph_reader_sees_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    (tmp_path / "studio" / "web").mkdir(parents=True)
    (tmp_path / "pipeline").mkdir()
    for package in ("studio", "studio/web", "pipeline"):
        (tmp_path / package / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "studio" / "web" / "app.py").write_text(
        "def create():\n    from studio.web import routes\n    return routes\n", encoding="utf-8"
    )
    (tmp_path / "studio" / "web" / "routes.py").write_text("from .app import create\n", encoding="utf-8")
    (tmp_path / "pipeline" / "run.py").write_text("import studio.web.app\n", encoding="utf-8")
    modules = {module_name_in(tmp_path, path): path for path in sorted(tmp_path.rglob("*.py"))}
    graph = import_graph(modules)
    assert graph["studio.web.app"] == {"studio.web", "studio.web.routes"}
    assert graph["studio.web.routes"] == {"studio.web.app"}
    assert graph["pipeline.run"] == {"studio.web.app"}
    assert strongly_connected(graph) == [["studio.web.app", "studio.web.routes"]]


def module_name_in(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_cycles() -> None:
    graph = import_graph(source_modules())
    cycles = [" -> ".join(a_cycle(graph, component)) for component in strongly_connected(graph)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_pipeline_never_imports_the_studio() -> None:
    graph = import_graph(source_modules())
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.split(".")[0] == "pipeline"
        for target in targets
        if target.split(".")[0] == "studio"
    )
    assert not wrong, "\n".join(wrong)


#: The layers, lowest first (ARCHITECTURE.md "Layers"). A module may import its own layer or any layer below it,
#: never one above: ``pipeline`` is below all of the studio; the studio's foundations (errors, settings, the decision
#: rules) are below who-may-do-what and the workflows; the store's tables sit on those; pure results on the store's
#: rows; services on results; one use case per user action on services; the Gradio pages and then the web app on the
#: use cases; the commands on everything. Each entry is a module or a package prefix.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("pipeline",),
    ("studio.errors", "studio.settings", "studio.rules"),
    ("studio.policies", "studio.workflows", "studio.workflow_live"),
    ("studio.db", "studio.direct_sql", "studio.models"),
    ("studio.results",),
    ("studio.services",),
    ("studio.usecases",),
    ("studio.ui",),
    ("studio.web",),
    ("studio.commands", "studio.cli", "studio.migrations", "studio"),
)


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the longest entry that ``module`` is or lies under."""
    matches = [
        (len(entry), index)
        for index, entries in enumerate(LAYERS)
        for entry in entries
        if module == entry or module.startswith(entry + ".")
    ]
    if not matches:
        raise LookupError(f"{module} is in no layer: add it to LAYERS (tests/test_imports.py) and ARCHITECTURE.md")
    return max(matches)[1]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import that runs from a lower layer to a higher one, as ``module (layer) imports target (layer)``."""
    return sorted(
        f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )


def test_the_layer_checker_names_an_import_that_runs_back_up() -> None:
    graph = {
        "studio.policies": {"studio.services.errors", "studio.errors"},
        "studio.services.queue": {"studio.models.campaigns", "pipeline.records"},
        "studio.services.errors": set(),
        "studio.errors": set(),
        "studio.models.campaigns": set(),
        "pipeline.records": set(),
    }
    assert upward_imports(graph) == ["studio.policies (layer 2) imports studio.services.errors (layer 5)"]
    assert layer_of("studio") == len(LAYERS) - 1 and layer_of("studio.web.routes.admin") == LAYERS.index(
        ("studio.web",)
    )


def test_every_module_is_in_a_layer_and_no_import_runs_back_up() -> None:
    graph = import_graph(source_modules())
    wrong = upward_imports(graph)
    assert not wrong, "imports that run back up a layer:\n" + "\n".join(wrong)
