"""The service's request and response bodies (generated from infra/openapi.json: do not edit).

Regenerate with ``python clients/python/tools/generate_models.py`` whenever the document changes;
a test fails until then.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field


class SluiceModel(BaseModel):
    """Extra fields are kept: a newer service's field parses, a request may carry one this client does not name."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class AcceptedOut(SluiceModel):
    "The same shape from every upload route: the row, and its document id once indexed."

    id: str
    status: Literal['processing', 'done', 'error']
    filename: str
    collection_name: str
    document_id: str | None


class AttachBody(SluiceModel):
    file_id: UUID = Field(description="One of the caller's chat files (POST /files/upload).")


class AttachmentOut(SluiceModel):
    id: str
    conversation_id: str
    file_id: str
    filename: str
    status: Literal['reading', 'indexing', 'summarizing', 'indexed', 'full_text', 'failed']
    progress: ProgressOut | None = Field(description='The steps of the current status: embedding batches while indexing, model calls while summarizing.')
    label: str = Field(description="The status with its steps, as a chip shows it: 'summarizing 2/3'.")
    tier: Literal['small', 'medium', 'large'] | None = Field(description='small: the full text is kept; medium and large: chunks, embeddings and an overview.')
    tokens: int | None = Field(description="The extracted text's tokens, by the bundled model's tokenizer.")
    chunk_count: int
    overview: str | None
    overview_kind: Literal['model', 'extractive'] | None = Field(description='extractive: leading sentences of each part, when no chat model wrote it.')
    overview_note: str | None
    error_message: str | None
    registered_document_id: str | None = Field(description='The knowledge-base document it was registered as.')
    created_at: datetime | None


class AttachmentsOut(SluiceModel):
    attachments: list[AttachmentOut]
    limit: int = Field(description='CHAT_MAX_ATTACHMENTS.')


class BaseOnCollectionOut(SluiceModel):
    id: str
    name: str
    scope: str
    org_id: str | None


class CatalogModelOut(SluiceModel):
    provider: str
    model: str
    dim: int
    max_input_tokens: int
    allowed_dims: list[int]
    description: str
    vec_gate: float | None = Field(description="The cosine under which a search of this model's collections drops a chunk that is no strong lexical match (R-SRCH-1), as measured for the model; null: the default, 0.30.")
    is_default: bool = Field(description='Whether a base that names no embedding gets this one.')


class ChatFileDetailOut(SluiceModel):
    id: str
    filename: str
    mime_type: str | None = Field(description='The resolved (canonical) type; by name until a presigned upload arrives.')
    size: int | None
    file_type: str | None = Field(description='image, pdf, docx, doc, spreadsheet, document, presentation, email, text or archive.')
    preview: str | None = Field(description='The first three non-empty lines of the text, at most 240 characters; null for an image and for a file no parser could read (R-PARSE-4).')
    status: Literal['pending', 'ready', 'failed'] = Field(description='pending: a presigned upload that has not arrived; failed: see error_message.')
    error_message: str | None
    parse_error: str | None = Field(description='Why no text could be read from a stored file, if none could.')
    message_id: str | None
    created_at: datetime | None
    download: DownloadLinkOut | None = Field(description='A short-lived link to the original; null until stored.')


class ChatFileOut(SluiceModel):
    "R-CHAT-1's answer, and what a card shows."

    id: str
    filename: str
    mime_type: str | None = Field(description='The resolved (canonical) type; by name until a presigned upload arrives.')
    size: int | None
    file_type: str | None = Field(description='image, pdf, docx, doc, spreadsheet, document, presentation, email, text or archive.')
    preview: str | None = Field(description='The first three non-empty lines of the text, at most 240 characters; null for an image and for a file no parser could read (R-PARSE-4).')
    status: Literal['pending', 'ready', 'failed'] = Field(description='pending: a presigned upload that has not arrived; failed: see error_message.')
    error_message: str | None
    parse_error: str | None = Field(description='Why no text could be read from a stored file, if none could.')
    message_id: str | None
    created_at: datetime | None


class CloneSyncSource(SluiceModel):
    kb_id: str | None = Field(default=None, description='The base the copy feeds (or collection_name).')
    collection_name: str | None = Field(default=None)
    name: str | None = Field(default=None)


class CollectionInfoOut(SluiceModel):
    indexing_status: Literal['indexing', 'complete']
    processing_count: int
    indexed_count: int
    failed_count: int
    document_count: int
    chunk_count: int
    collection_name: str
    knowledge_base_ids: list[str]
    embedding_model: str
    embedding_dim: int


class CollectionOut(SluiceModel):
    name: str
    embedding_model: str
    embedding_dim: int
    text_search_language: str
    knowledge_bases: list[BaseOnCollectionOut]


class CollectionsOut(SluiceModel):
    collections: list[CollectionOut]


class ConnectorOut(SluiceModel):
    connector: str
    title: str
    secret_kind: str | None = Field(description='The kind of vault secret a source names in secret_id (its sluice:provider tag), or null for none.')
    config_schema: dict[str, Any] = Field(description="The JSON schema of the connector's config.")
    change_signal: str = Field(description='What tells a run a file changed before it is fetched.')


