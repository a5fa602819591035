"""``core`` has no import circle: its import graph, read from the source, has no cycle.

Every import counts, one inside a function too (a lazy import still ties two modules
together: neither can be read, changed or tested without the other), relative ones
resolved; only ``if TYPE_CHECKING:`` blocks are left aside (annotations, never run).
``from pkg import name`` imports ``pkg`` (it names it), and ``pkg.name`` too when that
is a module: a package's module that takes a sibling so closes a circle with a face
importing it (take ``from pkg.name import …`` instead). ``import pkg.mod`` and ``from
pkg.mod import …`` also run ``pkg/__init__.py``; that edge is not counted, or every
package whose face re-exports its modules would be a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

import core

Graph = Mapping[str, Collection[str]]


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module under ``root`` (the directory of ``package``) by its dotted name; a
    package by its ``__init__.py``."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _named(name: str, path: Path) -> set[str]:
    """Every dotted name module ``name`` (at ``path``) imports, and for ``from x import
    y`` also ``x.y``; relative imports resolved, ``if TYPE_CHECKING:`` left aside."""
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    named: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for statement in node.orelse:  # the else branch runs
                visit(statement)
            return
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            source = ".".join([*base, *([node.module] if node.module else [])])
            named.add(source)
            named.update(f"{source}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return named


def import_graph(found: Mapping[str, Path]) -> dict[str, set[str]]:
    """Which of the ``found`` modules each one imports (a name is taken for its longest
    prefix that is a module: ``core.channels.parse_destination`` is ``core.channels``)."""
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        edges: set[str] = set()
        for target in _named(name, path):
            while target and target not in found:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def _strongly_connected(graph: Graph) -> Iterator[list[str]]:
    """Tarjan's components of ``graph`` with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def connect(node: str) -> Iterator[list[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                yield from connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                yield sorted(component)

    for node in sorted(graph):
        if node not in index:
            yield from connect(node)


def _shortest_cycle(graph: Graph, component: list[str]) -> list[str]:
    """A shortest circle through the first module of ``component``, start repeated at
    the end: ``[a, b, a]``."""
    start, inside = component[0], set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(n for n in graph[node] if n in inside):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if nxt not in came_from:
                    came_from[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover


def circles(graph: Graph) -> list[str]:
    """Each import circle of ``graph``: its modules, and one shortest circle among them."""
    return [
        f"{len(c)} modules {c}, e.g. {' -> '.join(_shortest_cycle(graph, c))}"
        for c in _strongly_connected(graph)
    ]


def test_core_has_no_import_circle() -> None:
    graph = import_graph(modules(Path(core.__file__).parent, "core"))
    found = circles(graph)
    assert not found, "import circles in core:\n" + "\n".join(found)


def test_the_graph_counts_every_import_but_type_checking_ones(tmp_path: Path) -> None:
    """The reader itself, on a made-up package: a lazy import, a relative one, a
    submodule by ``from pkg import name`` and a face importing its room count; an
    import under ``if TYPE_CHECKING:`` and the parent package of a submodule do not."""
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "def f():\n    from pkg import b\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n"
        "else:\n    from .sub import room\n",
        "c.py": "import pkg.a\n",
        "sub/__init__.py": "from pkg.sub.room import thing\n",
        "sub/room.py": "from ..c import x\nthing = 1\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    graph = import_graph(modules(root, "pkg"))
    assert graph == {
        "pkg": set(),
        "pkg.a": {"pkg", "pkg.b"},
        "pkg.b": {"pkg.sub", "pkg.sub.room"},
        "pkg.c": {"pkg.a"},
        "pkg.sub": {"pkg.sub.room"},
        "pkg.sub.room": {"pkg.c"},
    }
    assert circles(graph) == [
        "5 modules ['pkg.a', 'pkg.b', 'pkg.c', 'pkg.sub', 'pkg.sub.room'], e.g. "
        "pkg.a -> pkg.b -> pkg.sub.room -> pkg.c -> pkg.a"
    ]
