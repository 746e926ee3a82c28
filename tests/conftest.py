"""Shared fixtures: the real embedded PostgreSQL once per session, a clean database per
test, and the whole local runtime (moto + gateway + pumps) for end-to-end tests."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from tests.session_servers import interrupt_on_sigterm, start_watcher, stop_postgres, stop_watcher

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus" / "real"


def pytest_configure(config: pytest.Config) -> None:
    interrupt_on_sigterm()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Whatever this process starts stops with it, even if it crashes (tests/session_servers.py)."""
    start_watcher(session.config._tmp_path_factory.getbasetemp())


def pytest_unconfigure(config: pytest.Config) -> None:
    stop_watcher()


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """A bytes parameter is named by its argument, not its bytes: generated samples carry bytes that
    differ between runs (a gzip header's time, a PNG's pixels), and pytest-xdist needs every worker
    to collect the same test ids."""
    return argname if isinstance(val, bytes) else None


def _one_result_per_argument(owner: object, name: str):  # type: ignore[no-untyped-def]
    """While the fixture lasts, ``owner.name`` answers each argument once and then from memory."""
    original = getattr(owner, name)
    made: dict[object, object] = {}

    def shared(arg: object = None) -> object:
        if arg not in made:
            made[arg] = original(arg)
        return made[arg]

    setattr(owner, name, shared)
    yield
    setattr(owner, name, original)


@pytest.fixture(scope="session", autouse=True)
def _moto_kms_keys_share_one_rsa_key():
    """moto gives every KMS key it creates, a symmetric one too, a freshly generated 2048-bit RSA key
    (0.2 to 1 s of CPU each, in every ingest, chat and teardown fixture). Sluice only encrypts with
    symmetric keys, so the tests' keys share one RSA key per key spec."""
    from moto.kms import models

    yield from _one_result_per_argument(models, "generate_private_key")


@pytest.fixture(scope="session", autouse=True)
def _botocore_sessions_share_one_loader():
    """mock_aws gives boto3 a new default session each time it starts, and every botocore session
    parses the service models (S3's and KMS's JSON, their endpoint rules) again for its first client:
    about 0.1 s of CPU for each client of every `bucket` fixture and of the code under test. The
    models are read-only data, so the test process's sessions share one loader and its cache, as
    every client of one session does anyway; credentials, configuration and moto's state stay per session."""
    from botocore import session as botocore_session

    yield from _one_result_per_argument(botocore_session, "create_loader")


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory):
    import pgserver

    server = pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="stop")
    # A throwaway cluster: nothing in it must survive a crash of the machine, so it never waits for
    # the disk. Every test's CREATE DATABASE and DROP DATABASE (db_url) and every commit flushed to
    # disk before; on a loaded two-core machine that was most of a fixture's second. What a test sees
    # is unchanged: a clean stop or restart (pg_ctl) still writes everything, and these settings live
    # in the cluster's postgresql.auto.conf, so they hold across test_ingest_faults' restart too.
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
    yield server
    stop_postgres(server)


def _with_db(base_uri: str, name: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    return make_conninfo(**{**conninfo_to_dict(base_uri), "dbname": name})


@pytest.fixture(scope="session")
def migrated_template(pg_server) -> str:
    from sluice.db.migrations import migrate

    admin = pg_server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("CREATE DATABASE sluice_template")
    url = _with_db(admin, "sluice_template")
    migrate(url)
    return "sluice_template"


@pytest.fixture
def allow_endpoints(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Lets bases name endpoints on the hosts or ranges given (EMBEDDING_ALLOWED_ENDPOINTS), for one test."""
    from sluice.config import reset_settings

    def allow(value: str) -> None:
        monkeypatch.setenv("EMBEDDING_ALLOWED_ENDPOINTS", value)
        reset_settings()

    yield allow
    reset_settings()  # before monkeypatch restores the environment, so the next read sees it


@pytest.fixture
def db_url(pg_server, migrated_template: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh, migrated database for one test, set as the process's DATABASE_URL."""
    from sluice.config import reset_settings
    from sluice.db.connection import close_pool

    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = pg_server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{migrated_template}"')
    url = _with_db(admin, name)
    monkeypatch.setenv("DATABASE_URL", url)
    reset_settings()
    close_pool()
    yield url
    close_pool()
    reset_settings()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def runtime(pg_server, tmp_path_factory: pytest.TempPathFactory):
    """The whole local stack, as `sluice local up` runs it, on free ports."""
    from sluice.local.runtime import LocalRuntime

    admin = pg_server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("CREATE DATABASE sluice_e2e")
    rt = LocalRuntime(root=ROOT, data_dir=tmp_path_factory.mktemp("runtime"), api_port=0,
                      database_url=_with_db(admin, "sluice_e2e"))
    rt.start()
    yield rt
    rt.stop()


@pytest.fixture(scope="session")
def make_token():
    def make(user: str, org: str | None = None, perms: list[str] | None = None, admin: bool = False) -> str:
        from sluice.config import get_settings
        from sluice.local.tokens import mint

        return mint(get_settings().dev_jwt_secret, user=user, org=org, permissions=perms, app_admin=admin)

    return make


@pytest.fixture(scope="session")
def client_for(runtime, make_token):
    import httpx

    from sluice.cli.http import api_transport

    clients: list[httpx.Client] = []

    def make(user: str, org: str | None = None, perms: list[str] | None = None, admin: bool = False):
        c = httpx.Client(base_url=runtime.api_url, timeout=120, transport=api_transport(),
                         headers={"Authorization": f"Bearer {make_token(user, org, perms, admin)}"})
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules with a test marked slow first, within each of tests/unit, tests/integration and tests/e2e
    (which keep their order: e2e last, see pyproject.toml), the rest in their order. pytest-xdist
    (`make test`, --dist loadscope --no-loadscope-reorder) hands a worker a whole module at a time
    in this order, so a long module never starts when the other worker has little left to do; sorted
    by their number of tests (xdist's default), the 10 tests of test_sync_runs (a third of one
    worker's e2e time) started halfway through the run."""
    def part(item: pytest.Item) -> str:
        rel = item.path.relative_to(ROOT) if item.path.is_relative_to(ROOT) else item.path
        return rel.parts[1] if len(rel.parts) > 1 and rel.parts[0] == "tests" else ""

    parts: dict[str, int] = {}
    slow_modules = {item.path for item in items if item.get_closest_marker("slow") is not None}
    for item in items:
        parts.setdefault(part(item), len(parts))
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (parts[part(item)], item.path not in slow_modules, order[id(item)]))
