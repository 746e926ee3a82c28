"""The chunk writes (R-VEC-3): COPY and 200-row executemany store the same rows; a replacement
inserts the new chunks before it deletes the old ones, in one transaction."""

from __future__ import annotations

import uuid

import numpy as np

from sluice.vectors import store


def rows(doc: uuid.UUID, n: int, tag: str) -> list[store.ChunkRow]:
    rng = np.random.default_rng(n)
    return [store.ChunkRow(document_id=doc, kb_id=doc, org_id="acme", chunk_index=i, content=f"{tag} {i}",
                           embedding=rng.standard_normal(3).astype(np.float32), page_start=i, page_end=i + 1,
                           source="upload", filename="f.txt", content_hash="h", metadata={"i": i})
            for i in range(n)]


def test_copy_and_batched_inserts_store_the_same_rows(conn):
    store.ensure_table(conn, "same", 3)
    a, b = uuid.uuid4(), uuid.uuid4()
    store.insert_chunks(conn, "same", rows(a, 450, "x"))
    store.insert_chunks_batched(conn, "same", rows(b, 450, "x"))
    cols = "chunk_index, content, embedding::text AS e, page_start, page_end, source, metadata, content_tsv::text AS t"
    got = [conn.execute(f"SELECT {cols} FROM rag_same WHERE document_id = %s ORDER BY chunk_index", (d,)).fetchall()
           for d in (a, b)]
    assert len(got[0]) == 450 and got[0] == got[1]


def test_a_replacement_inserts_before_it_deletes(conn, monkeypatch):
    doc = uuid.uuid4()
    store.ensure_table(conn, "repl", 3)
    store.replace_document_chunks(conn, "repl", doc, rows(doc, 5, "old"))
    conn.commit()
    old_ids = [r["id"] for r in conn.execute("SELECT id FROM rag_repl").fetchall()]

    order: list[str] = []
    insert = store.insert_chunks
    monkeypatch.setattr(store, "insert_chunks", lambda *a, **k: (order.append("insert"), insert(*a, **k))[1])
    execute = conn.execute

    def spy(query, *args, **kwargs):
        if "DELETE" in (query if isinstance(query, str) else query.as_string(conn)):
            order.append("delete")
        return execute(query, *args, **kwargs)

    monkeypatch.setattr(conn, "execute", spy)
    store.replace_document_chunks(conn, "repl", doc, rows(doc, 3, "new"))
    monkeypatch.setattr(conn, "execute", execute)
    conn.commit()

    assert order == ["insert", "delete"]
    found = conn.execute("SELECT id, content FROM rag_repl ORDER BY chunk_index").fetchall()
    assert [r["content"] for r in found] == ["new 0", "new 1", "new 2"]
    assert min(r["id"] for r in found) > max(old_ids)
