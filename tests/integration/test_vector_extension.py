"""A database whose ``vector`` extension predates the server's pgvector: searched with the plan its
version supports, updated by the migrations, and its table's index still used after the update.

pgserver's own pgvector 0.6.2 scripts stay installed beside the 0.8 that ``make install`` builds, so
``CREATE EXTENSION vector VERSION '0.6.2'`` makes the database a data directory created before
the build would hold. On a server without 0.8 the extension is 0.6.2 either way and the update has
nothing to do: those parts are skipped, saying why.
"""

from __future__ import annotations

import uuid

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from sluice import cli
from sluice.db.migrations import migrate, vector_version, version_tuple
from sluice.vectors import store
from sluice.vectors.plan import table_facts
from sluice.vectors.search import BaseScope, find_candidates

DIM, N, K = 8, 4_000, 10
COLLECTION = "legacy"


def server_pgvector(conn: psycopg.Connection) -> tuple[int, ...]:
    row = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    return version_tuple(row["default_version"])


@pytest.fixture
def old_db(db_url):
    """The test's database with pgvector 0.6.2 as its extension version, and a table built under it."""
    with psycopg.connect(db_url, row_factory=psycopg.rows.dict_row, autocommit=True) as c:
        # Of what the migrations create, only the chat attachments' chunk table (0008) has a vector
        # column; this throwaway database does without it. Nothing else depends on the extension.
        c.execute("DROP TABLE chat_attachment_chunks")
        c.execute("DROP EXTENSION vector")
        c.execute("CREATE EXTENSION vector VERSION '0.6.2'")
    with psycopg.connect(db_url, row_factory=psycopg.rows.dict_row) as c:
        register_vector(c)
        rng = np.random.default_rng(3)
        vectors = rng.normal(size=(N, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        kb = uuid.uuid4()
        store.ensure_table(c, COLLECTION, DIM)
        store.insert_chunks(c, COLLECTION, [
            store.ChunkRow(document_id=uuid.uuid4(), kb_id=kb, org_id="acme", chunk_index=i, content=f"chunk {i}",
                           embedding=vectors[i]) for i in range(N)])
        c.execute(f"ANALYZE rag_{COLLECTION}")
        c.commit()
    return db_url, vectors, [BaseScope(kb, "acme")]


def search_all(url: str, vectors: np.ndarray, scope: list[BaseScope]):
    queries = np.random.default_rng(5).normal(size=(10, DIM)).astype(np.float32)
    with psycopg.connect(url, row_factory=psycopg.rows.dict_row) as c:
        register_vector(c)
        out = []
        for q in queries:
            found, plan = find_candidates(c, COLLECTION, vector=q, text="", scope=scope, limit=K)
            c.rollback()
            exact = np.argsort(-(vectors @ (q / np.linalg.norm(q))), kind="stable")[:K]
            out.append((plan.strategy, [f.chunk_index for f in found], [int(i) for i in exact]))
        return out


def test_a_database_on_pgvector_0_6_is_never_planned_an_iterative_scan(old_db):
    url, vectors, scope = old_db
    with psycopg.connect(url, row_factory=psycopg.rows.dict_row) as c:
        facts = table_facts(c, COLLECTION)
    assert vector_version(url) == "0.6.2"
    assert not facts.iterative_scan and facts.index == "vector"  # halfvec needs 0.7
    results = search_all(url, vectors, scope)
    # 4,000 rows unfiltered is a graph scope: the single walk of pgvector < 0.8, and every row it should find
    assert {strategy for strategy, _, _ in results} == {"hnsw"}
    assert all(found == exact for _, found, exact in results)


def test_migrate_updates_the_extension_and_the_old_tables_index_still_serves(old_db, capsys):
    url, vectors, scope = old_db
    with psycopg.connect(url, row_factory=psycopg.rows.dict_row) as c:
        newest = server_pgvector(c)
    if newest < (0, 8):
        pytest.skip("the server has no pgvector 0.8 to update to: `make install` builds it "
                    "(docs/operations/local-runtime.md)")

    # WHEN the operator runs the migrations (sluice local up runs the same)
    assert cli.main(["db", "migrate", "--database-url", url]) == 0
    assert "vector 0.6.2 -> " in capsys.readouterr().out
    assert version_tuple(vector_version(url)) == newest
    assert migrate(url) == []  # and once is enough

    # THEN searches plan iterative scans, over the index the table was built with
    with psycopg.connect(url, row_factory=psycopg.rows.dict_row) as c:
        facts = table_facts(c, COLLECTION)
    assert facts.iterative_scan and facts.index == "vector"
    results = search_all(url, vectors, scope)
    assert {strategy for strategy, _, _ in results} == {"hnsw_iterative"}
    assert all(found == exact for _, found, exact in results)


def test_local_up_says_which_pgvector_it_runs(old_db):
    url, _, _ = old_db
    line = cli._pgvector_line(url)
    assert line.startswith("0.6.2") and "production runs 0.8" in line


def test_a_migrator_that_does_not_own_the_extension_still_migrates(old_db, pg_server):
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    url, _, _ = old_db
    with psycopg.connect(url, row_factory=psycopg.rows.dict_row) as c:
        if server_pgvector(c) < (0, 8):
            pytest.skip("the server has no pgvector 0.8 to update to: `make install` builds it "
                    "(docs/operations/local-runtime.md)")
    role = f"migrator_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f'CREATE ROLE "{role}" LOGIN')
        c.execute(f'GRANT ALL ON SCHEMA public TO "{role}"')
        c.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}"')
    as_role = make_conninfo(**{**conninfo_to_dict(url), "user": role})
    # WHEN a role that may migrate the schema but does not own the extension runs the migrations
    applied = migrate(as_role)
    # THEN they succeed, say what was left, and the database keeps the version it had
    assert len(applied) == 1 and applied[0].startswith("vector 0.6.2 (not updated to ")
    assert vector_version(url) == "0.6.2"
