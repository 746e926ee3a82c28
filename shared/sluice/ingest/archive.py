"""An archive in a knowledge base becomes one document per supported member (R-ARC-2).

Each member's row is committed before its object is written, like an upload's;
the object's own event then parses it. The archive's row is done once every
member is handed over: its text is the list of members, skipped ones with why.
"""

from __future__ import annotations

import uuid

from sluice.access.resolve import RECIPIENTS
from sluice.admission import admit_members, pool_owners
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db import recipients as recipient_repo
from sluice.db import teardowns as td_repo
from sluice.db.documents import Document
from sluice.ingest.retire import forget_objects, retire_absent_members, retire_replaced
from sluice.ingest.runner import StageContext, StaleEvent
from sluice.parsing import FileKind, check_archive, iter_archive_members
from sluice.parsing.archives import member_source_path
from sluice.storage import content_key, display_name, rag_key

# Members get ids derived from the archive row, its attempt and the member path,
# so a redelivered unpack opens the same rows and writes the same keys.
_MEMBER_NAMESPACE = uuid.UUID("6f1d3c52-5d0e-4c1b-9a57-3f2f0d7e9b11")


def member_id(archive_id: uuid.UUID, attempt: int, member_path: str) -> uuid.UUID:
    return uuid.uuid5(_MEMBER_NAMESPACE, f"{archive_id}:{attempt}:{member_path}")


def unpack_archive(ctx: StageContext, doc: Document, attempt: int, data: bytes, kind: FileKind) -> None:
    members = check_archive(data, kind, ctx.budget)  # a presigned archive was never checked at upload
    child_ids = [member_id(doc.id, attempt, m.path) for m in members
                 if m.kind is not None and m.skipped_reason is None]
    with ctx.uow() as conn:
        kb = kb_repo.get(conn, doc.kb_id) if doc.kb_id else None
        if kb is None:
            return
        current = doc_repo.get(conn, doc.id, for_update=True)
        if current is None or not current.is_current(attempt):
            raise StaleEvent(str(doc.id))  # deleted (a teardown) or moved on: nothing is filed after it
        # A redelivered unpack finds some members already written: only the new ones need room.
        new_members = len(child_ids) - doc_repo.count_existing(conn, child_ids)
        shared = kb.scope == RECIPIENTS
        # R-ACC-6: a shared archive's members are shared as it is, and need room in every pool. The
        # members its upload did not count (presigned, synced) count against the limits now (issue 37).
        owners = recipient_repo.of(conn, doc.id) if shared else pool_owners(kb)
        counted = admit_members(conn, owners, len(child_ids), new_members, current.members_admitted,
                                ctx.settings, shared=shared)
        if counted != current.members_admitted:
            doc_repo.update(conn, doc.id, expect_attempt=attempt, members_admitted=counted)
    archive_path = doc.source_path or doc.filename
    unpacked: set[str] = set()
    for member, content in iter_archive_members(data, kind, ctx.budget):
        child_id = member_id(doc.id, attempt, member.path)
        name = display_name(member.path)
        key = rag_key(kb.collection_name, name, object_id=child_id)
        source_path = member_source_path(archive_path, member.path)
        unpacked.add(source_path)
        with ctx.uow() as conn:
            # Under the base's share lock (R-TD-3): a teardown that deleted the archive's row, or
            # reserved the name against this base, gets no member filed after it.
            if (kb_repo.get(conn, kb.id, lock="share") is None or doc_repo.get(conn, doc.id) is None
                    or td_repo.reservation_blocks_write(conn, kb.collection_name, kb.id)):
                raise StaleEvent(str(doc.id))
            doc_repo.insert_if_absent(
                conn, id=child_id, kb_id=kb.id, org_id=kb.org_id, collection_name=kb.collection_name,
                filename=name, filesize=len(content), storage_path=key, source=doc.source,
                source_path=source_path,
                organizational_unit=doc.organizational_unit, document_type=doc.document_type,
                document_date=doc.document_date, uploaded_by=doc.uploaded_by,
                ingestion_override=doc.ingestion_override,
            )
            if shared:
                recipient_repo.copy(conn, doc.id, child_id)
        ctx.store.put(key, content, content_type=member.kind.mime if member.kind else "application/octet-stream",
                      metadata={"document-id": str(child_id)}, only_if_absent=True)
    listing = [f"{m.path}" + (f" (skipped: {m.skipped_reason})" if m.skipped_reason else "") for m in members]
    ctx.store.put(content_key(doc.id), "\n".join(listing).encode(), content_type="text/plain; charset=utf-8")
    with ctx.uow() as conn:
        current = doc_repo.get(conn, doc.id, for_update=True)
        if current is None or not current.is_current(attempt):
            return
        retired = retire_replaced(conn, current)
        retired += retire_absent_members(conn, current, retired, unpacked)
        doc_repo.mark_done(conn, doc.id, chunk_count=0, vector_document_id=None)
    for row in retired:
        forget_objects(ctx.store, row, keep=doc.storage_path)
