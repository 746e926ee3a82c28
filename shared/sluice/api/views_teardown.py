"""The teardown routes' bodies: a teardown's receipt (``GET /rag/teardowns/{id}``, and the 202 of
``DELETE /kb/{kb_id}`` and ``DELETE /rag/collections/{name}``).

The body is ``sluice.teardown.summary`` validated field by field: the same dictionary the release
writes to the structured log, so the answer and the log line agree.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sluice.db.teardowns import Teardown
from sluice.teardown import summary


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TornDownBaseOut(_Body):
    id: str
    name: str
    scope: Literal["personal", "org", "app"]
    action: Literal["deleted", "cleared"] = Field(description="A default base is cleared (its row kept), not deleted.")


class TeardownErrorOut(_Body):
    step: str = Field(description="The step that failed: chunks, sources, objects or release.")
    reason: str


class RemovedOut(_Body):
    documents: int = Field(description="Document rows deleted (in the request).")
    chunks: int = Field(description="Vector rows removed: the whole table's when it was dropped.")
    objects: int = Field(description="Stored objects deleted: originals, parsed text, stage artifacts.")
    bytes: int = Field(description="Their total size.")
    sync_sources: int


class TeardownOut(_Body):
    """A teardown's receipt. ``removed`` counts as the steps go; with state ``done`` it is final,
    ``left`` shows what the release found remaining (all zeros) and the name is free again."""

    id: str
    collection_name: str
    state: Literal["running", "done", "failed"]
    step: str = Field(description="queued, chunks, sources, objects, release, done")
    knowledge_bases: list[TornDownBaseOut]
    table: Literal["drop", "keep"] = Field(
        description="drop: no other base holds the name; keep: only these bases' chunks go.")
    table_dropped: bool | None
    requested_by: str
    requested_at: str | None = Field(description="ISO 8601")
    updated_at: str | None = Field(description="ISO 8601; moves with every step and batch")
    finished_at: str | None = Field(description="ISO 8601")
    attempts: int = Field(description="Workflow executions started for it.")
    error: TeardownErrorOut | None = Field(description="With state failed: the step and why.")
    removed: RemovedOut
    unfiled_documents_failed: int = Field(
        description="Another tenant's rows left under the dropped table, marked error (their chunks are gone).")
    left: dict[str, int] | None = Field(description="What the release found remaining (all zero); null before.")
    history: list[dict[str, Any]] = Field(description="requested, started, failed, restarted, done - newest last.")


def teardown_view(td: Teardown) -> TeardownOut:
    return TeardownOut.model_validate(summary(td))