class ConnectorsOut(SluiceModel):
    connectors: list[ConnectorOut]


class ContextOut(SluiceModel):
    mode: Literal['inline', 'reference']
    context: str = Field(description='The assembled block the model reads; built for this question, never stored.')
    trace: ContextTraceOut
    excerpts: list[ExcerptOut]
    references: list[ReferenceOut]
    expires_in: int | None = Field(description="How long the references' links last (reference mode).")


class ContextRequest(SluiceModel):
    question: str
    mode: Literal['inline', 'reference'] = Field(default='inline', description='inline: what the model reads (R-CHAT-3); reference: for an agent with a workspace, a reference and the head of each file, and where to fetch it.')


class ContextTraceOut(SluiceModel):
    query: str = Field(description='The question searched with, as the user wrote it.')
    searched: bool = Field(description='Whether an excerpt search ran (an indexed attachment is present).')
    documents: list[str] = Field(description='The attachments the search was scoped to.')
    top_k: int
    threshold: float
    count: int = Field(description='Excerpts that came back.')
    attachments: list[TraceAttachmentOut]
    total_tokens: int


class ConversationDetailOut(SluiceModel):
    id: str
    title: str
    created_at: datetime | None
    messages: list[MessageOut]
    attachments: list[AttachmentOut]


class ConversationOut(SluiceModel):
    id: str
    title: str
    created_at: datetime | None


