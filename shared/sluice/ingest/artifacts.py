"""The stage artifacts: what the parse stage hands the chunk stage, and the chunk stage the embed
stage. One model each, one writer and one reader each.

An artifact is an object (``stage/<stage>/<doc>.<attempt>.<ext>``) written once per
document attempt, only if absent, so a redelivered stage starts nothing new; its
creation is the event that runs the next stage. A lifecycle rule expires them.
"""

from __future__ import annotations

import base64
import uuid

from pydantic import BaseModel, ConfigDict

from sluice.chunking import Chunk, ChunkingPlan
from sluice.parsing import ParsedDocument
from sluice.storage import ObjectStore, stage_key


class _Artifact(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ParsedText(_Artifact):
    """The text the parse stage read, with its page spans (PDF) and the reader's notes."""

    document_id: uuid.UUID
    attempt: int
    mime: str
    kind: str
    text: str
    pages: list[tuple[int, int, int]] | None = None  # (page number, start, end) offsets into text
    notes: list[str] = []
    truncated: bool = False
    word_count: int = 0


class ChunkedText(_Artifact):
    """A document's chunks and the plan they were split with."""

    mime: str
    strategy: str
    chunk_size: int
    chunk_overlap: int
    chunks: list[Chunk]


def write_parsed(store: ObjectStore, doc_id: uuid.UUID, attempt: int, mime: str, kind: str,
                 parsed: ParsedDocument) -> None:
    artifact = ParsedText(
        document_id=doc_id, attempt=attempt, mime=mime, kind=kind, text=parsed.text,
        pages=[(p.number, p.start, p.end) for p in parsed.pages] if parsed.pages else None,
        notes=parsed.notes, truncated=parsed.truncated, word_count=parsed.word_count,
    )
    store.put(stage_key("parsed", doc_id, attempt), artifact.model_dump_json().encode(),
              content_type="application/json", only_if_absent=True)


def read_parsed(store: ObjectStore, doc_id: uuid.UUID, attempt: int) -> ParsedText:
    return ParsedText.model_validate_json(store.get(stage_key("parsed", doc_id, attempt)))


def write_chunks(store: ObjectStore, doc_id: uuid.UUID, attempt: int, mime: str, plan: ChunkingPlan,
                 chunks: list[Chunk]) -> None:
    artifact = ChunkedText(mime=mime, strategy=plan.strategy, chunk_size=plan.chunk_size,
                           chunk_overlap=plan.chunk_overlap, chunks=chunks)
    store.put(stage_key("chunks", doc_id, attempt), artifact.model_dump_json().encode(),
              content_type="application/json", only_if_absent=True)


def read_chunks(store: ObjectStore, doc_id: uuid.UUID, attempt: int) -> ChunkedText:
    return ChunkedText.model_validate_json(store.get(stage_key("chunks", doc_id, attempt)))


class ArtifactImage(_Artifact):
    id: int
    sha256: str
    width: int
    height: int
    format: str
    data: str  # base64


class ImagesText(ParsedText):
    """The parsed text with the images its pages show, for the describe step (R-PARSE-6), which
    writes the parsed-text artifact with the descriptions in place."""

    images: list[ArtifactImage] = []
    placements: list[tuple[int, int, int]] = []  # (page number, offset into text, image id)
    images_over_cap: int = 0
    images_unreadable: int = 0


def write_images(store: ObjectStore, doc_id: uuid.UUID, attempt: int, mime: str, kind: str,
                 parsed: ParsedDocument) -> None:
    artifact = ImagesText(
        document_id=doc_id, attempt=attempt, mime=mime, kind=kind, text=parsed.text,
        pages=[(p.number, p.start, p.end) for p in parsed.pages] if parsed.pages else None,
        notes=parsed.notes, truncated=parsed.truncated, word_count=parsed.word_count,
        images=[ArtifactImage(id=i.id, sha256=i.sha256, width=i.width, height=i.height, format=i.format,
                              data=base64.b64encode(i.data).decode("ascii")) for i in parsed.images or []],
        placements=[(p.page, p.offset, p.image) for p in parsed.placements or []],
        images_over_cap=parsed.images_over_cap, images_unreadable=parsed.images_unreadable,
    )
    store.put(stage_key("images", doc_id, attempt), artifact.model_dump_json().encode(),
              content_type="application/json", only_if_absent=True)


def read_images(store: ObjectStore, doc_id: uuid.UUID, attempt: int) -> ImagesText:
    return ImagesText.model_validate_json(store.get(stage_key("images", doc_id, attempt)))


def write_parsed_text(store: ObjectStore, artifact: ParsedText) -> None:
    """The parsed-text artifact as built elsewhere (the describe step's, descriptions in place)."""
    store.put(stage_key("parsed", artifact.document_id, artifact.attempt),
              ParsedText(**{k: getattr(artifact, k) for k in ParsedText.model_fields}).model_dump_json().encode(),
              content_type="application/json", only_if_absent=True)
