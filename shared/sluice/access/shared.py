"""Documents shared into several users' private pools (R-ACC-6, seed 003 "Specific users").

A member with ``collections:edit`` in an organization shares a document with
users of that organization. It is stored, parsed and embedded once, filed in the
organization's *recipients base* (scope ``recipients``: created on the first share,
embedding with the deployment's default, read by nobody as a whole) and reached
per document through ``document_recipients``:

* a recipient reads it (status, text, file, search) while their token's
  organization is the document's; anybody else gets the answer an absent id gets;
* a recipient's delete strips only their row; the row, the chunks and the objects
  go with the last recipient;
* the sharer (its uploader, still an editor of the organization) may revoke a
  recipient or delete it for everyone, but does not read it unless listed.

Nothing here knows an organization's user directory (identity is the token), so a
recipient id naming a user of another organization is inert: the recipient check
also requires the reader's organization to be the sharer's.
"""

from __future__ import annotations

from collections.abc import Sequence

from sluice.access.bases import DefaultEmbedding, claim_name, derive_collection_name
from sluice.access.resolve import RECIPIENTS
from sluice.chunking import validate_collection_config
from sluice.db import knowledge_bases as kb_repo
from sluice.db import recipients as recipient_repo
from sluice.db.connection import Connection
from sluice.db.documents import Document
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.embedding import find_model
from sluice.errors import CollectionNotFoundError, ConflictError, ValidationError
from sluice.identity import Principal
from sluice.vectors.names import validate_collection_name
from sluice.vectors.search import BaseScope

MAX_RECIPIENT_ID_CHARS = 200
_BASE_NAME = "Shared private documents"


def check_sharer(p: Principal) -> str:
    """The caller's organization, if they may share into its members' pools (``collections:edit``)."""
    if p.org_id is None or not p.can("collections:edit"):
        raise ValidationError(
            "Only a member with collections:edit in an organization shares documents into private pools",
            fields={"recipients": "Sharing needs an organization and collections:edit in it."},
        )
    return p.org_id


def check_recipients(raw: Sequence[str], most: int) -> list[str]:
    """The recipients as given, each once, in order; refused with the field named when unusable."""
    cleaned = [r.strip() if isinstance(r, str) else r for r in raw]
    bad = [r for r in cleaned if not isinstance(r, str) or not r or len(r) > MAX_RECIPIENT_ID_CHARS
           or any(ord(ch) < 32 for ch in r)]
    if bad:
        raise ValidationError("Recipients are user ids", fields={
            "recipients": f"Each recipient is a user id of 1 to {MAX_RECIPIENT_ID_CHARS} characters."})
    unique = list(dict.fromkeys(cleaned))
    if not unique:
        raise ValidationError("Name at least one recipient",
                              fields={"recipients": "Name at least one user id."})
    if len(unique) > most:
        raise ValidationError(f"A document is shared with at most {most} users at once",
                              fields={"recipients": f"{len(unique)} recipients; at most {most}."})
    return unique


def recipients_base(conn: Connection, org_id: str, created_by: str, default: DefaultEmbedding) -> KnowledgeBase:
    """The organization's recipients base, created on its first share with the deployment's default embedding.

    Its collection name is random and claimed like any derived name, so nobody can
    prepare a table (and an embedding endpoint) for it ahead of time.
    """
    found = _existing(conn, org_id)
    if found is not None:
        return found
    entry = find_model(default.provider, default.model)
    config = validate_collection_config({}, max_input_tokens=entry.max_input_tokens)
    sharer = Principal(user_id=created_by, org_id=org_id, permissions=frozenset(), is_app_admin=False)
    for attempt in range(3):
        name = validate_collection_name(derive_collection_name("shared pool"))
        try:
            if not claim_name(conn, sharer, name):
                break
        except ConflictError:
            pass
        if attempt == 2:
            raise ConflictError("No free collection name was found for the shared pool; try again.")
    kb_repo.insert_recipients_base(
        conn, name=_BASE_NAME, collection_name=name, org_id=org_id,
        description="Documents shared into members' private pools; each is read by its recipients only.",
        model=entry, ingestion_config=config.model_dump(exclude_none=True), created_by=created_by)
    created = _existing(conn, org_id)
    assert created is not None
    return created


def _existing(conn: Connection, org_id: str) -> KnowledgeBase | None:
    kb_id = kb_repo.recipients_base_id(conn, org_id)
    return kb_repo.get(conn, kb_id) if kb_id is not None else None


def is_shared(conn: Connection, doc: Document) -> bool:
    """Whether the document is filed in a recipients base."""
    if doc.kb_id is None:
        return False
    kb = kb_repo.get(conn, doc.kb_id)
    return kb is not None and kb.scope == RECIPIENTS


def check_recipient(conn: Connection, p: Principal, doc: Document) -> None:
    """The caller reads a shared document only as its recipient, within its organization."""
    if p.org_id is None or doc.org_id != p.org_id or not recipient_repo.is_recipient(conn, doc.id, p.user_id,
                                                                                       p.org_id):
        raise CollectionNotFoundError()


def check_manager(p: Principal, doc: Document) -> None:
    """The sharer manages a shared document (revoke, delete for all) while an editor of its organization."""
    if (p.org_id is None or doc.org_id != p.org_id or doc.uploaded_by != p.user_id
            or not p.can("collections:edit")):
        raise CollectionNotFoundError()


def search_scope(p: Principal, bases: Sequence[KnowledgeBase]) -> list[BaseScope]:
    """The scope the vector query applies: whole bases, and a recipients base only as the caller's share."""
    return [BaseScope(b.id, b.org_id, recipient=p.user_id if b.scope == RECIPIENTS else None) for b in bases]
