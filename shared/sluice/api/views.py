"""Every response body the API answers, and how a domain value becomes one.

Rows become responses here, field by field, never by accident (a row never
reaches a client whole). Each body is a model, so the routes are validated
against it and the OpenAPI document describes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sluice.access import vision
from sluice.api.views_vision import ImageDescriptionOut, image_description_view
from sluice.bases import DefaultEmbedding
from sluice.db.documents import Document
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.embedding import CatalogModel
from sluice.ingest.documents import DocumentPage, IngestionCounts
from sluice.ingest.uploads import Accepted
from sluice.search.ranking import RERANK_GATE, Gate, hybrid_score, score, verdict
from sluice.search.service import SearchOutcome
from sluice.vectors.search import Candidate


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- errors (R-ERR-1) -----------------------------------------------------------------------

class ErrorDetail(Body):
    code: str = Field(description="VALIDATION_ERROR, UNSUPPORTED_TYPE, FILE_TOO_LARGE, NOT_FOUND, CONFLICT, ...")
    message: str
    details: dict[str, Any] = Field(
        description="fields: {dotted.field: sentence} for a field error; retry_after for 429; and so on.")


class ErrorBody(Body):
    error: ErrorDetail


# --- health, catalog, formats ----------------------------------------------------------------

class HealthOut(Body):
    status: Literal["ok"]


class CatalogModelOut(Body):
    provider: str
    model: str
    dim: int
    max_input_tokens: int
    allowed_dims: list[int]
    description: str
    vec_gate: float | None = Field(
        description="The cosine under which a search of this model's collections drops a chunk that is no strong "
                    "lexical match (R-SRCH-1), as measured for the model; null: the default, 0.30.")
    is_default: bool = Field(description="Whether a base that names no embedding gets this one.")


class DefaultModelOut(Body):
    provider: str
    model: str


class EmbeddingModelsOut(Body):
    models: list[CatalogModelOut]
    default: DefaultModelOut = Field(description="What a base that names no embedding embeds with.")


class TextSearchLanguagesOut(Body):
    languages: list[str] = Field(description="The text search configurations a base may choose (R-SRCH-7).")
    default: str = Field(description="What a base that names none on a new collection searches in.")


def catalog_view(models: Sequence[CatalogModel], default: DefaultEmbedding) -> EmbeddingModelsOut:
    return EmbeddingModelsOut(
        models=[CatalogModelOut(provider=m.provider, model=m.model, dim=m.dim, max_input_tokens=m.max_input_tokens,
                                allowed_dims=list(m.allowed_dims), description=m.description,
                                vec_gate=m.vec_gate,
                                is_default=(m.provider, m.model) == (default.provider, default.model))
                for m in models],
        default=DefaultModelOut(provider=default.provider, model=default.model),
    )


class SupportedFormatsOut(Body):
    extensions: dict[str, str] = Field(description="Every extension Sluice reads, and its family.")
    knowledge_base: list[str] = Field(description="The extensions a knowledge base indexes.")
    chat_only: list[str] = Field(description="The extensions only a chat attachment takes (images).")
    knowledge_base_with_ocr: list[str] = Field(
        default_factory=list,
        description="Images a knowledge base also indexes when its ingestion_config.parser.ocr is on (R-PARSE-7).")


# --- knowledge bases and collections ---------------------------------------------------------

class GrantOut(Body):
    user_id: str
    permission: Literal["view", "edit"]


class KnowledgeBaseOut(Body):
    """A base as a reader sees it."""

    id: str
    name: str
    collection_name: str
    scope: Literal["personal", "org", "app"]
    org_id: str | None
    owner_id: str | None
    is_default: bool
    description: str
    embedding_provider: str
    embedding_model: str
    embedding_dim: int
    text_search_language: str
    ingestion_config: dict[str, Any] = Field(
        description="The collection's chunking and image description; a reader's view leaves out the image "
                    "description's base_url and secret_id, as it leaves out the embedding's.")
    created_by: str
    created_at: datetime | None
    can_write: bool


class WritableKnowledgeBaseOut(KnowledgeBaseOut):
    """A base as one who may change it sees it: also its key, its endpoint and its grants."""

    embedding_base_url: str | None
    embedding_secret_id: str | None
    grants: list[GrantOut]


def kb_view(kb: KnowledgeBase, *, writable: bool = False) -> KnowledgeBaseOut:
    """The base as the caller sees it: a writer's view when they may change it."""
    return writable_kb_view(kb) if writable else KnowledgeBaseOut(**_kb_fields(kb, writable=False))


