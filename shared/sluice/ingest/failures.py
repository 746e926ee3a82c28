"""What a failed ingest says (R-DOC-4): a summary for the row, the details for the log."""

from __future__ import annotations

from sluice.errors import DocumentRefused, EmbeddingCallError

_ADVICE = {
    "parsing": "the file could not be read - check that it opens, then retry the upload.",
    "chunking": "check the collection's chunking settings, then retry the upload.",
    "embedding": "check the collection's embedding provider and credential, then retry the upload.",
    "queued": "retry the upload.",
    "storing": "retry the upload; if it fails again, the database may be unavailable.",
}


def failure_summary(stage: str, exc: BaseException) -> str:
    """Refusals Sluice raised pass through whole; anything else becomes stage + type + advice."""
    if isinstance(exc, DocumentRefused):
        return exc.message
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
