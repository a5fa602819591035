"""The dispatcher stays in rooms: no module of ``core/dispatcher/`` grows past 600
lines or a function past 60, and no room imports the loop (only the package's face
does), so the loop depends on its rooms and never the other way round."""

import ast
from pathlib import Path

import core.dispatcher

PACKAGE = Path(core.dispatcher.__file__).parent
MODULES = sorted(PACKAGE.glob("*.py"))
LOOP = "core.dispatcher.loop"


def _imports(tree: ast.AST) -> set[str]:
    """Every module a source imports, also inside functions (``from core.dispatcher
    import loop`` counts as importing the loop)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_package_has_its_rooms() -> None:
    names = {path.stem for path in MODULES}
    assert {"loop", "config", "verdicts", "rates", "feeder", "liveness"} <= names


def test_no_module_is_over_600_lines() -> None:
    long = {p.name: n for p in MODULES if (n := len(p.read_text().splitlines())) >= 600}
    assert not long


def test_no_function_is_over_60_lines() -> None:
    long = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                if node.end_lineno - node.lineno + 1 > 60:
                    long.append(f"{path.name}:{node.name}")
    assert not long


def test_no_room_imports_the_loop() -> None:
    importers = [
        path.name
        for path in MODULES
        if path.name != "__init__.py" and LOOP in _imports(ast.parse(path.read_text()))
    ]
    assert not importers


def test_no_room_imports_the_face() -> None:
    """A room importing ``core.dispatcher`` itself (``from core.dispatcher import x``
    too) would close a circle through the face, which imports the loop."""
    for path in MODULES:
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                assert "core.dispatcher" not in {a.name for a in node.names}, path.name
            if isinstance(node, ast.ImportFrom):
                assert node.module != "core.dispatcher", path.name


def test_the_rooms_import_each_other_without_a_circle() -> None:
    rooms = {p.stem for p in MODULES} - {"__init__"}
    edges = {
        p.stem: {
            name.rsplit(".", 1)[1]
            for name in _imports(ast.parse(p.read_text()))
            if name.startswith("core.dispatcher.") and name.rsplit(".", 1)[1] in rooms
        }
        for p in MODULES
        if p.stem in rooms
    }
    done: set[str] = set()

    def visit(room: str, path: tuple[str, ...]) -> None:
        assert room not in path, " -> ".join((*path, room))
        if room not in done:
            for other in edges[room]:
                visit(other, (*path, room))
            done.add(room)

    for room in sorted(rooms):
        visit(room, ())