def writable_kb_view(kb: KnowledgeBase) -> WritableKnowledgeBaseOut:
    return WritableKnowledgeBaseOut(
        **_kb_fields(kb, writable=True), embedding_base_url=kb.embedding_base_url,
        embedding_secret_id=kb.embedding_secret_id,
        grants=[GrantOut(user_id=u, permission=perm) for u, perm in sorted(kb.grants.items())],
    )


def _kb_fields(kb: KnowledgeBase, *, writable: bool) -> dict[str, Any]:
    # Which key pays and where the workers send text or images, for every model a base names (the
    # embedder: the writer's view's own fields; the image describer: inside ingestion_config), is a
    # writer's business, not every reader's.
    config = kb.ingestion_config if writable else vision.for_readers(kb.ingestion_config)
    return {
        "id": str(kb.id), "name": kb.name, "collection_name": kb.collection_name, "scope": kb.scope,
        "org_id": kb.org_id, "owner_id": kb.owner_id, "is_default": kb.is_default, "description": kb.description,
        "embedding_provider": kb.embedding_provider, "embedding_model": kb.embedding_model,
        "embedding_dim": kb.embedding_dim, "text_search_language": kb.text_search_language,
        "ingestion_config": config, "created_by": kb.created_by,
        "created_at": kb.created_at, "can_write": writable,
    }


class KnowledgeBasesOut(Body):
    knowledge_bases: list[WritableKnowledgeBaseOut | KnowledgeBaseOut]


class BaseOnCollectionOut(Body):
    id: str
    name: str
    scope: str
    org_id: str | None


class CollectionOut(Body):
    name: str
    embedding_model: str
    embedding_dim: int
    text_search_language: str
    knowledge_bases: list[BaseOnCollectionOut]


class CollectionsOut(Body):
    collections: list[CollectionOut]


def collection_view(name: str, bases: Sequence[KnowledgeBase]) -> CollectionOut:
    """One collection name, once, with the bases on it the caller reaches (they share one embedding space)."""
    return CollectionOut(
        name=name, embedding_model=bases[0].embedding_model, embedding_dim=bases[0].embedding_dim,
        text_search_language=bases[0].text_search_language,
        knowledge_bases=[BaseOnCollectionOut(id=str(kb.id), name=kb.name, scope=kb.scope, org_id=kb.org_id)
                         for kb in bases],
    )


# --- documents -------------------------------------------------------------------------------

class ProgressOut(Body):
    done: int
    total: int


class DocumentOut(Body):
    id: str
    kb_id: str | None
    collection_name: str
    filename: str
    filesize: int | None
    filetype: str | None
    status: Literal["processing", "done", "error"]
    stage: str = Field(
        description="queued, parsing, describing (a PDF's images, R-PARSE-6), chunking, embedding, done")
    progress: ProgressOut | None = Field(description="The steps of the current stage, where it has them.")
    error_message: str | None
    document_id: str | None
    chunk_count: int
    storage_path: str | None
    has_file: bool = Field(description="Whether an original is stored to download or retry from.")
    attempt: int
    source: str
    source_path: str | None
    content_hash: str | None = Field(
        description="The sha256 of the stored file's bytes (hex), set when the parse stage reads it; null before. "
                    "`sluice ingest` sends no file whose content a base already holds.")
    organizational_unit: str | None
    document_type: str | None
    document_date: date | None
    uploaded_by: str | None
    created_at: datetime | None
    completed_at: datetime | None
    image_description: ImageDescriptionOut | None = Field(
        None, description="With image description on (R-PARSE-6): images described and not, and why; else null.")
    notes: list[str] = Field(
        default_factory=list,
        description="What the parse stage said besides the text: a file read as another kind than its name says "
                    "(R-UP-6), a page or cell limit that stopped the reader (R-PARSE-1), a page it could not read.")
    parser: str | None = Field(
        None, description="The parser that read the document (R-PARSE-7): pymupdf or layout; null before parsing.")
    ocr_pages: int | None = Field(
        None, description="Pages OCR recognised (R-PARSE-7); null when OCR was off for this document.")


