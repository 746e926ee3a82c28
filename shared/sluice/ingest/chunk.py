"""The chunk stage: the parsed text split with the collection's plan (and the upload's override)
into the chunks artifact (R-CHUNK-1, R-CHUNK-2)."""

from __future__ import annotations

import uuid

from sluice.chunking import IngestionConfig, merge_override, split_text
from sluice.db import knowledge_bases as kb_repo
from sluice.db.documents import Document
from sluice.errors import TooManyChunksError
from sluice.ingest.artifacts import read_parsed, write_chunks
from sluice.ingest.runner import StageContext, StaleEvent, run_stage
from sluice.parsing.sparse import too_sparse


def chunk_document(ctx: StageContext, doc_id: uuid.UUID, attempt: int) -> None:
    run_stage(ctx, doc_id, attempt, "chunking", lambda doc: _chunk(ctx, doc, attempt))


def _chunk(ctx: StageContext, doc: Document, attempt: int) -> None:
    parsed = read_parsed(ctx.store, doc.id, attempt)
    with ctx.uow() as conn:
        kb = kb_repo.get(conn, doc.kb_id) if doc.kb_id else None
    if kb is None:
        raise StaleEvent(str(doc.id))
    plan = merge_override(IngestionConfig.model_validate(kb.ingestion_config), doc.ingestion_override,
                          max_input_tokens=kb.catalog_model().max_input_tokens)
    chunks = split_text(parsed.text, plan, pages=parsed.pages)
    if not chunks:
        raise too_sparse(parsed.word_count)
    if len(chunks) > ctx.settings.max_chunks_per_document:
        raise TooManyChunksError(
            f"This document would be split into {len(chunks):,} chunks, more than the "
            f"{ctx.settings.max_chunks_per_document:,} one document may have; raise the chunk size "
            f"(now {plan.chunk_size}) or split the document."
        )
    write_chunks(ctx.store, doc.id, attempt, parsed.mime, plan, chunks)
