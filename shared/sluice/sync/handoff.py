"""Handing a fetched file to the ordinary pipeline: its ``documents`` row and this source's claim
are committed first (R-DOC-1), then the bytes are written under ``rag/`` with SSE-KMS, and the S3
event runs parse, chunk and embed as for any upload.

A replacement names what it replaces (``replaces_document_id``); the embed stage retires that
document in the transaction that stores the new one, so a search finds the old version until the
new one is searchable, and still finds it when the new one fails (insert before delete, R-VEC-3).

Into a private pool, a new row counts against the pool's cap and its owner's upload limits
(``sluice.admission.admit``): the source reads for the owner.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from sluice.admission import admit, pool_owners
from sluice.db import document_claims as claims
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db.documents import Document
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.db.sync_runs import RunFile
from sluice.db.sync_sources import SyncSource
from sluice.errors import SluiceError
from sluice.storage import display_name, rag_key
from sluice.sync.context import SyncContext

log = logging.getLogger("sluice.sync")


class HandOffRefused(Exception):
    """The file cannot be handed over now; the message is the sentence its row records."""


@dataclass(frozen=True)
class HandedOff:
    document: Document
    attached: bool  # an ingestion of the same object already running was joined, not repeated


def hand_off(ctx: SyncContext, source: SyncSource, kb: KnowledgeBase, file: RunFile, data: bytes,
             content_hash: str, replaces: Document | None) -> HandedOff:
    key = rag_key(kb.collection_name, file.name)
    try:
        with ctx.uow() as conn:
            if kb_repo.get(conn, kb.id, lock="share") is None:
                raise HandOffRefused("The knowledge base was deleted during the run.")
            if kb_repo.teardown_reserved(conn, kb.collection_name):
                raise HandOffRefused("The collection is being torn down; nothing is added to it.")
            doc_repo.lock_address(conn, kb.id, file.source_path)
            running = next((d for d in doc_repo.by_address(conn, kb.id, file.source_path)
                            if d.status == "processing" and d.content_hash == content_hash), None)
            if running is not None:
                claims.claim(conn, source.id, running.id, file.source_path, file.etag, file.size)
                return HandedOff(running, attached=True)
            # A private pool's cap and its owner's limits (R-ACC-5).
            admit(conn, pool_owners(kb), 1, ctx.settings, via="sync")
            doc = doc_repo.insert(
                conn, id=uuid.uuid4(), kb_id=kb.id, org_id=kb.org_id, collection_name=kb.collection_name,
                filename=display_name(file.name), filesize=len(data), storage_path=key, source="sync",
                source_path=file.source_path, source_etag=file.etag, content_hash=content_hash,
                organizational_unit=source.organizational_unit, uploaded_by=f"sync:{source.id}",
                replaces_document_id=replaces.id if replaces is not None else None,
            )
            claims.claim(conn, source.id, doc.id, file.source_path, file.etag, file.size)
    except SluiceError as exc:
        raise HandOffRefused(exc.message) from exc
    try:
        ctx.store.put(key, data, metadata={"document-id": str(doc.id)})
    except Exception as exc:
        log.exception("storing a synced file failed", extra={"document_id": str(doc.id)})
        # No object, so no pipeline: the row (and the claim with it) goes, and the next run, finding
        # nothing at the address, tries again. A failed row would be remembered as a failure instead.
        with ctx.uow() as conn:
            doc_repo.delete(conn, doc.id)
        raise HandOffRefused("The file could not be stored; the next run tries again.") from exc
    return HandedOff(doc, attached=False)
