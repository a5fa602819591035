"""Shared fixtures: a real SQLite file and a real PostgreSQL schema per test."""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from _pytest.skipping import evaluate_skip_marks
from sqlalchemy.engine import make_url

from core.cases import Herald
from core.clock import ManualClock
from core.settings import Settings, load_settings
from core.store import Store
from tests.support.template_db import Templates

PG_URL = os.environ.get("HERALD_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
#: `make reliability`: the long scenarios too (the ``full`` mark), and bigger sizes.
FULL = os.environ.get("HERALD_RELIABILITY", "").lower() == "full"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "full(why, backend=None): a long scenario `make reliability` runs and `make test` "
        "skips, saying why the default run does without it; with backend='postgres' or "
        "'sqlite' only that database's run of it",
    )


@pytest.hookimpl(tryfirst=True)  # before -m selects: the surfaces' marks count too
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`make test` stays under ten minutes: the runs marked ``full`` are skipped, each
    with its reason (the lighter proof the default run keeps); `make reliability` runs
    them (``pytest -m full``)."""
    _surfaces_on_sqlite(items)
    if FULL:
        return
    for item in items:
        mark = item.get_closest_marker("full")
        if mark is None:
            continue
        backend = mark.kwargs.get("backend")
        if backend is not None and not _runs_on(item, backend):
            continue
        why = mark.args[0] if mark.args else "a long scenario"
        item.add_marker(pytest.mark.skip(reason=f"make reliability runs it: {why}"))


#: The surfaces: what they add over the use cases is words, payloads and screens, the
#: same on either database; tests/integration runs every store path on both.
_SURFACES = ("api", "calendars", "discord_bot", "e2e", "slack", "tui")


def _surfaces_on_sqlite(items: list[pytest.Item]) -> None:
    """A surface's test that runs on both databases runs on SQLite only in `make test`
    (its PostgreSQL run is marked ``full``: `make reliability`): the use cases and the store beneath
    them, where the databases differ, run on both in tests/integration. A surface test
    whose SQLite run is skipped in `make test` (Schemathesis) keeps its PostgreSQL run."""
    on_sqlite = {
        (str(item.path), getattr(item, "originalname", item.name))
        for item in items
        if _runs_on(item, "sqlite") and evaluate_skip_marks(item) is None
    }
    for item in items:
        if item.path.parent.name not in _SURFACES or not _runs_on(item, "postgres"):
            continue
        if (str(item.path), getattr(item, "originalname", item.name)) in on_sqlite:
            item.add_marker(
                pytest.mark.full(
                    "a surface on PostgreSQL (make test runs it on SQLite; "
                    "tests/integration runs the store on both)",
                    backend="postgres",
                )
            )


def _runs_on(item: pytest.Item, backend: str) -> bool:
    """Whether this run of a test is on ``backend``, by its parameters' ids."""
    ids = item.callspec.id.split("-") if hasattr(item, "callspec") else []
    names = {"postgres": ("postgres", "pg_url", "pg"), "sqlite": ("sqlite", "sqlite_url")}
    return any(part in names[backend] for part in ids)


START = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _pg_conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _pg_available() -> str | None:
    """None when PostgreSQL answers, else the reason it does not."""
    try:
        with psycopg.connect(_pg_conninfo(PG_URL), connect_timeout=3):
            return None
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0]


_PG_REASON = _pg_available()


@pytest.fixture(scope="session", autouse=True)
def _template_databases() -> Iterator[Templates]:
    """For the whole session ``core.db.upgrade`` to head of an empty database clones a
    migrated template instead of running 19 migrations: ~0.3 s saved on every fresh
    SQLite file or PostgreSQL schema a test migrates (tests/support/template_db.py).
    Explicit revisions, downgrades and non-empty databases still run Alembic."""
    from core import db

    real = db.upgrade
    templates = Templates(real, PG_URL)
    db.upgrade = templates
    try:
        yield templates
    finally:
        db.upgrade = real
        templates.close()


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """Every test leaves the root logger as it found it: a test that runs a ``herald``
    command in process (which configures logging: a handler on that test's captured
    stderr, with the secret scrubber rewriting records) would otherwise leave it to
    every later test on the same worker."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {
        name: logger.level
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
    for name, was in levels.items():
        logging.getLogger(name).setLevel(was)


def require_pg() -> None:
    """Skip (on a laptop) or fail (in CI) when PostgreSQL is not reachable."""
    if _PG_REASON is None:
        return
    message = f"PostgreSQL at {PG_URL} is not reachable: {_PG_REASON}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: PostgreSQL tests must run)")
    pytest.skip(f"{message}; set HERALD_TEST_PG_URL to run these tests")


@pytest.fixture
def pg_url(_template_databases: Templates) -> Iterator[str]:
    """A URL whose connections use a fresh schema of their own, dropped afterwards (or,
    still in the template's shape, emptied and kept for the next test's clone)."""
    require_pg()
    schema = f"t_{secrets.token_hex(6)}"
    _template_databases.create_schema(schema)
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        if not _template_databases.recycle(PG_URL, schema):
            _template_databases.drop_schema(schema)


@pytest.fixture
def sqlite_url(tmp_path: os.PathLike[str]) -> str:
    return f"sqlite:///{tmp_path}/herald.db"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test using this runs once on SQLite and once on PostgreSQL."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def settings(db_url: str) -> Settings:
    return load_settings(
        HERALD_DATABASE_URL=db_url,
        HERALD_ADMINS="local:root-admin",
        HERALD_DEFAULT_TZ="UTC",
        HERALD_WEBHOOK_ALLOW_PRIVATE="true",  # the fakes (.ics server, receivers) are on 127.0.0.1
        _env_file=None,
    )


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    from core import db

    if db.backend(db_url) == "postgresql":
        db.upgrade(db_url)
    s = await Store.open(db_url)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
def herald(store: Store, settings: Settings, clock: ManualClock) -> Herald:
    return Herald(store, settings, clock)


# The reliability scenarios' summary (tests/reliability/conftest.py): rows arrive on the
# tests' reports, from whichever process ran them (pytest-xdist's workers in `make test`).
_RELIABILITY_ROWS: list[tuple[str, str, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "teardown":
        rows = (v for k, v in report.user_properties if k == "reliability-row")
        _RELIABILITY_ROWS.extend(tuple(row) for row in rows)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _RELIABILITY_ROWS:
        return
    lines = ["| scenario | work | result |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in _RELIABILITY_ROWS]
    table = "\n".join(lines)
    terminalreporter.write_sep("=", "reliability summary")
    terminalreporter.write_line(table)
    if FULL:
        out = Path(__file__).resolve().parents[1] / "bench" / "RELIABILITY.md"
        out.write_text("# Reliability results (`make reliability`)\n\n" + table + "\n")


if os.environ.get("HERALD_TEST_LOOP") == "uvloop":

    def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> object:
        """``HERALD_TEST_LOOP=uvloop`` runs the in-process tests on uvloop, the loop
        `herald run` takes (the tests that start `herald run` as a process use it
        anyway); unset, asyncio's own loop. On 2026-12-03 the whole suite (2,332 tests)
        passed on both."""
        import uvloop

        return {"uvloop": uvloop.new_event_loop}
