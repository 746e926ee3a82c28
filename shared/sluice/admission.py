"""Whether documents may enter: the indexing kill switch, and a private pool's cap and rate limits
(R-ACC-5, R-ACC-6). Every upload, share, sync and unpack asks here, and nowhere else.

A user's personal bases are their private pool, and so are the documents shared
with them. The pool holds at most ``PRIVATE_DOC_CAP`` documents, counted across
every personal base the owner has and every document shared with them (so a
second base is not a way round it). What enters a private pool is limited per
owner to ``UPLOAD_RATE_PER_MINUTE`` a minute and ``UPLOAD_RATE_PER_DAY`` a day
over sliding windows. Organization and app-wide bases are curated collections
and are not throttled (they are no one's pool: ``pool_owners`` names nobody).
Listing and deleting are never limited: only the paths that add documents call
this module.

``admit`` is the one check, for one pool or many at once: an upload into a personal
base is its owner's, a shared upload is each recipient's, all or nothing; a sync into a
private pool counts against its owner as their upload would; an archive's members are
checked where it is unpacked (``admit_members``): against the cap again, and against the limits for the
members its upload did not count (a presigned or synced archive was counted as one document).

The checks run under the owners' quota row locks, inside the transaction that
writes the document row: concurrent requests queue on the lock, each sees the
others' committed rows, and a request refused later in that transaction (or
rolled back) leaves no count behind.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sluice.config import OcrSettings, PoolSettings
from sluice.db import ocr_usage, upload_quotas
from sluice.db.connection import Connection
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.errors import ConflictError, DocCapReachedError, IndexingPausedError, RateLimitError, ValidationError

log = logging.getLogger("sluice.admission")

MINUTE = timedelta(minutes=1)
DAY = timedelta(days=1)

ParameterReader = Callable[..., str | None]

# How the documents arrive: a refusal's words differ, and a retry is checked against the limits only (its
# document is in the pool already). An archive's members at unpack go through ``admit_members``.
Via = Literal["upload", "sync", "retry"]

_ON = frozenset({"true", "1", "yes", "on", "paused"})


# --- the kill switch ----------------------------------------------------------------------------

def indexing_paused(settings: PoolSettings, read_parameter: ParameterReader | None = None) -> bool:
    """The kill switch: the ``INDEXING_PAUSED`` setting, or on AWS its SSM parameter (short cache)."""
    if settings.indexing_paused:
        return True
    name = settings.indexing_paused_parameter
    if not name:
        return False
    if read_parameter is None:
        raise ValueError("INDEXING_PAUSED_PARAMETER is set, and nothing was given to read it with")
    try:
        value = read_parameter(name, max_age=settings.indexing_paused_cache_seconds)
    except Exception:
        # A switch that cannot be read errs toward stopping uploads; search is unaffected.
        log.exception("the indexing kill switch could not be read; treating indexing as paused")
        return True
    return value is not None and value.strip().lower() in _ON


def check_indexing_open(settings: PoolSettings, read_parameter: ParameterReader | None = None) -> None:
    if indexing_paused(settings, read_parameter):
        raise IndexingPausedError("Indexing is paused by the operator; search keeps working. Try again later.")


# --- private pools ------------------------------------------------------------------------------

def pool_owners(kb: KnowledgeBase) -> list[str]:
    """Whose private pool a base is: a personal base's owner's; nobody's for any other base."""
    return [kb.owner_id] if kb.scope == "personal" and kb.owner_id is not None else []


@dataclass(frozen=True)
class PoolLimits:
    """What ``admit`` holds a user's private pool to, and how much of its cap is taken (the console shows it)."""

    cap: int
    held: int
    per_minute: int
    per_day: int
    max_recipients: int


def pool_limits(conn: Connection, user_id: str, settings: PoolSettings) -> PoolLimits:
    return PoolLimits(settings.private_doc_cap, upload_quotas.private_pool_documents(conn, user_id),
                      settings.upload_rate_per_minute, settings.upload_rate_per_day, settings.pool_max_recipients)


def admit(conn: Connection, owners: Sequence[str], documents: int, settings: PoolSettings, *,
          shared: bool = False, via: Via = "upload") -> None:
    """Refuse ``documents`` new documents unless every owner's private pool has room and budget for
    them; otherwise count them for each owner.

    ``owners`` are the pools the documents enter: one owner's (``pool_owners`` of the base), or with
    ``shared`` the recipients of a share (R-ACC-6), all or nothing: one recipient who is full (or over a
    limit) refuses it for everyone, and the refusal names each recipient who is, so the sharer can drop
    them and send again. No owners (a curated base) admits anything. ``documents`` is how many documents
    the upload becomes: an archive is itself one, and each supported member another (R-ARC-2), so a zip
    cannot carry more into a pool than its cap and limits allow. The quota rows are locked in a fixed
    order, so two requests racing for one user queue.
    """
    if not owners or documents <= 0:
        return
    now = upload_quotas.lock_users(conn, owners)
    if via != "retry":
        _check_room(conn, owners, documents, settings, shared=shared, unpacking=False)
    _check_rates(conn, owners, documents, documents, settings, now, shared=shared, syncing=via == "sync")