def document_view(d: Document) -> DocumentOut:
    progress = None
    if d.progress_total is not None and d.progress_done is not None:
        progress = ProgressOut(done=d.progress_done, total=d.progress_total)
    return DocumentOut(
        id=str(d.id), kb_id=str(d.kb_id) if d.kb_id else None, collection_name=d.collection_name,
        filename=d.filename, filesize=d.filesize, filetype=d.filetype, status=d.status,
        stage=d.stage, progress=progress, error_message=d.error_message,
        document_id=str(d.vector_document_id) if d.vector_document_id else None, chunk_count=d.chunk_count,
        storage_path=d.storage_path, has_file=d.storage_path is not None, attempt=d.attempt, source=d.source,
        source_path=d.source_path, content_hash=d.content_hash, organizational_unit=d.organizational_unit,
        document_type=d.document_type, document_date=d.document_date, uploaded_by=d.uploaded_by,
        created_at=d.created_at, completed_at=d.completed_at,
        image_description=image_description_view(d.images_described, d.images_undescribed, d.image_note),
        notes=d.parse_notes or [], parser=d.parser, ocr_pages=d.ocr_pages,
    )


class DocumentsOut(Body):
    documents: list[DocumentOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None


def documents_view(page: DocumentPage) -> DocumentsOut:
    return DocumentsOut(documents=[document_view(d) for d in page.documents], total=page.total, limit=page.limit,
                        offset=page.offset, next_offset=page.next_offset)


class IngestionCountsOut(Body):
    indexing_status: Literal["indexing", "complete"]
    processing_count: int
    indexed_count: int
    failed_count: int
    document_count: int
    chunk_count: int


class KnowledgeBaseIngestionOut(IngestionCountsOut):
    kb_id: str
    collection_name: str


class CollectionInfoOut(IngestionCountsOut):
    collection_name: str
    knowledge_base_ids: list[str]
    embedding_model: str
    embedding_dim: int


def _counts(counts: IngestionCounts) -> dict[str, Any]:
    return {"indexing_status": counts.indexing_status, "processing_count": counts.processing,
            "indexed_count": counts.indexed, "failed_count": counts.failed, "document_count": counts.documents,
            "chunk_count": counts.chunks}


def kb_ingestion_view(kb: KnowledgeBase, counts: IngestionCounts) -> KnowledgeBaseIngestionOut:
    return KnowledgeBaseIngestionOut(kb_id=str(kb.id), collection_name=kb.collection_name, **_counts(counts))


def collection_info_view(name: str, bases: Sequence[KnowledgeBase], counts: IngestionCounts) -> CollectionInfoOut:
    return CollectionInfoOut(collection_name=name, knowledge_base_ids=[str(b.id) for b in bases],
                             embedding_model=bases[0].embedding_model, embedding_dim=bases[0].embedding_dim,
                             **_counts(counts))


class DocumentContentOut(Body):
    id: str
    filename: str
    content: str


class DownloadOut(Body):
    url: str
    expires_in: int
    filename: str


class DeletedOut(Body):
    id: str
    deleted: Literal[True]


# --- uploads (R-DOC-2) -----------------------------------------------------------------------

class AcceptedOut(Body):
    """The same shape from every upload route: the row, and its document id once indexed."""

    id: str
    status: Literal["processing", "done", "error"]
    filename: str
    collection_name: str
    document_id: str | None


class PresignedPostOut(Body):
    url: str
    fields: dict[str, str] = Field(description="Send every field with the POST, and the file last.")
    expires_in: int


class PresignedAcceptedOut(AcceptedOut):
    upload: PresignedPostOut


def _accepted_fields(accepted: Accepted) -> dict[str, Any]:
    d = accepted.document
    return {"id": str(d.id), "status": d.status, "filename": d.filename, "collection_name": d.collection_name,
            "document_id": str(d.vector_document_id) if d.vector_document_id else None}


def accepted_view(accepted: Accepted) -> AcceptedOut:
    return AcceptedOut(**_accepted_fields(accepted))


def presigned_view(accepted: Accepted) -> PresignedAcceptedOut:
    if accepted.upload is None:
        raise ValueError("a presigned upload without its POST")
    return PresignedAcceptedOut(**_accepted_fields(accepted), upload=PresignedPostOut(**accepted.upload))


# --- search (R-SRCH-1..5) --------------------------------------------------------------------

class ResultMetadataOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    source: str | None
    document_type: str | None
    organizational_unit: str | None
    document_date: date | None
    source_path: str | None


class SearchResultOut(Body):
    content: str
    score: float = Field(description="What results are ordered by: the reranker's score, else hybrid_score.")
    vec_score: float = Field(description="Cosine similarity of the chunk to the query.")
    text_score: float = Field(description="BM25 of the chunk for the query's lexemes (0: none of them).")
    hybrid_score: float = Field(
        description="alpha * vec_norm + (1 - alpha) * text_norm, each scaled by bounds of the query and the chunk "
                    "alone (R-SRCH-10): never by the other candidates.")
    reranker_score: float | None
    collection: str
    document_id: str
    kb_id: str | None
    filename: str | None
    chunk_index: int
    page_start: int | None
    page_end: int | None
    organizational_unit: str | None
    source: str | None
    metadata: ResultMetadataOut


class DiagnosticCandidateOut(SearchResultOut):
    vec_norm: float = Field(description="vec_score on [0, 1]: a negative cosine counts as 0.")
    text_norm: float = Field(description="text_score over the most BM25 the query can score in the collection "
                                         "((k1 + 1) times the sum of its scored lexemes' IDFs).")
    strong_lexical_match: bool = Field(
        description="Found by the lexical side and holding every lexeme of the query (stop words aside).")
    vec_gate: float = Field(description="The cosine gate applied to this candidate's collection.")
    passed: bool = Field(description="Whether the candidate passes the gates a search applies.")
    gate: Gate = Field(description="The gate that let it through (vec_gate, strong_lexical, rare_identifier) or "
                                   "stopped it (vec_gate, reranker_gate).")
    rare_identifiers_held: int = Field(
        description="How many of the query's rare identifiers (a lexeme with a digit in at most 10 chunks of "
                    "the collection) the chunk holds; with alpha below 1 the holders of more come first.")
    lifted_by_identifier: bool = Field(
        description="The identifier rule decided its place: it ranks above a candidate of higher score.")
    found_by: list[Literal["vector", "text"]] = Field(
        description="Which side of the pool found it: the vector top, the full-text top, or both (R-SRCH-1).")


class SearchOut(Body):
    query: str
    results: list[SearchResultOut]
    count: int


class DiagnosticOut(Body):
    query: str
    alpha: float
    vec_gate: float | None = Field(description="The cosine gate, when every collection searched has the same one.")
    vec_gates: dict[str, float] = Field(description="The cosine gate of each collection searched.")
    reranker_gate: float
    candidates: list[DiagnosticCandidateOut]
    count: int


def _result_fields(c: Candidate) -> dict[str, Any]:
    return {
        "content": c.content,
        "score": round(score(c), 6),
        "vec_score": round(c.vec_score, 6),
        "text_score": round(c.text_score, 6),
        "hybrid_score": round(hybrid_score(c), 6),
        "reranker_score": round(c.reranker_score, 6) if c.reranker_score is not None else None,
        "collection": c.collection,
        "document_id": str(c.document_id),
        "kb_id": str(c.kb_id) if c.kb_id else None,
        "filename": c.filename,
        "chunk_index": c.chunk_index,
        "page_start": c.page_start,
        "page_end": c.page_end,
        "organizational_unit": c.organizational_unit,
        "source": c.source,
        "metadata": ResultMetadataOut(**{
            **c.metadata, "source": c.source, "document_type": c.document_type,
            "organizational_unit": c.organizational_unit, "document_date": c.document_date,
            "source_path": c.source_path,
        }),
    }


def search_view(outcome: SearchOutcome) -> SearchOut:
    return SearchOut(query=outcome.query, results=[SearchResultOut(**_result_fields(c)) for c in outcome.results],
                     count=len(outcome.results))


def _diagnostic_candidate(c: Candidate, vec_gate: float) -> DiagnosticCandidateOut:
    passed, gate = verdict(c)
    return DiagnosticCandidateOut(**_result_fields(c), vec_norm=round(c.vec_norm, 6), text_norm=round(c.text_norm, 6),
                                  strong_lexical_match=c.strong_match, vec_gate=vec_gate, passed=passed, gate=gate,
                                  rare_identifiers_held=c.identifier_hits,
                                  lifted_by_identifier=c.lifted_by_identifier, found_by=list(c.found_by))


def diagnostic_view(outcome: SearchOutcome) -> DiagnosticOut:
    gates = set(outcome.vec_gates.values())
    return DiagnosticOut(
        query=outcome.query, alpha=outcome.alpha, vec_gate=next(iter(gates)) if len(gates) == 1 else None,
        vec_gates=outcome.vec_gates, reranker_gate=RERANK_GATE,
        candidates=[_diagnostic_candidate(c, outcome.vec_gates[c.collection]) for c in outcome.results],
        count=len(outcome.results),
    )


class FilterValuesOut(Body):
    collection_name: str
    organizational_units: list[str]
