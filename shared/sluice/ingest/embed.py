"""The embed stage: the chunks embedded in provider batches, then written with the document's
completion in one transaction (R-EMB-3, R-VEC-3, R-DOC-6, R-TD-3)."""

from __future__ import annotations

import uuid

from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db import name_locks
from sluice.db import teardowns as td_repo
from sluice.db.documents import Document
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.errors import CollectionTornDownError, EmbeddingCallError, EmbeddingError
from sluice.ingest.artifacts import ChunkedText, read_chunks
from sluice.ingest.failures import is_refusal
from sluice.ingest.retire import forget_objects, retire_replaced
from sluice.ingest.runner import StageContext, StaleEvent, run_stage, step
from sluice.vectors import store as vector_store
from sluice.vectors.store import ChunkRow


def embed_document(ctx: StageContext, doc_id: uuid.UUID, attempt: int) -> None:
    run_stage(ctx, doc_id, attempt, "embedding", lambda doc: _embed(ctx, doc, attempt), is_final=_is_final)


def _is_final(exc: BaseException) -> bool:
    """A refusal fails the document now; a transient provider failure goes back to the queue."""
    if isinstance(exc, EmbeddingCallError):
        return not exc.transient
    return is_refusal(exc) or isinstance(exc, EmbeddingError)


def _embed(ctx: StageContext, doc: Document, attempt: int) -> None:
    chunked = read_chunks(ctx.store, doc.id, attempt)
    with ctx.uow() as conn:
        kb = kb_repo.get(conn, doc.kb_id) if doc.kb_id else None
    if kb is None:
        raise StaleEvent(str(doc.id))
    vectors = _embed_with_progress(ctx, doc.id, attempt, kb, [c.content for c in chunked.chunks])
    rows = _rows(doc, kb, chunked, vectors)
    with step("storing"):
        retired = store_chunks(ctx, doc.id, attempt, kb, rows)
    for row in retired or []:
        forget_objects(ctx.store, row, keep=doc.storage_path)


def _embed_with_progress(ctx: StageContext, doc_id: uuid.UUID, attempt: int, kb: KnowledgeBase,
                         texts: list[str]) -> list[list[float]]:
    embedder = ctx.embedder_for(kb.embedding_spec())
    size = max(1, ctx.settings.embed_batch_size)
    batches = [texts[i:i + size] for i in range(0, len(texts), size)]
    out: list[list[float]] = []
    for n, batch in enumerate(batches, start=1):
        out.extend(embedder.embed_documents(batch))
        with ctx.uow() as conn:
            if not doc_repo.update(conn, doc_id, expect_attempt=attempt, progress_done=n,
                                   progress_total=len(batches)):
                raise StaleEvent(str(doc_id))
    return out


def _rows(doc: Document, kb: KnowledgeBase, chunked: ChunkedText, vectors: list[list[float]]) -> list[ChunkRow]:
    """Each chunk as stored, with the metadata of R-CHUNK-3."""
    return [
        ChunkRow(
            document_id=doc.id, kb_id=kb.id, org_id=kb.org_id, chunk_index=c.index, content=c.content,
            embedding=v, page_start=c.page_start, page_end=c.page_end, source=doc.source,
            document_type=doc.document_type, organizational_unit=doc.organizational_unit,
            document_date=doc.document_date, source_path=doc.source_path, filename=doc.filename,
            content_hash=doc.content_hash,
            metadata={"mime": chunked.mime, "char_start": c.char_start, "char_end": c.char_end,
                      "strategy": chunked.strategy},
        )
        for c, v in zip(chunked.chunks, vectors, strict=True)
    ]


def store_chunks(ctx: StageContext, doc_id: uuid.UUID, attempt: int, kb: KnowledgeBase,
                 rows: list[ChunkRow]) -> list[Document] | None:
    """Write a document's chunks, retire what it replaces and mark it done, in one transaction.

    The collection name is held shared, then the base row share-locked (R-TD-3): a
    concurrent delete of the base waits for this commit, or this write finds the
    base gone; a create on the name waits briefly for it. The document row is
    locked next: a document deleted meanwhile gets no chunks (R-DOC-6). A teardown
    that reserved the name for this base (or to drop its table) refuses the write
    (R-TD-1). New chunks are inserted before old ones are deleted (R-VEC-3).
    Returns the retired rows, whose stored objects the caller deletes after the
    commit, or None when nothing was written.
    """
    with ctx.uow() as conn:
        name_locks.hold_for_write(conn, kb.collection_name)
        if kb_repo.get(conn, kb.id, lock="share") is None:
            return None
        doc = doc_repo.get(conn, doc_id, for_update=True)
        if doc is None or not doc.is_current(attempt):
            return None
        if td_repo.reservation_blocks_write(conn, kb.collection_name, kb.id):
            raise CollectionTornDownError(
                "The collection was being torn down when this document was indexed, so nothing was written; "
                "upload it again once the teardown is done.")
        vector_store.ensure_table(conn, kb.collection_name, kb.embedding_dim, language=kb.text_search_language)
        vector_store.replace_document_chunks(conn, kb.collection_name, doc_id, rows)
        retired = retire_replaced(conn, doc)
        doc_repo.mark_done(conn, doc_id, chunk_count=len(rows), vector_document_id=doc_id)
    return retired