def admit_members(conn: Connection, owners: Sequence[str], members: int, new_rows: int, counted: int,
                  settings: PoolSettings, *, shared: bool = False) -> int:
    """An archive unpacked in the pipeline (R-ARC-2): its ``members`` enter the owners' pools.

    The cap is checked for the ``new_rows`` not yet written (a redelivery finds some written). The
    limits count every member as a direct upload's members are counted (issue 37): the archive and its
    members are one upload of ``members + 1`` documents, refused in the same words, and the members not
    ``counted`` yet (a direct upload counted them when it was accepted; a presigned or synced archive was
    counted as one) are recorded now. Returns how many members are counted after this, for the row.
    """
    if not owners or members <= 0:
        return counted
    now = upload_quotas.lock_users(conn, owners)
    if new_rows > 0:
        _check_room(conn, owners, new_rows, settings, shared=shared, unpacking=True)
    uncounted = members - counted
    if uncounted > 0:
        _check_rates(conn, owners, members + 1, uncounted, settings, now, shared=shared, syncing=False)
    return max(members, counted)


def _check_room(conn: Connection, owners: Sequence[str], documents: int, settings: PoolSettings, *,
                shared: bool, unpacking: bool) -> None:
    full = {u: held for u in owners
            if (held := upload_quotas.private_pool_documents(conn, u)) + documents > settings.private_doc_cap}
    if full:
        raise _no_room(full, documents, settings, shared=shared, unpacking=unpacking)


def _check_rates(conn: Connection, owners: Sequence[str], documents: int, uncounted: int, settings: PoolSettings,
                 now: datetime, *, shared: bool, syncing: bool) -> None:
    """Refuse an upload of ``documents`` unless its ``uncounted`` ones fit every owner's windows; then
    record those."""
    for limit, per in ((settings.upload_rate_per_minute, "a minute"), (settings.upload_rate_per_day, "a day")):
        if 0 < limit < documents:
            # No wait makes it fit: say so instead of a Retry-After that would only be waited out in vain.
            raise ValidationError(
                f"This upload holds {documents} documents, and a private {'pool' if shared else 'knowledge base'} "
                f"takes at most {limit} {per}; split it into smaller archives.",
                fields={"file": f"Holds {documents} documents; at most {limit} may be uploaded {per}."},
            )
    waits = {u: wait for u in owners if (wait := _rate_wait(conn, u, uncounted, settings, now)) is not None}
    if waits:
        raise _too_many(waits, settings, shared=shared, syncing=syncing)
    for user in owners:
        upload_quotas.record(conn, user, now, keep=DAY, count=uncounted)


# --- retries (R-DOC-5) --------------------------------------------------------------------------

def admit_retry(conn: Connection, owners: Sequence[str], retries: int, settings: PoolSettings,
                read_parameter: ParameterReader | None = None) -> None:
    """A failed document's retry runs the whole pipeline again, OCR included, so it is an upload: the
    kill switch stops it (503), it counts against the owners' limits as one document (429, the
    uploads' sentence; not the cap, the document is in the pool already), and a document is retried at
    most ``DOCUMENT_MAX_RETRIES`` times (409). ``retries`` is how many it had."""
    check_indexing_open(settings, read_parameter)
    cap = settings.document_max_retries
    if retries >= cap:
        raise ConflictError(
            f"This document was retried {retries} times, the most a document may be (DOCUMENT_MAX_RETRIES); "
            "upload it again instead.",
            details={"retries": retries, "max_retries": cap},
        )
    admit(conn, owners, 1, settings, via="retry")


def _no_room(full: dict[str, int], documents: int, settings: PoolSettings, *, shared: bool, unpacking: bool
             ) -> DocCapReachedError:
    cap = settings.private_doc_cap
    names = list(full)
    if shared and unpacking:
        return DocCapReachedError(
            f"This archive would add {documents} documents to the private pools of {', '.join(names)}, which "
            f"have no room for them (at most {cap} each).",
            details={"cap": cap, "requested": documents, "recipients": names},
        )
    if shared:
        return DocCapReachedError(
            f"The private pools of {', '.join(names)} have no room for "
            f"{'this document' if documents == 1 else f'{documents} documents'} (at most "
            f"{cap} each); nothing was shared. Remove them from the recipients or ask "
            "them to delete a document.",
            details={"cap": cap, "requested": documents, "recipients": names, "held": full},
            fields={"recipients": f"Full: {', '.join(names)}."},
        )
    (held,) = full.values()
    room = max(0, cap - held)
    if documents == 1:
        message = (f"This private knowledge base already holds {held} documents, the most a private pool "
                   f"may hold is {cap}; delete one to upload another.")
    else:
        message = (f"This upload would add {documents} documents, but the private knowledge base has room for "
                   f"{room} more (it holds {held} of {cap}); delete some documents or "
                   "upload fewer at once.")
    return DocCapReachedError(message, details={"cap": cap, "held": held, "room": room, "requested": documents})


