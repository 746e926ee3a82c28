"""Documents shared into several users' private pools (R-ACC-6, seed 003 "Specific users").

A member with ``collections:edit`` in an organization shares a document with
users of that organization. It is stored, parsed and embedded once, filed in the
organization's *recipients base* (scope ``recipients``: created on the first share by
``sluice.bases.recipients_base``, embedding with the deployment's default, read by nobody
as a whole; a share's pools are admitted by ``sluice.admission.admit``) and reached
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

from sluice.access.resolve import RECIPIENTS
from sluice.db import knowledge_bases as kb_repo
from sluice.db import recipients as recipient_repo
from sluice.db.connection import Connection
from sluice.db.documents import Document
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.errors import CollectionNotFoundError, ValidationError
from sluice.identity import Principal
from sluice.vectors.search import BaseScope

MAX_RECIPIENT_ID_CHARS = 200


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
