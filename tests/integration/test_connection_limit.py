"""The connection remedy (issue 30), tested as far as it goes locally: the database admits a fixed
number of connections, as Aurora's max_connections does; environments with a pool of one, bounded in
number the way the EmbedQueue mapping's MaximumConcurrency bounds the embed stage, never ask for more,
so every piece of work succeeds and the surplus waits in the queue. Unbounded, the same work is refused."""

from __future__ import annotations

import queue
import threading
import uuid

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

from sluice.db.connection import new_pool, through_proxy
from sluice.vectors import store

LIMIT = 4
ROLE = "sluice_limited"


@pytest.fixture
def limited_url(db_url):
    """``db_url`` as a role that may hold at most LIMIT connections (a superuser is exempt from limits)."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone()
        if not exists:
            conn.execute(f"CREATE ROLE {ROLE} LOGIN")
        conn.execute(f"ALTER ROLE {ROLE} CONNECTION LIMIT {LIMIT}")
        with psycopg.connect(db_url, row_factory=dict_row) as setup:
            from sluice.db.connection import _configure

            _configure(setup)
            store.ensure_table(setup, "limits", 3)
            setup.commit()
        conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {ROLE}")
        conn.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {ROLE}")
    yield make_conninfo(**{**conninfo_to_dict(db_url), "user": ROLE})


def _peak_sampler(admin_url: str, stop: threading.Event, peak: list[int]) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        while not stop.is_set():
            (n,) = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (ROLE,)).fetchone()
            peak[0] = max(peak[0], n)
            stop.wait(0.01)


def _run(url: str, admin_url: str, environments: int, units: int) -> tuple[int, list[str], int, int]:
    """``units`` chunk writes queued at once, taken by ``environments`` workers with a pool of one each.
    Returns (done, errors, peak connections of the role, peak units running at once)."""
    work: queue.Queue[int] = queue.Queue()
    for n in range(units):
        work.put(n)
    done, errors, running, most = [], [], [0], [0]
    lock = threading.Lock()
    kb = uuid.uuid4()

    def environment() -> None:
        try:
            pool = new_pool(url, max_size=1, timeout=3.0)
        except Exception as error:  # noqa: BLE001 - recorded and asserted on
            errors.append(f"{type(error).__name__}: {error}")
            return
        try:
            while True:
                try:
                    n = work.get_nowait()
                except queue.Empty:
                    return
                with lock:
                    running[0] += 1
                    most[0] = max(most[0], running[0])
                try:
                    with pool.connection() as conn:
                        rows = [
                            store.ChunkRow(uuid.uuid4(), kb, "org", i, f"unit {n} chunk {i}", [0.1, 0.2, 0.3])
                            for i in range(20)
                        ]
                        store.insert_chunks(conn, "limits", rows)
                        conn.execute("SELECT pg_sleep(0.02)")
                    done.append(n)
                except Exception as error:  # noqa: BLE001
                    errors.append(f"{type(error).__name__}: {error}")
                finally:
                    with lock:
                        running[0] -= 1
        finally:
            pool.close()

    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=_peak_sampler, args=(admin_url, stop, peak))
    sampler.start()
    threads = [threading.Thread(target=environment) for _ in range(environments)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    sampler.join()
    return len(done), errors, peak[0], most[0]


def test_environments_bounded_to_the_limit_finish_everything_and_the_rest_waits(db_url, limited_url):
    done, errors, peak, most = _run(limited_url, db_url, environments=LIMIT, units=40)
    assert errors == []
    assert done == 40
    assert peak <= LIMIT
    assert most == LIMIT  # 40 queued at once, never more than 4 running: 36 waited their turn
    with psycopg.connect(db_url) as conn:
        (n,) = conn.execute("SELECT count(*) FROM rag_limits").fetchone()
    assert n == 40 * 20


def test_a_proxy_host_replaces_the_host_and_keeps_the_rest():
    url = "postgresql://app:secret@db.cluster-x.us-east-1.rds.amazonaws.com:5432/sluice"
    proxied = conninfo_to_dict(through_proxy(url, "sluice.proxy-y.us-east-1.rds.amazonaws.com"))
    assert proxied["host"] == "sluice.proxy-y.us-east-1.rds.amazonaws.com"
    assert (proxied["user"], proxied["password"], proxied["dbname"], proxied["port"]) == (
        "app",
        "secret",
        "sluice",
        "5432",
    )
    assert through_proxy(url, "") == url
