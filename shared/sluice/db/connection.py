"""The process's connection pool, built once per cold start from DATABASE_URL or a secret.

A Lambda serves one event at a time, so its pool stays small; the local runtime
runs every handler in one process on several threads, which is why this is a
pool and not one shared connection.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any
from urllib.parse import quote

import psycopg
from pgvector.psycopg import register_vector
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from sluice.config import DatabaseSettings, current

# The pool's connections hand out rows as dicts.
Connection = psycopg.Connection[dict[str, Any]]
# A unit of work: a transaction that commits when its block ends normally and rolls back otherwise.
UnitOfWork = Callable[[], AbstractContextManager[Connection]]

_lock = threading.Lock()
_pool: ConnectionPool[Connection] | None = None


def _url_from_secret(secret_id: str) -> str:
    # Powertools' parameter cache keeps the secret across warm invocations.
    from aws_lambda_powertools.utilities import parameters

    raw = parameters.get_secret(secret_id, max_age=300)
    fields = json.loads(raw if isinstance(raw, str) else raw.decode())
    return "postgresql://{u}:{p}@{h}:{port}/{db}".format(
        u=quote(fields["username"], safe=""),
        p=quote(fields["password"], safe=""),
        h=fields["host"],
        port=fields.get("port", 5432),
        db=fields.get("dbname", "postgres"),
    )


def database_url() -> str:
    settings = current(DatabaseSettings)
    if settings.database_url:
        url = settings.database_url
    elif settings.database_secret_id:
        url = _url_from_secret(settings.database_secret_id)
    else:
        raise RuntimeError("Set DATABASE_URL or DATABASE_SECRET_ID")
    return with_tls(through_proxy(url, settings.database_proxy_host))


def through_proxy(url: str, proxy_host: str) -> str:
    """``url`` with its host replaced by an RDS Proxy endpoint, when one is configured: the proxy takes
    the same credentials and database and pools the server's connections across functions."""
    if not proxy_host:
        return url
    return make_conninfo(url, host=proxy_host)


_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def with_tls(url: str) -> str:
    """``url`` requiring TLS (``sslmode=require``) unless it names its own sslmode or a local server.

    Document text and vectors cross this connection; libpq's default (``prefer``)
    falls back to plain text without a word. A unix socket or loopback server
    (the embedded one) has no network to protect.
    """
    params = conninfo_to_dict(url)
    hosts = [h for h in str(params.get("host") or "").split(",") if h]
    if "sslmode" in params or not hosts or all(h.startswith("/") or h in _LOCAL_HOSTS for h in hosts):
        return url
    return make_conninfo(url, sslmode="require")


def _configure(conn: Connection) -> None:
    # The vector extension does not exist before the first migration.
    with suppress(psycopg.ProgrammingError):
        register_vector(conn)
    conn.commit()


def new_pool(url: str, max_size: int, timeout: float = 30.0) -> ConnectionPool[Connection]:
    """A pool of at most ``max_size`` connections; a caller beyond them waits up to ``timeout`` s."""
    return ConnectionPool(
        url,
        connection_class=psycopg.Connection[dict[str, Any]],
        min_size=1,
        max_size=max_size,
        kwargs={"row_factory": dict_row, "autocommit": False},
        configure=_configure,
        open=True,
        check=ConnectionPool.check_connection,
        timeout=timeout,
    )


def get_pool() -> ConnectionPool[Connection]:
    global _pool
    with _lock:
        if _pool is None:
            _pool = new_pool(database_url(), current(DatabaseSettings).db_pool_max_size)
        return _pool


def close_pool() -> None:
    global _pool
    with _lock:
        if _pool is not None:
            _pool.close()
            _pool = None


@contextmanager
def transaction() -> Iterator[Connection]:
    """One unit of work: commits when the block ends normally, rolls back otherwise."""
    with get_pool().connection() as conn:
        yield conn


def set_lock_timeout(conn: Connection, ms: int) -> None:
    """Wait at most ``ms`` for a lock, until this transaction ends."""
    conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{ms}ms",))


def set_statement_timeout(conn: Connection, ms: int) -> None:
    """Stop any statement of this transaction that runs longer than ``ms``, until the transaction ends
    (the server cancels it: nothing of it keeps running after the caller has given up)."""
    conn.execute("SELECT set_config('statement_timeout', %s, true)", (f"{ms}ms",))


def set_role_password(conn: psycopg.Connection[Any], role: str, password: str) -> None:
    """Give ``role`` a password (the local runtime's exposed PostgreSQL)."""
    from psycopg import sql

    conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role), sql.Literal(password)))


def has_table(conn: Connection, name: str) -> bool:
    """Whether the schema holds table ``name`` (a template whose migrations hold other tables has not)."""
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL AS present", (name,)).fetchone()
    return bool(row and row["present"])
