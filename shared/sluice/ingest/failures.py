"""What a failed ingest says (R-DOC-4): a summary for the row, the details for the log."""

from __future__ import annotations

from sluice.errors import EmbeddingCallError, SluiceError


def is_refusal(exc: BaseException) -> bool:
    """A refusal Sluice raised about this document (a 4xx: unreadable, too large, a bad plan).

    No redelivery changes its answer, so it fails the document at once, and its
    message, written here for the user, is the row's error whole.
    """
    return isinstance(exc, SluiceError) and 400 <= exc.status < 500

_ADVICE = {
    "parsing": "the file could not be read - check that it opens, then retry the upload.",
    "chunking": "check the collection's chunking settings, then retry the upload.",
    "embedding": "check the collection's embedding provider and credential, then retry the upload.",
    "queued": "retry the upload.",
    "describing": "retry the upload; a failed image description alone never fails a document.",
    "storing": "retry the upload; if it fails again, the database may be unavailable.",
}


def failure_summary(stage: str, exc: BaseException) -> str:
    """Refusals Sluice raised pass through whole; anything else becomes stage + type + advice."""
    if is_refusal(exc):
        assert isinstance(exc, SluiceError)
        # A field refusal's sentences say what to change; the row has no form to mark them on.
        sentences = list(dict.fromkeys((exc.details.get("fields") or {}).values()))
        return " ".join([exc.message, *sentences])
    if isinstance(exc, EmbeddingCallError):
        return exc.summary()
    advice = _ADVICE.get(stage.split(" ")[0], "retry the upload.")
    return (
        f"The document could not be indexed ({type(exc).__name__} while {stage.split(' ')[0]}) - {advice} "
        "The worker log has the full error."
    )


def dead_letter_summary(stage: str) -> str:
    """The error of a row whose stage message ran out of deliveries without a summary of its own."""
    advice = _ADVICE.get(stage, "retry the upload.")
    return (
        f"The document could not be indexed (it failed every delivery while {stage}) - {advice} "
        "The worker log has the full error."
    )
