"""The runtime vector table against the real embedded PostgreSQL (R-VEC-1, R-VEC-3, R-SRCH-1)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from sluice.db.migrations import version_tuple
from sluice.errors import ValidationError
from sluice.search.ranking import rank
from sluice.vectors import store
from sluice.vectors.names import validate_collection_name
from sluice.vectors.search import BaseScope, find_candidates


def unit(v: list[float]) -> list[float]:
    a = np.asarray(v, dtype=np.float32)
    return (a / np.linalg.norm(a)).tolist()


def rows(doc: uuid.UUID, kb: uuid.UUID, texts: list[str], vecs: list[list[float]]) -> list[store.ChunkRow]:
    return [store.ChunkRow(document_id=doc, kb_id=kb, org_id=None, chunk_index=i, content=t, embedding=v,
                           filename="f.txt") for i, (t, v) in enumerate(zip(texts, vecs, strict=True))]


def test_table_and_indexes_are_created_once(conn):
    store.ensure_table(conn, "handbook", 3)
    store.ensure_table(conn, "handbook", 3)
    idx = {r["indexname"]: r["indexdef"] for r in conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'rag_handbook'")}
    version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()["extversion"]
    # pgvector >= 0.7 indexes half-precision copies of the vectors (bench/README.md: the same recall, half the size)
    ops = ("(((embedding)::halfvec(3)) halfvec_cosine_ops)" if version_tuple(version) >= (0, 7)
           else "(embedding vector_cosine_ops)")
    assert idx["rag_handbook_embedding_idx"].endswith("USING hnsw " + ops)
    assert "gin" in idx["rag_handbook_tsv_idx"]
    for name in ("spath", "fname", "chash"):
        assert "hash" in idx[f"rag_handbook_{name}_idx"]
    assert "btree" in idx["rag_handbook_kb_idx"] and "btree" in idx["rag_handbook_doc_idx"]


def test_copy_write_and_scoped_hybrid_search(conn):
    kb_a, kb_b, doc = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    store.ensure_table(conn, "notes", 3)
    texts = ["penalty clause for late delivery", "holiday schedule", "penalty clause for late delivery"]
    store.insert_chunks(conn, "notes", rows(doc, kb_a, texts, [unit([1, 0, 0]), unit([0, 1, 0]), unit([1, .1, 0])]))
    store.insert_chunks(conn, "notes", rows(uuid.uuid4(), kb_b, ["secret of tenant b"], [unit([1, 0, 0])]))
    assert store.count_chunks(conn, "notes") == 4 and store.count_chunks(conn, "notes", doc) == 3

    found, _ = find_candidates(conn, "notes", vector=unit([1, 0, 0]), text="penalty clause",
                                 scope=[BaseScope(kb_a, None)], limit=8)
    assert {c.kb_id for c in found} == {kb_a}
    # the score is the full-precision cosine, whatever the index stores
    assert found[0].vec_score == pytest.approx(1.0, abs=1e-6)
    assert found[0].text_score > 0
    ranked = rank(found, top_k=4)
    # the duplicate text is dropped, the unrelated chunk falls under the gate
    assert [c.content for c in ranked] == ["penalty clause for late delivery"]


def test_delete_document_chunks(conn):
    doc = uuid.uuid4()
    store.ensure_table(conn, "gone", 3)
    store.insert_chunks(conn, "gone", rows(doc, uuid.uuid4(), ["a", "b"], [unit([1, 0, 0])] * 2))
    assert store.delete_document_chunks(conn, "gone", doc) == 2
    assert store.count_chunks(conn, "gone") == 0


@pytest.mark.parametrize("name", ["Handbook", "foo-bar", "2024_reports", "a" * 46, "all", "documents",
                                  "knowledge_bases", "", "with space", "quo'te"])
def test_refused_collection_names(name):
    with pytest.raises(ValidationError) as err:
        validate_collection_name(name)
    assert "collection_name" in err.value.details["fields"]


@pytest.mark.parametrize("name", ["handbook", "_private", "a" * 45, "documents_archive", "all_hands"])
def test_accepted_collection_names(name):
    assert validate_collection_name(name) == name
