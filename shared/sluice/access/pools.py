"""What an upload must pass besides access: the kill switch, and a private pool's cap and rate limits (R-ACC-5).

A user's personal bases are their private pool. The pool holds at most
``PRIVATE_DOC_CAP`` documents, counted across every personal base the owner
has (so a second base is not a way round it). Uploads into a private pool are
limited per uploader to ``UPLOAD_RATE_PER_MINUTE`` a minute and
``UPLOAD_RATE_PER_DAY`` a day over sliding windows. Organization and app-wide
bases are curated collections and are not throttled. Listing and deleting are
never limited: only the upload paths call this module. A sync into a private pool
counts against its owner's cap and limits as their upload would (``admit_synced``).

Both checks run under the users' quota row locks, inside the transaction that
writes the document row: concurrent requests queue on the lock, each sees the
others' committed rows, and a request refused later in that transaction (or
rolled back) leaves no count behind.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from datetime import datetime, timedelta

from sluice.config import Settings
from sluice.db import upload_quotas
from sluice.db.connection import Connection
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.errors import DocCapReachedError, IndexingPausedError, RateLimitError, ValidationError
from sluice.identity import Principal

log = logging.getLogger("sluice.access")

MINUTE = timedelta(minutes=1)
DAY = timedelta(days=1)

ParameterReader = Callable[..., str | None]

_ON = frozenset({"true", "1", "yes", "on", "paused"})


def indexing_paused(settings: Settings, read_parameter: ParameterReader | None = None) -> bool:
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


def check_indexing_open(settings: Settings, read_parameter: ParameterReader | None = None) -> None:
    if indexing_paused(settings, read_parameter):
        raise IndexingPausedError("Indexing is paused by the operator; search keeps working. Try again later.")


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


def admit_upload(conn: Connection, p: Principal, kb: KnowledgeBase, settings: Settings,
                 documents: int = 1) -> None:
    """Refuse an upload a private pool has no room or no budget for; otherwise count it.

    ``documents`` is how many documents the upload becomes: an archive is itself
    one, and each supported member another (R-ARC-2), so a zip cannot carry more
    into a pool than its cap and limits allow.
    """
    if kb.scope != "personal" or kb.owner_id is None:
        return
    now = upload_quotas.lock_users(conn, {p.user_id, kb.owner_id})
    _check_room(conn, kb.owner_id, documents, settings)
    for limit, per in ((settings.upload_rate_per_minute, "a minute"), (settings.upload_rate_per_day, "a day")):
        if 0 < limit < documents:
            # No wait makes it fit: say so instead of a Retry-After that would only be waited out in vain.
            raise ValidationError(
                f"This upload holds {documents} documents, and a private knowledge base takes at most {limit} "
                f"{per}; split it into smaller archives.",
                fields={"file": f"Holds {documents} documents; at most {limit} may be uploaded {per}."},
            )
    wait = _rate_wait(conn, p.user_id, documents, settings, now)
    if wait is not None:
        raise RateLimitError(
            f"Too many uploads: a user may upload {settings.upload_rate_per_minute} documents a minute and "
            f"{settings.upload_rate_per_day} a day to a private knowledge base. Try again later.",
            retry_after=max(1, math.ceil(wait)),
        )
    upload_quotas.record(conn, p.user_id, now, keep=DAY, count=documents)


def _rate_wait(conn: Connection, user_id: str, documents: int, settings: Settings, now: datetime) -> float | None:
    """Seconds until ``documents`` more of the user's uploads fit both windows, or None if they fit now."""
    today = upload_quotas.accepted_since(conn, user_id, now - DAY)
    this_minute = [t for t in today if t > now - MINUTE]
    waits = [w for w in (
        _retry_after(this_minute, settings.upload_rate_per_minute, documents, MINUTE, now),
        _retry_after(today, settings.upload_rate_per_day, documents, DAY, now),
    ) if w is not None]
    return max(waits) if waits else None


# --- syncs into a private pool ----------------------------------------------------------------
# A source of a personal base reads for the base's owner: each file it adds counts against the pool's
# cap and the owner's upload limits, as if the owner had uploaded it. A file the limits defer is not
# fetched and gets no row (so nothing remembers it as a failure): the run reports it with this
# sentence, and the next run, finding nothing at its address, takes it.

def sync_deferral(settings: Settings) -> str:
    return (f"Deferred: a private knowledge base takes at most {settings.upload_rate_per_minute} documents a "
            f"minute and {settings.upload_rate_per_day} a day from its owner's uploads and syncs together, and "
            "that is used up for now. The file was not fetched; the next run takes it.")


def sync_deferred(conn: Connection, kb: KnowledgeBase, settings: Settings) -> str | None:
    """Before a download: the deferral sentence if the owner's limits have no room for one more file now."""
    if kb.scope != "personal" or kb.owner_id is None:
        return None
    now = upload_quotas.clock(conn)
    return sync_deferral(settings) if _rate_wait(conn, kb.owner_id, 1, settings, now) is not None else None