class ConversationsOut(SluiceModel):
    conversations: list[ConversationOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None


class CreateKnowledgeBase(SluiceModel):
    name: str
    collection_name: str | None = Field(default=None)
    scope: Literal['personal', 'org', 'app'] = Field(default='personal')
    description: str = Field(default='')
    embedding_provider: str | None = Field(default=None)
    embedding_model: str | None = Field(default=None)
    embedding_dim: int | None = Field(default=None)
    embedding_base_url: str | None = Field(default=None)
    embedding_secret_id: str | None = Field(default=None)
    ingestion_config: dict[str, Any] | None = Field(default=None)
    text_search_language: str | None = Field(default=None, description="The text search configuration of the full-text side (R-SRCH-7): one of GET /rag/text-search-languages; default simple, or the collection's when it exists. Fixed once set.")


class CreateSyncSource(SluiceModel):
    name: str
    connector: str = Field(description='A connector of GET /rag/sync/connectors.')
    config: dict[str, Any] = Field(description="Where the documents are, per the connector's config_schema. Never a credential: that is secret_id.")
    secret_id: str | None = Field(default=None, description="The vault secret the source reads with (the connector's secret_kind).")
    sync_mode: Literal['new_only', 'update_only', 'full'] = Field(default='new_only')
    organizational_unit: str | None = Field(default=None)
    schedule: str | None = Field(default=None, description='rate(1 day), rate(6 hours)...; null: by hand only.')


class DefaultModelOut(SluiceModel):
    provider: str
    model: str


class DeletedOut(SluiceModel):
    id: str
    deleted: Literal[True]


class DiagnosticCandidateOut(SluiceModel):
    content: str
    score: float = Field(description="What results are ordered by: the reranker's score, else hybrid_score.")
    vec_score: float = Field(description='Cosine similarity of the chunk to the query.')
    text_score: float = Field(description="BM25 of the chunk for the query's lexemes (0: none of them).")
    hybrid_score: float = Field(description='alpha * vec_norm + (1 - alpha) * text_norm, each scaled by bounds of the query and the chunk alone (R-SRCH-10): never by the other candidates.')
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
    vec_norm: float = Field(description='vec_score on [0, 1]: a negative cosine counts as 0.')
    text_norm: float = Field(description="text_score over the most BM25 the query can score in the collection ((k1 + 1) times the sum of its scored lexemes' IDFs).")
    strong_lexical_match: bool = Field(description='Found by the lexical side and holding every lexeme of the query (stop words aside).')
    vec_gate: float = Field(description="The cosine gate applied to this candidate's collection.")
    passed: bool = Field(description='Whether the candidate passes the gates a search applies.')
    gate: Literal['vec_gate', 'strong_lexical', 'rare_identifier', 'reranker_gate'] = Field(description='The gate that let it through (vec_gate, strong_lexical, rare_identifier) or stopped it (vec_gate, reranker_gate).')
    rare_identifiers_held: int = Field(description="How many of the query's rare identifiers (a lexeme with a digit in at most 10 chunks of the collection) the chunk holds; with alpha below 1 the holders of more come first.")
    lifted_by_identifier: bool = Field(description='The identifier rule decided its place: it ranks above a candidate of higher score.')
    found_by: list[Literal['vector', 'text']] = Field(description='Which side of the pool found it: the vector top, the full-text top, or both (R-SRCH-1).')


class DiagnosticOut(SluiceModel):
    query: str
    alpha: float
    vec_gate: float | None = Field(description='The cosine gate, when every collection searched has the same one.')
    vec_gates: dict[str, float] = Field(description='The cosine gate of each collection searched.')
    reranker_gate: float
    candidates: list[DiagnosticCandidateOut]
    count: int


class DiagnosticRequest(SluiceModel):
    "The console search (R-SRCH-4): same scope and filters, a wider pool, no threshold."

    query: str
    collections: list[str]
    alpha: float | None = Field(default=None)
    min_vec_score: float | None = Field(default=None)
    filters: SearchFilters | None = Field(default=None)
    filter: str | None = Field(default=None)


class DocumentContentOut(SluiceModel):
    id: str
    filename: str
    content: str


class DocumentOut(SluiceModel):
    id: str
    kb_id: str | None
    collection_name: str
    filename: str
    filesize: int | None
    filetype: str | None
    status: Literal['processing', 'done', 'error']
    stage: str = Field(description="queued, parsing, describing (a PDF's images, R-PARSE-6), chunking, embedding, done")
    progress: ProgressOut | None = Field(description='The steps of the current stage, where it has them.')
    error_message: str | None
    document_id: str | None
    chunk_count: int
    storage_path: str | None
    has_file: bool = Field(description='Whether an original is stored to download or retry from.')
    attempt: int
    source: str
    source_path: str | None
    content_hash: str | None = Field(description="The sha256 of the stored file's bytes (hex), set when the parse stage reads it; null before. `sluice ingest` sends no file whose content a base already holds.")
    organizational_unit: str | None
    document_type: str | None
    document_date: date | None
    uploaded_by: str | None
    created_at: datetime | None
    completed_at: datetime | None
    image_description: ImageDescriptionOut | None = Field(default=None, description='With image description on (R-PARSE-6): images described and not, and why; else null.')
    notes: list[str] = Field(default=None, description='What the parse stage said besides the text: a file read as another kind than its name says (R-UP-6), a page or cell limit that stopped the reader (R-PARSE-1), a page it could not read.')  # type: ignore[arg-type]
    parser: str | None = Field(default=None, description='The parser that read the document (R-PARSE-7): pymupdf or layout; null before parsing.')
    ocr_pages: int | None = Field(default=None, description='Pages OCR recognised (R-PARSE-7); null when OCR was off for this document.')


class DocumentsOut(SluiceModel):
    documents: list[DocumentOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None


class DownloadLinkOut(SluiceModel):
    url: str
    expires_in: int


class DownloadOut(SluiceModel):
    url: str
    expires_in: int
    filename: str


class EmbeddingModelsOut(SluiceModel):
    models: list[CatalogModelOut]
    default: DefaultModelOut = Field(description='What a base that names no embedding embeds with.')


class ErrorBody(SluiceModel):
    error: ErrorDetail


class ErrorDetail(SluiceModel):
    code: str = Field(description='VALIDATION_ERROR, UNSUPPORTED_TYPE, FILE_TOO_LARGE, NOT_FOUND, CONFLICT, ...')
    message: str
    details: dict[str, Any] = Field(description='fields: {dotted.field: sentence} for a field error; retry_after for 429; and so on.')


class ExcerptOut(SluiceModel):
    number: int
    attachment_id: str
    filename: str
    chunk_index: int
    page_start: int | None
    page_end: int | None
    content: str
    vec_score: float
    text_score: float


class FetchOut(SluiceModel):
    path: str = Field(description='Where to write it in the workspace.')
    url: str = Field(description='A short-lived link to fetch it from.')


class FilterValuesOut(SluiceModel):
    collection_name: str
    organizational_units: list[str]


class GrantOut(SluiceModel):
    user_id: str
    permission: Literal['view', 'edit']


class GrantRequest(SluiceModel):
    user_id: str
    permission: Literal['view', 'edit']


class HealthOut(SluiceModel):
    status: Literal['ok']


class ImageDescriptionOut(SluiceModel):
    described: int = Field(description='Images of the document the vision model described.')
    undescribed: int = Field(description='Images left undescribed (failed, refused, over the cap, out of time).')
    note: str | None = Field(description="Why images went undescribed, e.g. '1 of 2 images was not described: …'.")


class KnowledgeBaseIngestionOut(SluiceModel):
    indexing_status: Literal['indexing', 'complete']
    processing_count: int
    indexed_count: int
    failed_count: int
    document_count: int
    chunk_count: int
    kb_id: str
    collection_name: str


class KnowledgeBaseOut(SluiceModel):
    "A base as a reader sees it."

    id: str
    name: str
    collection_name: str
    scope: Literal['personal', 'org', 'app']
    org_id: str | None
    owner_id: str | None
    is_default: bool
    description: str
    embedding_provider: str
    embedding_model: str
    embedding_dim: int
    text_search_language: str
    ingestion_config: dict[str, Any] = Field(description="The collection's chunking and image description; a reader's view leaves out the image description's base_url and secret_id, as it leaves out the embedding's.")
    created_by: str
    created_at: datetime | None
    can_write: bool


class KnowledgeBasesOut(SluiceModel):
    knowledge_bases: list[WritableKnowledgeBaseOut | KnowledgeBaseOut]


class MessageOut(SluiceModel):
    id: str
    conversation_id: str
    text: str
    files: list[ChatFileOut]
    created_at: datetime | None


class NewConversation(SluiceModel):
    title: str = Field(default='')


class NewMessage(SluiceModel):
    text: str = Field(default='')
    file_ids: list[UUID] = Field(default=None)  # type: ignore[arg-type]


class PageOut(SluiceModel):
    number: int
    width: int
    height: int
    data_url: str = Field(description='The page as a PNG data: URL.')


class PagesOut(SluiceModel):
    file_id: str
    filename: str
    page_count: int
    shown: int
    left_out: int = Field(description="Pages not shown: past the cap, or past the answer's size budget.")
    cap: int = Field(description='CHAT_TIFF_MAX_INLINE_PAGES.')
    note: str | None = Field(description='Which pages were left out and why; null when every page is shown.')
    pages: list[PageOut]


class ParsersOut(SluiceModel):
    parsers: list[str] = Field(description='What ingestion_config.parser.name may be.')
    ocr_modes: list[str] = Field(description='What ingestion_config.parser.ocr may be.')
    ocr_provider: str = Field(description='The engine OCR runs through in this deployment (SLUICE_OCR_PROVIDER).')
    ocr_providers: list[str] = Field(description='The OCR engines that can run here.')
    ocr_available: bool = Field(description='Whether turning OCR on reads anything in this deployment.')
    ocr_languages: list[str] | None = Field(description='What ingestion_config.parser.ocr_languages may combine (with +); null: the engine decides.')
    tesseract: TesseractOut
    textract: TextractOut
    defaults: dict[str, str | int] = Field(description='The settings a collection that names none reads with.')


class PoolDocumentOut(SluiceModel):
    id: str
    kb_id: str | None
    collection_name: str
    filename: str
    filesize: int | None
    filetype: str | None
    status: Literal['processing', 'done', 'error']
    stage: str = Field(description="queued, parsing, describing (a PDF's images, R-PARSE-6), chunking, embedding, done")
    progress: ProgressOut | None = Field(description='The steps of the current stage, where it has them.')
    error_message: str | None
    document_id: str | None
    chunk_count: int
    storage_path: str | None
    has_file: bool = Field(description='Whether an original is stored to download or retry from.')
    attempt: int
    source: str
    source_path: str | None
    content_hash: str | None = Field(description="The sha256 of the stored file's bytes (hex), set when the parse stage reads it; null before. `sluice ingest` sends no file whose content a base already holds.")
    organizational_unit: str | None
    document_type: str | None
    document_date: date | None
    uploaded_by: str | None
    created_at: datetime | None
    completed_at: datetime | None
    image_description: ImageDescriptionOut | None = Field(default=None, description='With image description on (R-PARSE-6): images described and not, and why; else null.')
    notes: list[str] = Field(default=None, description='What the parse stage said besides the text: a file read as another kind than its name says (R-UP-6), a page or cell limit that stopped the reader (R-PARSE-1), a page it could not read.')  # type: ignore[arg-type]
    parser: str | None = Field(default=None, description='The parser that read the document (R-PARSE-7): pymupdf or layout; null before parsing.')
    ocr_pages: int | None = Field(default=None, description='Pages OCR recognised (R-PARSE-7); null when OCR was off for this document.')
    shared: bool = Field(description='Whether the document was shared into this pool by someone else.')
    shared_by: str | None = Field(description="Who shared it (their user id); null for the caller's own.")


class PoolDocumentsOut(SluiceModel):
    documents: list[PoolDocumentOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None
    limits: PoolLimitsOut = Field(description="The caller's private pool's cap and limits (R-ACC-5).")


class PoolLimitsOut(SluiceModel):
    cap: int = Field(description='Documents a private pool may hold (PRIVATE_DOC_CAP): its own and those shared with its user.')
    held: int = Field(description='Documents it holds now; an upload or share that would pass the cap is refused.')
    upload_rate_per_minute: int = Field(description='Documents that may enter it a minute (0: no limit).')
    upload_rate_per_day: int = Field(description='Documents that may enter it a day (0: no limit).')
    max_recipients: int = Field(description='Users one document may be shared with at once.')


class PresignChatFile(SluiceModel):
    filename: str
    size: int | None = Field(default=None, description="The file's size in bytes, when known: refused early if over.")


class PresignRequest(SluiceModel):
    organizational_unit: str | None = Field(default=None)
    document_type: str | None = Field(default=None)
    document_date: date | None = Field(default=None)
    ingestion: dict[str, Any] | None = Field(default=None, description='Chunking settings for this document only: chunking_strategy, chunk_size, chunk_overlap.')
    filename: str
    size: int | None = Field(default=None, description="The file's size in bytes, when known: refused early if over.")


class PresignedAcceptedOut(SluiceModel):
    id: str
    status: Literal['processing', 'done', 'error']
    filename: str
    collection_name: str
    document_id: str | None
    upload: PresignedPostOut


class PresignedChatFileOut(SluiceModel):
    id: str
    filename: str
    mime_type: str | None = Field(description='The resolved (canonical) type; by name until a presigned upload arrives.')
    size: int | None
    file_type: str | None = Field(description='image, pdf, docx, doc, spreadsheet, document, presentation, email, text or archive.')
    preview: str | None = Field(description='The first three non-empty lines of the text, at most 240 characters; null for an image and for a file no parser could read (R-PARSE-4).')
    status: Literal['pending', 'ready', 'failed'] = Field(description='pending: a presigned upload that has not arrived; failed: see error_message.')
    error_message: str | None
    parse_error: str | None = Field(description='Why no text could be read from a stored file, if none could.')
    message_id: str | None
    created_at: datetime | None
    upload: PresignedPostOut


class PresignedPostOut(SluiceModel):
    url: str
    fields: dict[str, str] = Field(description='Send every field with the POST, and the file last.')
    expires_in: int


class PreviewSyncSource(SluiceModel):
    "What a source would be (R-SYNC-8): the parts of a create body that decide who reads what."

    connector: str = Field(description='A connector of GET /rag/sync/connectors.')
    config: dict[str, Any] = Field(default=None, description='The config the source would have.')  # type: ignore[arg-type]
    secret_id: str | None = Field(default=None)


class ProgressOut(SluiceModel):
    done: int
    total: int


class RecipientRemovedOut(SluiceModel):
    id: str
    user_id: str
    removed: bool
    document_deleted: bool = Field(description='True when that was the last recipient: the document is gone.')


class ReferenceOut(SluiceModel):
    attachment_id: str
    file_id: str
    filename: str
    path: str
    size: int | None
    file_type: str | None
    reference: str = Field(description="What the model reads: the 'Attached file:' line and the first 20 lines.")
    original: FetchOut
    extracted_text: FetchOut | None = Field(description='For a format a shell cannot read, its text beside it.')


class RegisterBody(SluiceModel):
    kb_id: str = Field(description='A knowledge base the caller may write; the attachment is copied into it.')


class RemovedOut(SluiceModel):
    documents: int = Field(description='Document rows deleted (in the request).')
    chunks: int = Field(description="Vector rows removed: the whole table's when it was dropped.")
    objects: int = Field(description='Stored objects deleted: originals, parsed text, stage artifacts.')
    bytes: int = Field(description='Their total size.')
    sync_sources: int


class RepointSyncSource(SluiceModel):
    collection_name: str
    kb_id: str | None = Field(default=None, description='Which base, when several that you write hold the collection.')


class ResultMetadataOut(SluiceModel):
    source: str | None
    document_type: str | None
    organizational_unit: str | None
    document_date: date | None
    source_path: str | None


class RunCountsOut(SluiceModel):
    listed: int = Field(description='Files the listing named (for a retry: the failed files it retries).')
    decided: int = Field(description='Files whose outcome is decided.')
    ingested: int = Field(description='New and updated files the pipeline has finished indexing.')
    indexing: int = Field(description='New and updated files the pipeline is still indexing.')
    new: int
    updated: int
    unchanged: int
    ignored: int
    skipped: int = Field(description='unchanged + ignored: files left as they were.')
    failed: int
    removed: int


class SearchFilters(SluiceModel):
    "R-SRCH-2. A list given must hold at least one value: an empty one is refused, not read as \"all\"."

    source: list[str] | None = Field(default=None)
    document_type: list[str] | None = Field(default=None)
    organizational_unit: list[str] | None = Field(default=None)
    date_from: date | None = Field(default=None)
    date_to: date | None = Field(default=None)


class SearchOut(SluiceModel):
    query: str
    results: list[SearchResultOut]
    count: int


class SearchRequest(SluiceModel):
    query: str
    collections: list[str]
    top_k: int = Field(default=4)
    candidates: int = Field(default=8)
    alpha: float | None = Field(default=None)
    min_vec_score: float | None = Field(default=None)
    filters: SearchFilters | None = Field(default=None)
    filter: str | None = Field(default=None)


class SearchResultOut(SluiceModel):
    content: str
    score: float = Field(description="What results are ordered by: the reranker's score, else hybrid_score.")
    vec_score: float = Field(description='Cosine similarity of the chunk to the query.')
    text_score: float = Field(description="BM25 of the chunk for the query's lexemes (0: none of them).")
    hybrid_score: float = Field(description='alpha * vec_norm + (1 - alpha) * text_norm, each scaled by bounds of the query and the chunk alone (R-SRCH-10): never by the other candidates.')
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


class SharePresignRequest(SluiceModel):
    "POST /pools/uploads: a presigned upload shared into the recipients' private pools (R-ACC-6)."

    organizational_unit: str | None = Field(default=None)
    document_type: str | None = Field(default=None)
    document_date: date | None = Field(default=None)
    ingestion: dict[str, Any] | None = Field(default=None, description='Chunking settings for this document only: chunking_strategy, chunk_size, chunk_overlap.')
    filename: str
    size: int | None = Field(default=None, description="The file's size in bytes, when known: refused early if over.")
    recipients: list[str] = Field(description="User ids of the caller's organization (at most POOL_MAX_RECIPIENTS, default 50).")


class SharedAcceptedOut(SluiceModel):
    id: str
    status: Literal['processing', 'done', 'error']
    filename: str
    collection_name: str
    document_id: str | None
    recipients: list[str] = Field(description='Everyone the document was shared with: all of them, or the upload was refused (all or nothing).')


class SharedPresignedAcceptedOut(SluiceModel):
    id: str
    status: Literal['processing', 'done', 'error']
    filename: str
    collection_name: str
    document_id: str | None
    upload: PresignedPostOut
    recipients: list[str]


class SupportedFormatsOut(SluiceModel):
    extensions: dict[str, str] = Field(description='Every extension Sluice reads, and its family.')
    knowledge_base: list[str] = Field(description='The extensions a knowledge base indexes.')
    chat_only: list[str] = Field(description='The extensions only a chat attachment takes (images).')
    knowledge_base_with_ocr: list[str] = Field(default=None, description='Images a knowledge base also indexes when its ingestion_config.parser.ocr is on (R-PARSE-7).')  # type: ignore[arg-type]


class SyncFileOut(SluiceModel):
    seq: int
    source_path: str
    name: str
    size: int | None
    change_token: str | None = Field(description='The change signal the listing gave (an S3 ETag): opaque.')
    outcome: Literal['new', 'updated', 'unchanged', 'ignored', 'failed', 'removed'] | None = Field(description='null until the file is decided.')
    indexing: bool = Field(description='Handed to the pipeline and not indexed yet.')
    reason: str | None = Field(description='For a failed or ignored file, why.')
    document_id: str | None
    decided_at: datetime | None


class SyncFilesOut(SluiceModel):
    run_id: str
    files: list[SyncFileOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None
    note: str | None = Field(default=None, description="Why there are no files to show: the run's list expired.")


class SyncRunOut(SluiceModel):
    id: str
    source_id: str
    kb_id: str
    collection_name: str
    connector: str
    sync_mode: str
    trigger: Literal['manual', 'schedule', 'retry']
    retry_of: str | None
    status: Literal['queued', 'running', 'succeeded', 'failed']
    listing_complete: bool | None = Field(description='Whether the listing was whole; a run removes nothing otherwise.')
    counts: RunCountsOut
    nothing_changed: bool = Field(description='The source answered that nothing changed since the state its last successful run kept (an unchanged git ref, in one request): nothing was listed, fetched or removed, and the zero counts say so.')
    note: str | None = Field(description='The run in words where its counts alone would mislead ("Nothing changed since the last successful run: ..."); null otherwise.')
    error: str | None = Field(description='Why the run failed, when it did.')
    requests_made: int | None = Field(default=None, description="Requests the run made to the remote side (the web connector's crawl and fetches); null where not counted.")
    bytes_downloaded: int | None = Field(default=None, description='Body bytes the run received from the remote side, as sent (a 304 adds none); null where not counted.')
    started_by: str
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    files_expired_at: datetime | None = Field(default=None, description="When the retention sweep removed this run's file list (its counts stay); null: kept.")


class SyncRunsOut(SluiceModel):
    runs: list[SyncRunOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None


class SyncSourceOut(SluiceModel):
    id: str
    kb_id: str
    collection_name: str
    name: str
    connector: str
    config: dict[str, Any]
    secret_id: str | None
    sync_mode: Literal['new_only', 'update_only', 'full']
    organizational_unit: str | None
    schedule: str | None
    created_by: str
    created_at: datetime | None
    updated_at: datetime | None


class SyncSourcePreviewOut(SluiceModel):
    sentence: str = Field(description='Who could search what the source would ingest, and with what credential (R-SYNC-8); a secret is named only when the caller may use it.')
    refusals: dict[str, str] = Field(description='What creating the same source would refuse, by field (config.<field>, secret_id); empty: nothing.')


class SyncSourcesOut(SluiceModel):
    kb_id: str
    sources: list[SyncSourceOut]


class TeardownErrorOut(SluiceModel):
    step: str = Field(description='The step that failed: chunks, sources, objects or release.')
    reason: str


class TeardownOut(SluiceModel):
    "A teardown's receipt. ``removed`` counts as the steps go; with state ``done`` it is final,\n``left`` shows what the release found remaining (all zeros) and the name is free again."

    id: str
    collection_name: str
    state: Literal['running', 'done', 'failed']
    step: str = Field(description='queued, chunks, sources, objects, release, done')
    knowledge_bases: list[TornDownBaseOut]
    table: Literal['drop', 'keep'] = Field(description="drop: no other base holds the name; keep: only these bases' chunks go.")
    table_dropped: bool | None
    requested_by: str
    requested_at: str | None = Field(description='ISO 8601')
    updated_at: str | None = Field(description='ISO 8601; moves with every step and batch')
    finished_at: str | None = Field(description='ISO 8601')
    attempts: int = Field(description='Workflow executions started for it.')
    error: TeardownErrorOut | None = Field(description='With state failed: the step and why.')
    removed: RemovedOut
    unfiled_documents_failed: int = Field(description="Another tenant's rows left under the dropped table, marked error (their chunks are gone).")
    left: dict[str, int] | None = Field(description='What the release found remaining (all zero); null before.')
    history: list[dict[str, Any]] = Field(description='requested, started, failed, restarted, done - newest last.')


class TesseractOut(SluiceModel):
    available: bool = Field(description='Whether Tesseract can read here: its language data is installed.')
    version: str | None = Field(description="The tesseract program's version on this machine, if there is one.")
    languages: list[str] = Field(description='Installed language data (Tesseract codes), e.g. eng, spa.')


class TextSearchLanguagesOut(SluiceModel):
    languages: list[str] = Field(description='The text search configurations a base may choose (R-SRCH-7).')
    default: str = Field(description='What a base that names none on a new collection searches in.')


class TextractOut(SluiceModel):
    configured: bool = Field(description='Whether this deployment reads scanned pages through Amazon Textract.')


class TornDownBaseOut(SluiceModel):
    id: str
    name: str
    scope: Literal['personal', 'org', 'app']
    action: Literal['deleted', 'cleared'] = Field(description='A default base is cleared (its row kept), not deleted.')


class TraceAttachmentOut(SluiceModel):
    attachment_id: str
    file_id: str
    filename: str
    status: str
    tier: str | None
    tokens: int | None = Field(description="The document's own extracted tokens.")
    contributes: Literal['overview', 'full_text', 'note', 'reference']
    tokens_contributed: int = Field(description='Tokens of the block this attachment accounts for, its excerpts included.')
    excerpts: int


class UpdateKnowledgeBase(SluiceModel):
    "PATCH /kb/{id}: what is sent changes; what is left out stays. Model and width never change."

    name: str | None = Field(default=None)
    description: str | None = Field(default=None)
    embedding_provider: str | None = Field(default=None)
    embedding_base_url: str | None = Field(default=None)
    embedding_secret_id: str | None = Field(default=None)
    ingestion_config: dict[str, Any] | None = Field(default=None)
    embedding_model: str | None = Field(default=None)
    embedding_dim: int | None = Field(default=None)
    collection_name: str | None = Field(default=None)
    scope: str | None = Field(default=None)
    text_search_language: str | None = Field(default=None)


class UpdateSyncSource(SluiceModel):
    "Only what changes; ``null`` clears secret_id, organizational_unit or schedule."

    name: str | None = Field(default=None)
    config: dict[str, Any] | None = Field(default=None)
    secret_id: str | None = Field(default=None)
    sync_mode: Literal['new_only', 'update_only', 'full'] | None = Field(default=None)
    organizational_unit: str | None = Field(default=None)
    schedule: str | None = Field(default=None)
    collection_name: str | None = Field(default=None, description="Must be the base's own: repoint with PATCH /rag/sync/sources/{id}.")


class VisionModelOut(SluiceModel):
    provider: str
    model: str
    max_image_side: int = Field(description='Images are downscaled to at most this many pixels on their longest side.')
    max_image_bytes: int = Field(description='The most bytes one image is sent as.')
    description: str


class VisionModelsOut(SluiceModel):
    models: list[VisionModelOut] = Field(description="The models a collection's ingestion_config.image_description may name (vision-capable only).")


class WritableKnowledgeBaseOut(SluiceModel):
    "A base as one who may change it sees it: also its key, its endpoint and its grants."

    id: str
    name: str
    collection_name: str
    scope: Literal['personal', 'org', 'app']
    org_id: str | None
    owner_id: str | None
    is_default: bool
    description: str
    embedding_provider: str
    embedding_model: str
    embedding_dim: int
    text_search_language: str
    ingestion_config: dict[str, Any] = Field(description="The collection's chunking and image description; a reader's view leaves out the image description's base_url and secret_id, as it leaves out the embedding's.")
    created_by: str
    created_at: datetime | None
    can_write: bool
    embedding_base_url: str | None
    embedding_secret_id: str | None
    grants: list[GrantOut]


AcceptedOut.model_rebuild()
AttachBody.model_rebuild()
AttachmentOut.model_rebuild()
AttachmentsOut.model_rebuild()
BaseOnCollectionOut.model_rebuild()
CatalogModelOut.model_rebuild()
ChatFileDetailOut.model_rebuild()
ChatFileOut.model_rebuild()
CloneSyncSource.model_rebuild()
CollectionInfoOut.model_rebuild()
CollectionOut.model_rebuild()
CollectionsOut.model_rebuild()
ConnectorOut.model_rebuild()
ConnectorsOut.model_rebuild()
ContextOut.model_rebuild()
ContextRequest.model_rebuild()
ContextTraceOut.model_rebuild()
ConversationDetailOut.model_rebuild()
ConversationOut.model_rebuild()
ConversationsOut.model_rebuild()
CreateKnowledgeBase.model_rebuild()
CreateSyncSource.model_rebuild()
DefaultModelOut.model_rebuild()
DeletedOut.model_rebuild()
DiagnosticCandidateOut.model_rebuild()
DiagnosticOut.model_rebuild()
DiagnosticRequest.model_rebuild()
DocumentContentOut.model_rebuild()
DocumentOut.model_rebuild()
DocumentsOut.model_rebuild()
DownloadLinkOut.model_rebuild()
DownloadOut.model_rebuild()
EmbeddingModelsOut.model_rebuild()
ErrorBody.model_rebuild()
ErrorDetail.model_rebuild()
ExcerptOut.model_rebuild()
FetchOut.model_rebuild()
FilterValuesOut.model_rebuild()
GrantOut.model_rebuild()
GrantRequest.model_rebuild()
HealthOut.model_rebuild()
ImageDescriptionOut.model_rebuild()
KnowledgeBaseIngestionOut.model_rebuild()
KnowledgeBaseOut.model_rebuild()
KnowledgeBasesOut.model_rebuild()
MessageOut.model_rebuild()
NewConversation.model_rebuild()
NewMessage.model_rebuild()
PageOut.model_rebuild()
PagesOut.model_rebuild()
ParsersOut.model_rebuild()
PoolDocumentOut.model_rebuild()
PoolDocumentsOut.model_rebuild()
PoolLimitsOut.model_rebuild()
PresignChatFile.model_rebuild()
PresignRequest.model_rebuild()
PresignedAcceptedOut.model_rebuild()
PresignedChatFileOut.model_rebuild()
PresignedPostOut.model_rebuild()
PreviewSyncSource.model_rebuild()
ProgressOut.model_rebuild()
RecipientRemovedOut.model_rebuild()
ReferenceOut.model_rebuild()
RegisterBody.model_rebuild()
RemovedOut.model_rebuild()
RepointSyncSource.model_rebuild()
ResultMetadataOut.model_rebuild()
RunCountsOut.model_rebuild()
SearchFilters.model_rebuild()
SearchOut.model_rebuild()
SearchRequest.model_rebuild()
SearchResultOut.model_rebuild()
SharePresignRequest.model_rebuild()
SharedAcceptedOut.model_rebuild()
SharedPresignedAcceptedOut.model_rebuild()
SupportedFormatsOut.model_rebuild()
SyncFileOut.model_rebuild()
SyncFilesOut.model_rebuild()
SyncRunOut.model_rebuild()
SyncRunsOut.model_rebuild()
SyncSourceOut.model_rebuild()
SyncSourcePreviewOut.model_rebuild()
SyncSourcesOut.model_rebuild()
TeardownErrorOut.model_rebuild()
TeardownOut.model_rebuild()
TesseractOut.model_rebuild()
TextSearchLanguagesOut.model_rebuild()
TextractOut.model_rebuild()
TornDownBaseOut.model_rebuild()
TraceAttachmentOut.model_rebuild()
UpdateKnowledgeBase.model_rebuild()
UpdateSyncSource.model_rebuild()
VisionModelOut.model_rebuild()
VisionModelsOut.model_rebuild()
WritableKnowledgeBaseOut.model_rebuild()

__all__ = [
    'SluiceModel',
    'AcceptedOut',
    'AttachBody',
    'AttachmentOut',
    'AttachmentsOut',
    'BaseOnCollectionOut',
    'CatalogModelOut',
    'ChatFileDetailOut',
    'ChatFileOut',
    'CloneSyncSource',
    'CollectionInfoOut',
    'CollectionOut',
    'CollectionsOut',
    'ConnectorOut',
    'ConnectorsOut',
    'ContextOut',
    'ContextRequest',
    'ContextTraceOut',
    'ConversationDetailOut',
    'ConversationOut',
    'ConversationsOut',
    'CreateKnowledgeBase',
    'CreateSyncSource',
    'DefaultModelOut',
    'DeletedOut',
    'DiagnosticCandidateOut',
    'DiagnosticOut',
    'DiagnosticRequest',
    'DocumentContentOut',
    'DocumentOut',
    'DocumentsOut',
    'DownloadLinkOut',
    'DownloadOut',
    'EmbeddingModelsOut',
    'ErrorBody',
    'ErrorDetail',
    'ExcerptOut',
    'FetchOut',
    'FilterValuesOut',
    'GrantOut',
    'GrantRequest',
    'HealthOut',
    'ImageDescriptionOut',
    'KnowledgeBaseIngestionOut',
    'KnowledgeBaseOut',
    'KnowledgeBasesOut',
    'MessageOut',
    'NewConversation',
    'NewMessage',
    'PageOut',
    'PagesOut',
    'ParsersOut',
    'PoolDocumentOut',
    'PoolDocumentsOut',
    'PoolLimitsOut',
    'PresignChatFile',
    'PresignRequest',
    'PresignedAcceptedOut',
    'PresignedChatFileOut',
    'PresignedPostOut',
    'PreviewSyncSource',
    'ProgressOut',
    'RecipientRemovedOut',
    'ReferenceOut',
    'RegisterBody',
    'RemovedOut',
    'RepointSyncSource',
    'ResultMetadataOut',
    'RunCountsOut',
    'SearchFilters',
    'SearchOut',
    'SearchRequest',
    'SearchResultOut',
    'SharePresignRequest',
    'SharedAcceptedOut',
    'SharedPresignedAcceptedOut',
    'SupportedFormatsOut',
    'SyncFileOut',
    'SyncFilesOut',
    'SyncRunOut',
    'SyncRunsOut',
    'SyncSourceOut',
    'SyncSourcePreviewOut',
    'SyncSourcesOut',
    'TeardownErrorOut',
    'TeardownOut',
    'TesseractOut',
    'TextSearchLanguagesOut',
    'TextractOut',
    'TornDownBaseOut',
    'TraceAttachmentOut',
    'UpdateKnowledgeBase',
    'UpdateSyncSource',
    'VisionModelOut',
    'VisionModelsOut',
    'WritableKnowledgeBaseOut',
]