def _too_many(waits: dict[str, float], settings: PoolSettings, *, shared: bool, syncing: bool) -> RateLimitError:
    retry_after = max(1, math.ceil(max(waits.values())))
    if syncing:
        return RateLimitError(sync_deferral(settings), retry_after=retry_after)
    if not shared:
        return RateLimitError(
            f"Too many uploads: a user may upload {settings.upload_rate_per_minute} documents a minute and "
            f"{settings.upload_rate_per_day} a day to a private knowledge base. Try again later.",
            retry_after=retry_after,
        )
    error = RateLimitError(
        f"Too many uploads into the private pools of {', '.join(waits)}: a private pool takes "
        f"{settings.upload_rate_per_minute} documents a minute and {settings.upload_rate_per_day} a day. "
        "Nothing was shared; try again later.",
        retry_after=retry_after,
    )
    error.details["recipients"] = list(waits)
    return error


def _retry_after(accepted: list[datetime], limit: int, wanted: int, window: timedelta, now: datetime
                 ) -> float | None:
    """Seconds until ``wanted`` more uploads fit the window, or ``None`` if they fit now."""
    if len(accepted) + wanted <= limit:
        return None
    # Enough of the oldest uploads in the window must leave it: the last of them frees the room.
    leaving = len(accepted) + wanted - limit
    if leaving > len(accepted):  # a limit of 0 (uploads off), or more wanted than the window ever holds
        return window.total_seconds()
    return (accepted[leaving - 1] + window - now).total_seconds()


def _rate_wait(conn: Connection, user_id: str, documents: int, settings: PoolSettings, now: datetime) -> float | None:
    """Seconds until ``documents`` more of the user's uploads fit both windows, or None if they fit now."""
    today = upload_quotas.accepted_since(conn, user_id, now - DAY)
    this_minute = [t for t in today if t > now - MINUTE]
    waits = [w for w in (
        _retry_after(this_minute, settings.upload_rate_per_minute, documents, MINUTE, now),
        _retry_after(today, settings.upload_rate_per_day, documents, DAY, now),
    ) if w is not None]
    return max(waits) if waits else None


# --- syncs into a private pool ------------------------------------------------------------------
# A source of a personal base reads for the base's owner: each file it adds counts against the pool's
# cap and the owner's upload limits, as if the owner had uploaded it (``admit(..., via="sync")``). A
# file the limits defer is not fetched and gets no row (so nothing remembers it as a failure): the run
# reports it with this sentence, and the next run, finding nothing at its address, takes it.

def sync_deferral(settings: PoolSettings) -> str:
    return (f"Deferred: a private knowledge base takes at most {settings.upload_rate_per_minute} documents a "
            f"minute and {settings.upload_rate_per_day} a day from its owner's uploads and syncs together, and "
            "that is used up for now. The file was not fetched; the next run takes it.")


def sync_deferred(conn: Connection, kb: KnowledgeBase, settings: PoolSettings) -> str | None:
    """Before a download: the deferral sentence if the owner's limits have no room for one more file now."""
    owners = pool_owners(kb)
    if not owners:
        return None
    now = upload_quotas.clock(conn)
    return sync_deferral(settings) if _rate_wait(conn, owners[0], 1, settings, now) is not None else None


# --- OCR spend (issue 37) -----------------------------------------------------------------------
# Every page OCR reads is a Textract call (or a Tesseract page of CPU), whoever's base it is in: org
# and app bases too. A tenant (an organization, or a user outside one) gets OCR_PAGES_PER_TENANT_PER_DAY
# pages a UTC day. A parse reads what is left before it starts and reads at most that many pages
# (sluice.parsing.ocr ``plan_ocr`` says so in a note), then counts what it recognised: documents parsed
# at the same moment may together pass the budget by what each found left, never more.

def ocr_tenant(org_id: str | None, user_id: str | None, kb_id: object) -> str:
    """Whose OCR budget a document spends: its organization's, else its uploader's, else its base's."""
    if org_id:
        return f"org:{org_id}"
    return f"user:{user_id}" if user_id else f"base:{kb_id}"


def ocr_pages_left(conn: Connection, tenant: str, settings: OcrSettings) -> int | None:
    """Pages the tenant may still have OCR'd today; None where the deployment sets no budget."""
    budget = settings.ocr_pages_per_tenant_per_day
    if budget <= 0:
        return None
    return max(0, budget - ocr_usage.pages_today(conn, tenant))


def count_ocr_pages(conn: Connection, tenant: str, pages: int) -> None:
    if pages > 0:
        ocr_usage.add(conn, tenant, pages)