def admit_synced(conn: Connection, kb: KnowledgeBase, settings: Settings) -> None:
    """Refuse a synced file a private pool has no room or no budget for; otherwise count it for the owner."""
    if kb.scope != "personal" or kb.owner_id is None:
        return
    now = upload_quotas.lock_users(conn, {kb.owner_id})
    _check_room(conn, kb.owner_id, 1, settings)
    wait = _rate_wait(conn, kb.owner_id, 1, settings, now)
    if wait is not None:
        raise RateLimitError(sync_deferral(settings), retry_after=max(1, math.ceil(wait)))
    upload_quotas.record(conn, kb.owner_id, now, keep=DAY)


def admit_unpacked(conn: Connection, kb: KnowledgeBase, members: int, settings: Settings) -> None:
    """Refuse unpacking ``members`` new documents into a private pool that has no room for them.

    Checked again where an archive is unpacked: a presigned archive was never read
    at upload, and the pool may have filled since.
    """
    if kb.scope != "personal" or kb.owner_id is None or members <= 0:
        return
    upload_quotas.lock_users(conn, {kb.owner_id})
    _check_room(conn, kb.owner_id, members, settings)


def _check_room(conn: Connection, owner_id: str, documents: int, settings: Settings) -> None:
    held = upload_quotas.private_pool_documents(conn, owner_id)
    if held + documents <= settings.private_doc_cap:
        return
    room = max(0, settings.private_doc_cap - held)
    if documents == 1:
        message = (f"This private knowledge base already holds {held} documents, the most a private pool "
                   f"may hold is {settings.private_doc_cap}; delete one to upload another.")
    else:
        message = (f"This upload would add {documents} documents, but the private knowledge base has room for "
                   f"{room} more (it holds {held} of {settings.private_doc_cap}); delete some documents or "
                   "upload fewer at once.")
    raise DocCapReachedError(message, details={"cap": settings.private_doc_cap, "held": held, "room": room,
                                                "requested": documents})


# --- documents shared into several private pools (R-ACC-6) ------------------------------------

def admit_shared_upload(conn: Connection, recipients: list[str], settings: Settings, documents: int = 1) -> None:
    """Refuse a shared upload unless every recipient's pool has room and budget for it; then count it
    for each of them.

    All or nothing: one recipient who is full (or over a limit) refuses the upload for everyone, and
    the refusal names each recipient who is, so the sharer can drop them and send again. The
    recipients' quota rows are locked in a fixed order, so two shares racing for one user queue.
    """
    now = upload_quotas.lock_users(conn, recipients)
    full = [(u, held) for u in recipients
            if (held := upload_quotas.private_pool_documents(conn, u)) + documents > settings.private_doc_cap]
    if full:
        names = [u for u, _ in full]
        raise DocCapReachedError(
            f"The private pools of {', '.join(names)} have no room for "
            f"{'this document' if documents == 1 else f'{documents} documents'} (at most "
            f"{settings.private_doc_cap} each); nothing was shared. Remove them from the recipients or ask "
            "them to delete a document.",
            details={"cap": settings.private_doc_cap, "requested": documents, "recipients": names,
                     "held": {u: held for u, held in full}},
            fields={"recipients": f"Full: {', '.join(names)}."},
        )
    for limit, per in ((settings.upload_rate_per_minute, "a minute"), (settings.upload_rate_per_day, "a day")):
        if 0 < limit < documents:
            raise ValidationError(
                f"This upload holds {documents} documents, and a private pool takes at most {limit} {per}; "
                "split it into smaller archives.",
                fields={"file": f"Holds {documents} documents; at most {limit} may be uploaded {per}."},
            )
    waits: dict[str, float] = {}
    for user in recipients:
        today = upload_quotas.accepted_since(conn, user, now - DAY)
        this_minute = [t for t in today if t > now - MINUTE]
        wait = [w for w in (
            _retry_after(this_minute, settings.upload_rate_per_minute, documents, MINUTE, now),
            _retry_after(today, settings.upload_rate_per_day, documents, DAY, now),
        ) if w is not None]
        if wait:
            waits[user] = max(wait)
    if waits:
        error = RateLimitError(
            f"Too many uploads into the private pools of {', '.join(waits)}: a private pool takes "
            f"{settings.upload_rate_per_minute} documents a minute and {settings.upload_rate_per_day} a day. "
            "Nothing was shared; try again later.",
            retry_after=max(1, math.ceil(max(waits.values()))),
        )
        error.details["recipients"] = list(waits)
        raise error
    for user in recipients:
        upload_quotas.record(conn, user, now, keep=DAY, count=documents)


def admit_unpacked_shared(conn: Connection, recipients: list[str], members: int, settings: Settings) -> None:
    """``admit_unpacked`` for a shared archive: every recipient's pool must have room for its members."""
    if members <= 0 or not recipients:
        return
    upload_quotas.lock_users(conn, recipients)
    full = [u for u in recipients
            if upload_quotas.private_pool_documents(conn, u) + members > settings.private_doc_cap]
    if full:
        raise DocCapReachedError(
            f"This archive would add {members} documents to the private pools of {', '.join(full)}, which "
            f"have no room for them (at most {settings.private_doc_cap} each).",
            details={"cap": settings.private_doc_cap, "requested": members, "recipients": full},
        )
