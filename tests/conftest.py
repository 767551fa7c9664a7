"""Shared fixtures: databases (SQLite and PostgreSQL), a real `tewatch serve` process, fixture results."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import make_url, text

from tests.served import ServeProcess

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "tests" / "fixtures"
PG_CLUSTER_SCRIPT = REPO_ROOT / "scripts" / "pg-test-cluster.sh"
BACKENDS = ["sqlite", "postgresql"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long_setup files first, then the long_running ones, the rest in their order: under `-n 3
    --dist loadfile` a worker takes a file at a time in this order, so the longest files start at once
    instead of finishing last on one worker while the others idle."""
    items.sort(
        key=lambda item: (
            item.get_closest_marker("long_setup") is None,
            item.get_closest_marker("long_running") is None,
        )
    )


ASV_V1 = FIXTURES / "asv-v1" / "results"  # asv's results format 1: tests/ingest/test_asv_v1.py reads it


def fixture_results_dirs() -> list[Path]:
    """Every asv results directory under tests/fixtures (any folder holding a benchmarks.json) in asv's
    current results format."""
    return sorted({path.parent for path in FIXTURES.rglob("benchmarks.json")} - {ASV_V1})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _postgres_binaries() -> bool:
    return any(Path("/usr/lib/postgresql").glob("*/bin/initdb")) or shutil.which("initdb") is not None


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str | None]:
    """A PostgreSQL URL whose role may create databases: $TEWATCH_TEST_POSTGRES_URL, or a throwaway cluster."""
    url = os.environ.get("TEWATCH_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    if not _postgres_binaries():
        yield None
        return
    cluster_dir = Path(tempfile.mkdtemp(prefix="tewatch-pg-"))
    started = subprocess.run(
        ["bash", str(PG_CLUSTER_SCRIPT), "start", str(cluster_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    if started.returncode != 0:
        pytest.fail(f"could not start a PostgreSQL test cluster: {started.stderr.strip()}")
    try:
        yield started.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(["bash", str(PG_CLUSTER_SCRIPT), "stop", str(cluster_dir)], check=False)


def _admin_url(postgres_url: str) -> str:
    return make_url(postgres_url).set(drivername="postgresql").render_as_string(hide_password=False)


def _postgres_admin(postgres_url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(_admin_url(postgres_url), autocommit=True) as conn:
        conn.execute(statement)


@contextmanager
def _postgres_database(postgres_url: str, template: str | None = None) -> Iterator[str]:
    """A new database in the server at `postgres_url` (a copy of `template` if given), dropped after."""
    name = f"tw_{uuid.uuid4().hex[:12]}"
    _postgres_admin(
        postgres_url, f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")
    )
    try:
        yield (
            make_url(postgres_url)
            .set(drivername="postgresql+psycopg", database=name)
            .render_as_string(hide_password=False)
        )
    finally:
        _postgres_admin(postgres_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite store migrated once per test process; each test's fresh store is a copy of it."""
    from tewatch.store.engine.migrate import upgrade

    path = tmp_path_factory.mktemp("template") / "tewatch.sqlite3"
    upgrade(f"sqlite:///{path}")
    return path


def _copy_sqlite(source: Path, target: Path) -> None:
    """SQLite's online backup: the pages of the database file and of its WAL, as one consistent copy."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


@pytest.fixture(scope="session")
def postgres_template(postgres_server: str | None) -> Iterator[str]:
    """An empty PostgreSQL database migrated once per test process; each test's fresh database is made
    from it by CREATE DATABASE ... TEMPLATE, a copy of its files."""
    from tewatch.store.engine.migrate import upgrade

    assert postgres_server is not None
    with _postgres_database(postgres_server) as url:
        upgrade(url)
        name = make_url(url).database
        # no connection may be open to a template while it is copied; autovacuum skips such a database
        _postgres_admin(postgres_server, f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        yield name or ""


def _fresh_database(request: pytest.FixtureRequest, postgres_url: str | None, tmp_dir: Path) -> Iterator[str]:
    """An empty database of the backend `request.param` with every migration applied: a copy of the
    migrated template of that backend."""
    if request.param == "sqlite":
        path = tmp_dir / "tewatch.sqlite3"
        _copy_sqlite(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
        return
    if postgres_url is None:
        pytest.skip(
            "PostgreSQL variant skipped: no PostgreSQL binaries and TEWATCH_TEST_POSTGRES_URL is unset"
        )
    with _postgres_database(postgres_url, template=request.getfixturevalue("postgres_template")) as url:
        yield url


@pytest.fixture(params=BACKENDS)
def db_url(request, postgres_server, tmp_path) -> Iterator[str]:
    """An empty, migrated database of each backend, fresh for every test."""
    yield from _fresh_database(request, postgres_server, tmp_path)


@pytest.fixture(scope="module", params=BACKENDS)
def module_db_url(request, postgres_server, tmp_path_factory) -> Iterator[str]:
    """Like db_url, shared by the tests of one module (they compare counts before and after)."""
    yield from _fresh_database(request, postgres_server, tmp_path_factory.mktemp("db"))


def store_counts_of(db_url: str) -> dict[str, int]:
    """Row counts of every table ingest writes, read straight from the database."""
    from tewatch.store.engine.database import make_engine
    from tewatch.store.reads.queries import store_counts

    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            counts = store_counts(conn)
            for table in ("raw_files", "run_files", "environments", "api_tokens", "trajectories"):
                counts[table] = conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
            return counts
    finally:
        engine.dispose()


@dataclass
class LiveServer:
    url: str
    db_url: str
    token: str
    process: ServeProcess

    def client(self, token: str | None = "default", **kwargs) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token if token == 'default' else token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **kwargs)

    def counts(self) -> dict[str, int]:
        return store_counts_of(self.db_url)


def start_server(
    db_url: str, log_path: Path, *extra_args: str, env: dict[str, str] | None = None
) -> LiveServer:
    from tewatch.store.engine.database import make_engine
    from tewatch.store.schema.models import TokenScope
    from tewatch.store.writes.tokens import create_token

    engine = make_engine(db_url)
    token = create_token(engine, "tests", TokenScope.admin)
    engine.dispose()
    port = free_port()
    process = ServeProcess(
        ["serve", "--host", "127.0.0.1", "--port", str(port), "--db", db_url, "--log-level", "warning",
         *extra_args],
        {**os.environ, **(env or {})},
        log_path.parent,
        log_path,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"tewatch serve exited with {process.returncode}: {log_path.read_text()[-2000:]}"
            )
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=1).status_code == 200:
                return LiveServer(url, db_url, token, process)
        except httpx.TransportError:
            time.sleep(0.1)
    process.terminate()
    raise RuntimeError(f"tewatch serve did not answer within 60 s: {log_path.read_text()[-2000:]}")


def stop_server(server: LiveServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()


@contextmanager
def served_sqlite(folder: Path, env: dict[str, str] | None = None) -> Iterator[tuple[LiveServer, str]]:
    """A real `tewatch serve` on a fresh, migrated SQLite store in `folder` (with `env` added to its
    environment): (server, database URL)."""
    from tewatch.store.engine.migrate import upgrade

    db_url = f"sqlite:///{folder / 'tewatch.sqlite3'}"
    upgrade(db_url)
    server = start_server(db_url, folder / "serve.log", env=env)
    try:
        yield server, db_url
    finally:
        stop_server(server)


@pytest.fixture(scope="module")
def live_server(module_db_url, tmp_path_factory) -> Iterator[LiveServer]:
    """A real `tewatch serve` (uvicorn) on a free loopback port, for the tests of one module."""
    server = start_server(module_db_url, tmp_path_factory.mktemp("server") / "serve.log")
    yield server
    stop_server(server)


@dataclass
class InProcessApp:
    """The service's app called in this process (Starlette's TestClient): the routes without a server."""

    db_url: str
    token: str
    app: object

    def client(self, token: str | None = "default", **kwargs):
        from fastapi.testclient import TestClient

        headers = {"Authorization": f"Bearer {self.token if token == 'default' else token}"} if token else {}
        return TestClient(self.app, headers=headers, **kwargs)  # type: ignore[arg-type]

    def counts(self) -> dict[str, int]:
        return store_counts_of(self.db_url)


@contextmanager
def app_in_process(db_url: str) -> Iterator[InProcessApp]:
    """`create_app` on the store at `db_url`, with an upload token."""
    from tewatch.api.app import create_app
    from tewatch.core.settings import Settings
    from tewatch.store.engine.database import make_engine
    from tewatch.store.schema.models import TokenScope
    from tewatch.store.writes.tokens import create_token

    engine = make_engine(db_url)
    token = create_token(engine, "tests", TokenScope.admin)
    engine.dispose()
    app = create_app(Settings(database_url=db_url))
    try:
        yield InProcessApp(db_url, token, app)
    finally:
        app.state.engine.dispose()


@pytest.fixture(scope="module")
def in_process_app(module_db_url) -> Iterator[InProcessApp]:
    """`create_app` on a fresh store for the tests of one module, with an upload token."""
    with app_in_process(module_db_url) as app:
        yield app


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway git copy of the project (asv.conf.json and the suites) for real `asv run`s."""
    root = tmp_path_factory.mktemp("project")
    shutil.copy(REPO_ROOT / "asv.conf.json", root)
    shutil.copytree(
        REPO_ROOT / "benchmarks", root / "benchmarks", ignore=shutil.ignore_patterns("__pycache__")
    )
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "commit", "-qm", "snapshot")
    return root
