"""The settings, one section per concern: each the home of its variables, their defaults and why.

A section is a pydantic-settings model read from the environment. A function's settings are the
sections it needs, composed by inheritance (``sluice.config.functions``) as Powertools' cookbook
composes environment models; a context is handed only the sections its code reads, so a module
that reaches for another concern's setting fails the type check, not a deployment.

A section names in ``REQUIRES`` the variables a function that has it cannot start without (a
queue it sends to, a workflow it starts): those are what ``template.yaml`` must declare for the
function, what ``sam local``'s env file must fill, and what the handler checks at cold start.
Every other field has a default that works on a deployed stack.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

MIB = 1024 * 1024

# What a section may require: an environment variable's name, or DATABASE for
# "DATABASE_URL or DATABASE_SECRET_ID".
DATABASE = "DATABASE"


class Section(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")
    REQUIRES: ClassVar[tuple[str, ...]] = ()


# --- where things are --------------------------------------------------------------------------

class DatabaseSettings(Section):
    """A URL, or a Secrets Manager secret holding the usual RDS fields (sluice.db.connection)."""

    REQUIRES: ClassVar[tuple[str, ...]] = (DATABASE,)
    database_url: str = Field("", alias="DATABASE_URL")
    database_secret_id: str = Field("", alias="DATABASE_SECRET_ID")
    # An RDS Proxy endpoint that replaces the host of the URL or secret (template DatabaseProxyHost).
    database_proxy_host: str = Field("", alias="DATABASE_PROXY_HOST")
    # Per process. A Lambda environment serves one event at a time: the template sets 1 (DbPoolMaxSize);
    # the local runtime, every function's environments as threads of one process, keeps more.
    db_pool_max_size: int = Field(4, alias="DB_POOL_MAX_SIZE", ge=1)


class AwsSettings(Section):
    """Where every AWS client goes (sluice.aws)."""

    # Instead of AWS (moto): set only by `sluice local env --for-sam` for `sam local`, which passes a
    # function only the variables its template declares. Empty on AWS.
    aws_endpoint_url: str = Field("", alias="SLUICE_AWS_ENDPOINT_URL")


class BucketSettings(Section):
    """The document bucket: every function that reads or deletes its objects."""

    REQUIRES: ClassVar[tuple[str, ...]] = ("SLUICE_BUCKET",)
    bucket_name: str = Field("sluice-local", alias="SLUICE_BUCKET")
    # Buckets the stack owns besides SLUICE_BUCKET (comma-separated): with it, the buckets no sync
    # source may read, whatever its credential (``stack_buckets``).
    stack_bucket_names: str = Field("", alias="SLUICE_STACK_BUCKETS")
    download_url_expires_seconds: int = Field(300, alias="DOWNLOAD_URL_EXPIRES_SECONDS")

    @property
    def stack_buckets(self) -> frozenset[str]:
        """Every bucket of this deployment: the document bucket and SLUICE_STACK_BUCKETS."""
        names = [self.bucket_name, *self.stack_bucket_names.split(",")]
        return frozenset(n.strip().lower() for n in names if n.strip())


class EncryptionSettings(Section):
    """The KMS key every object written is encrypted with (R-UP-4): every function that writes one."""

    REQUIRES: ClassVar[tuple[str, ...]] = ("SLUICE_KMS_KEY_ID",)
    kms_key_id: str = Field("", alias="SLUICE_KMS_KEY_ID")


class AssetSettings(Section):
    """Where the files a process reads are, when not where the package or layer keeps them. Read
    afresh on each use (``config.read``): a test or the local runtime points them elsewhere."""

    catalog_path: str = Field("", alias="SLUICE_CATALOG_PATH")  # infra/catalog/embedding_models.json
    migrations_dir: str = Field("", alias="SLUICE_MIGRATIONS_DIR")  # infra/migrations
    openapi_path: str = Field("", alias="SLUICE_OPENAPI_PATH")  # the committed openapi.json
    model_dir: str = Field("", alias="SLUICE_MODEL_DIR")  # the exported ONNX models
    tokenizer_path: str = Field("", alias="SLUICE_TOKENIZER_PATH")  # the bundled model's tokenizer.json
    # Threads for one inference; empty: the CPUs this process may run on.
    embed_threads: str = Field("", alias="SLUICE_EMBED_THREADS")
    soffice_path: str = Field("", alias="SOFFICE_PATH")  # LibreOffice, for legacy .doc
    tessdata_prefix: str = Field("", alias="TESSDATA_PREFIX")  # Tesseract's language data


# --- the pipeline's queues ---------------------------------------------------------------------

class IngestQueueSettings(Section):
    """The stage queue S3 events arrive on: where a retry sends its parse job."""

    REQUIRES: ClassVar[tuple[str, ...]] = ("INGEST_QUEUE_URL",)
    ingest_queue_url: str = Field("", alias="INGEST_QUEUE_URL")


class StageQueueSettings(IngestQueueSettings):
    """The queues of the three stages, where the reaper resumes a stalled document."""

    REQUIRES: ClassVar[tuple[str, ...]] = ("CHUNK_QUEUE_URL", "EMBED_QUEUE_URL")
    chunk_queue_url: str = Field("", alias="CHUNK_QUEUE_URL")
    embed_queue_url: str = Field("", alias="EMBED_QUEUE_URL")


class RecoverySettings(Section):
    """When a document in flight is taken for lost (sluice.ingest.recovery)."""

    # A document processing with no change for this long lost its next message. Longer than any stage
    # and any redelivery the queues still owe: the embed stage's 900 s timeout, and the 5,400 s a
    # failed embed message stays invisible before the queue delivers it again.
    stale_after_seconds: int = Field(7200, alias="STALE_AFTER_SECONDS", ge=60)


class DeadLetterSettings(Section):
    """The stages' dead-letter queues, by ARN: which stage a dead letter comes from."""

    REQUIRES: ClassVar[tuple[str, ...]] = ("INGEST_DLQ_ARN", "CHUNK_DLQ_ARN", "EMBED_DLQ_ARN")
    ingest_dlq_arn: str = Field("", alias="INGEST_DLQ_ARN")
    chunk_dlq_arn: str = Field("", alias="CHUNK_DLQ_ARN")
    embed_dlq_arn: str = Field("", alias="EMBED_DLQ_ARN")


# --- uploads and what may enter ----------------------------------------------------------------

class UploadSettings(Section):
    """Upload ceilings (R-UP-1) and the direct-upload limit of a Lambda request."""

    max_upload_size_mb: int = Field(50, alias="MAX_UPLOAD_SIZE_MB")
    # A Lambda event holds 6 MB, and the file arrives base64-encoded inside it.
    direct_upload_max_mb: int = Field(4, alias="DIRECT_UPLOAD_MAX_MB")
    # Long enough to start a 50 MB upload; the fields can be replayed until then, so no longer.
    presign_expires_seconds: int = Field(300, alias="PRESIGN_EXPIRES_SECONDS")

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_size_mb * MIB

    @property
    def direct_upload_max_bytes(self) -> int:
        return self.direct_upload_max_mb * MIB


class PoolSettings(Section):
    """Access and pools (R-ACC-5, R-ACC-6): the kill switch, a private pool's cap, the upload rates."""

    private_doc_cap: int = Field(20, alias="PRIVATE_DOC_CAP")
    indexing_paused: bool = Field(False, alias="INDEXING_PAUSED")
    # On AWS the kill switch is also an SSM parameter an operator flips without a deploy.
    indexing_paused_parameter: str = Field("", alias="INDEXING_PAUSED_PARAMETER")
    indexing_paused_cache_seconds: int = Field(30, alias="INDEXING_PAUSED_CACHE_SECONDS")
    upload_rate_per_minute: int = Field(10, alias="UPLOAD_RATE_PER_MINUTE")
    upload_rate_per_day: int = Field(50, alias="UPLOAD_RATE_PER_DAY")
    # How many users one document may be shared with in one upload.
    pool_max_recipients: int = Field(50, alias="POOL_MAX_RECIPIENTS")
    # How often one failed document may be retried (R-DOC-5). Each retry re-runs the whole pipeline, OCR
    # (Textract) included, and is counted as an upload; three cover a provider outage and a fixed
    # credential, and past them re-uploading (counted and checked again) is the way.
    document_max_retries: int = Field(3, ge=0, alias="DOCUMENT_MAX_RETRIES")


# --- the console (R-UI-1) -----------------------------------------------------------------------

class ConsoleSettings(Section):
    """What the console page is told and may reach: the deployment's token issuer and the console's
    OpenID Connect client (ConsoleClientId; empty: no sign-in redirect, a pasted token only), and any
    origin besides the issuer's that its sign-in must call (an IdP whose token endpoint lives elsewhere,
    as Cognito's hosted domain does). The Content-Security-Policy allows these and nothing else."""

    console_issuer: str = Field("", alias="CONSOLE_ISSUER")
    console_client_id: str = Field("", alias="CONSOLE_CLIENT_ID")
    console_connect_origins: str = Field("", alias="CONSOLE_CONNECT_ORIGINS")


# --- parsing -----------------------------------------------------------------------------------

class ParsingSettings(Section):
    """Parsing budgets (R-PARSE-1, R-ARC-1)."""

    parsed_text_max_chars: int = Field(5_000_000, alias="PARSED_TEXT_MAX_CHARS")
    pdf_max_pages: int = Field(2000, alias="PDF_MAX_PAGES")
    sheet_max_cells: int = Field(1_000_000, alias="SHEET_MAX_CELLS")
    archive_max_entries: int = Field(5000, alias="ARCHIVE_MAX_ENTRIES")
    archive_max_bytes: int = Field(200 * MIB, alias="ARCHIVE_MAX_BYTES")
    archive_max_ratio: int = Field(100, alias="ARCHIVE_MAX_RATIO")
    archive_max_member_bytes: int = Field(50 * MIB, alias="ARCHIVE_MAX_MEMBER_BYTES")
    parse_timeout_seconds: int = Field(120, alias="PARSE_TIMEOUT_SECONDS")
    parse_memory_mb: int = Field(1536, alias="PARSE_MEMORY_MB")
    # One deadline for a whole parse (issue 37): the Lambda's remaining time less this margin, kept back
    # to write the parsed text and the row after the children and Textract (a 50 MB text to S3, a few
    # statements); the first child, Textract and the second child all stop within it.
    parse_deadline_margin_seconds: int = Field(20, ge=1, alias="PARSE_DEADLINE_MARGIN_SECONDS")


class OcrSettings(Section):
    """OCR (R-PARSE-7): which engine reads page images for the whole deployment (sluice.parsing.ocr)."""

    ocr_provider: Literal["tesseract", "textract"] = Field("tesseract", alias="SLUICE_OCR_PROVIDER")
    # The Tesseract languages the parse function's layer holds, declared to every function (only the
    # parse function carries the layer); None: read the machine's own language data (local runtime).
    ocr_languages: str | None = Field(None, alias="SLUICE_OCR_LANGUAGES")
    # With Textract (sluice.parsing.textract): at most this many DetectDocumentText calls at once for
    # one document, and the seconds one document's pages may take with their retries (the parse
    # function's limit is 300 s, the parse child's PARSE_TIMEOUT_SECONDS 120 of them).
    textract_max_concurrency: int = Field(4, ge=1, le=32, alias="TEXTRACT_MAX_CONCURRENCY")
    textract_seconds: float = Field(120, gt=0, le=280, alias="TEXTRACT_SECONDS")
    # OCR spend (issue 37): a writer chooses ``ocr: force`` and ``max_pages`` up to 10,000 per upload, and
    # every page is a Textract call (or a Tesseract page of CPU). The operator's ceiling on the pages one
    # document is OCR'd (the collection's default, 1,000); whether ``force`` (every page, text or not)
    # may be asked for at all; and the pages one tenant (an organization, or a user outside one) may
    # have OCR'd a day, org and app bases included: 20,000 is about $30 of Textract a day. 0: no budget.
    ocr_max_pages_per_document: int = Field(1000, ge=0, le=10_000, alias="OCR_MAX_PAGES_PER_DOCUMENT")
    ocr_force_allowed: bool = Field(True, alias="OCR_FORCE_ALLOWED")
    ocr_pages_per_tenant_per_day: int = Field(20_000, ge=0, alias="OCR_PAGES_PER_TENANT_PER_DAY")


# --- embedding ---------------------------------------------------------------------------------

class EmbeddingSettings(Section):
    """What a base embeds with and how much one document may cost."""

    embed_batch_size: int = Field(64, alias="EMBED_BATCH_SIZE")
    # Chunks one document may become, whatever its chunking settings: each is embedded and billed to
    # the base's key. The parse budget (5,000,000 characters) at the bundled model's chunk size (635,
    # overlap 51) is about 8,600.
    max_chunks_per_document: int = Field(10_000, alias="MAX_CHUNKS_PER_DOCUMENT")


class DefaultEmbeddingSettings(Section):
    """What a base embeds with when its creator names nothing: the operator's choice (stack parameters
    DefaultEmbeddingProvider / DefaultEmbeddingModel); the bundled model runs on Lambda as it does here."""

    default_embedding_provider: str = Field("local", alias="DEFAULT_EMBEDDING_PROVIDER")
    default_embedding_model: str = Field("all-MiniLM-L6-v2", alias="DEFAULT_EMBEDDING_MODEL")


class EndpointSettings(Section):
    """Host names and CIDR ranges a base's endpoint may reach although they are not public (a
    self-hosted Ollama in the VPC): sluice.embedding.endpoints."""

    embedding_allowed_endpoints: str = Field("", alias="EMBEDDING_ALLOWED_ENDPOINTS")


class ImageDescriptionSettings(Section):
    """Image description (R-PARSE-6): a collection's vision model describes a PDF's images. At most this
    many distinct images a document; smaller ones (icons, rules, bullets) are skipped; this many calls at
    once; the describe step gives up on what it has not started after this long (it runs in the embed
    function, whose limit is 900 s)."""

    image_description_max_per_doc: int = Field(50, ge=0, alias="IMAGE_DESCRIPTION_MAX_PER_DOC")
    image_description_min_pixels: int = Field(5_000, ge=0, alias="IMAGE_DESCRIPTION_MIN_PIXELS")
    image_description_concurrency: int = Field(4, ge=1, le=16, alias="IMAGE_DESCRIPTION_CONCURRENCY")
    image_description_seconds: int = Field(600, ge=1, alias="IMAGE_DESCRIPTION_SECONDS")


# --- search ------------------------------------------------------------------------------------

class RerankerSettings(Section):
    """The deployment's reranker (sluice.embedding.rerank): none, an HTTP service, or Bedrock."""

    reranker_provider: Literal["none", "http", "bedrock"] = Field("none", alias="RERANKER_PROVIDER")
    reranker_url: str = Field("", alias="RERANKER_URL")
    reranker_api: Literal["cohere", "tei"] = Field("cohere", alias="RERANKER_API")
    reranker_model: str = Field("", alias="RERANKER_MODEL")
    reranker_secret_id: str = Field("", alias="RERANKER_SECRET_ID")
    reranker_scores: Literal["probabilities", "logits"] = Field("probabilities", alias="RERANKER_SCORES")


# --- source syncs (SPEC §10) -------------------------------------------------------------------

class SyncWorkflowSettings(Section):
    """The state machine the API and the schedule start runs of."""

    REQUIRES: ClassVar[tuple[str, ...]] = ("SYNC_STATE_MACHINE_ARN",)
    sync_state_machine_arn: str = Field("", alias="SYNC_STATE_MACHINE_ARN")


class SyncDueQueueSettings(Section):
    """The queue the schedule hands its due runs out on, one message each; its consumer starts them."""

    REQUIRES: ClassVar[tuple[str, ...]] = ("SYNC_DUE_QUEUE_URL",)
    sync_due_queue_url: str = Field("", alias="SYNC_DUE_QUEUE_URL")


class SyncSettings(Section):
    """A run's batches, waits and bounds, and what a source may read (never the stack's own buckets:
    ``BucketSettings.stack_buckets``)."""

    # Files one Map iteration of a run decides and fetches (and the most bytes it fetches, MB).
    sync_batch_files: int = Field(25, alias="SYNC_BATCH_FILES")
    sync_batch_mb: int = Field(200, alias="SYNC_BATCH_MB")
    # How long one await task watches the pipeline before the state machine waits and asks again, the
    # wait between, and how long a run waits in all for what it handed the pipeline.
    sync_await_seconds: int = Field(40, alias="SYNC_AWAIT_SECONDS")
    sync_wait_seconds: int = Field(10, alias="SYNC_WAIT_SECONDS")
    sync_ingest_timeout_seconds: int = Field(6 * 3600, alias="SYNC_INGEST_TIMEOUT_SECONDS")
    # Role ARNs (comma-separated, * wildcards) an S3 source's secret may name for the run to assume.
    sync_assumable_role_arns: str = Field("", alias="SYNC_ASSUMABLE_ROLE_ARNS")
    # Buckets (comma-separated, * wildcards) of the deployment's own account that a source may read
    # with the function's own role instead of a secret; empty: none.
    sync_function_role_buckets: str = Field("", alias="SYNC_FUNCTION_ROLE_BUCKETS")
    # Host names and CIDR ranges (comma-separated) every source connector may reach although they are
    # not public (an intranet site, a Data Center install, a test's loopback server), or, for a SaaS
    # connector, besides the service's documented hosts: sluice.sync.outbound. Empty: public only.
    sync_allowed_hosts: str = Field("", alias="SYNC_ALLOWED_HOSTS")
    sync_min_schedule_minutes: int = Field(15, alias="SYNC_MIN_SCHEDULE_MINUTES")
    # The sources one base may have, and the files one run lists at most (a listing cut there is not
    # whole, so the run removes nothing).
    sync_max_sources_per_base: int = Field(20, ge=1, alias="SYNC_MAX_SOURCES_PER_BASE")
    sync_max_keys_per_run: int = Field(100_000, ge=1, alias="SYNC_MAX_KEYS_PER_RUN")
    # Each source keeps the per-file lists of its latest this many runs; the reaper deletes older ones'.
    sync_run_files_keep_runs: int = Field(10, ge=1, alias="SYNC_RUN_FILES_KEEP_RUNS")
    # The web connector (R-SYNC-6): the most pages one crawl lists, the fastest rate a source may ask of
    # one host (requests a minute), how long one list step of a crawl runs before the state machine
    # starts the next (below the sync function's timeout; a crawl listed in one call is cut there and
    # is not whole), and the user agent every request carries (the stack's WebUserAgent: a contact URL).
    web_max_pages_per_run: int = Field(10_000, ge=1, alias="WEB_MAX_PAGES_PER_RUN")
    web_max_rate_per_minute: int = Field(600, ge=1, alias="WEB_MAX_RATE_PER_MINUTE")
    web_step_seconds: int = Field(600, ge=1, alias="WEB_STEP_SECONDS")
    web_user_agent: str = Field("SluiceBot/1.0 (+https://github.com/sluice-rag/sluice)", min_length=1,
                                max_length=256, alias="WEB_USER_AGENT")


# --- teardowns (R-TD-1..3) ---------------------------------------------------------------------

class TeardownWorkflowSettings(Section):
    """The workflow the delete routes and the sweep start."""

    REQUIRES: ClassVar[tuple[str, ...]] = ("TEARDOWN_STATE_MACHINE_ARN",)
    teardown_state_machine_arn: str = Field("", alias="TEARDOWN_STATE_MACHINE_ARN")


class TeardownSettings(Section):
    """The waits and budgets of a teardown's request and steps."""

    # A delete waits this long for the writes running on its collection name, then answers 409.
    teardown_request_wait_seconds: float = Field(15, alias="TEARDOWN_REQUEST_WAIT_SECONDS")
    # A step waits this long for a table lock (a long query on the table) before it fails and is retried.
    teardown_lock_timeout_seconds: float = Field(30, alias="TEARDOWN_LOCK_TIMEOUT_SECONDS")
    # One task call works this long, then hands back to the workflow, which calls it again.
    teardown_step_budget_seconds: float = Field(60, alias="TEARDOWN_STEP_BUDGET_SECONDS")
    # The sweep starts again a reservation that has made no progress for this long (R-TD-2).
    teardown_sweep_after_seconds: int = Field(3600, alias="TEARDOWN_SWEEP_AFTER_SECONDS")


# --- chat files and attachments (SPEC §12, seed 001) -------------------------------------------

class ChatQueueSettings(Section):
    """The queue that runs attachment work off the request."""

    REQUIRES: ClassVar[tuple[str, ...]] = ("CHAT_QUEUE_URL",)
    chat_queue_url: str = Field("", alias="CHAT_QUEUE_URL")


class ChatDeadLetterSettings(Section):
    """The chat queue's dead-letter queue, by ARN: it tells a dead letter from a first delivery."""

    REQUIRES: ClassVar[tuple[str, ...]] = ("CHAT_DLQ_ARN",)
    chat_dlq_arn: str = Field("", alias="CHAT_DLQ_ARN")


class ChatArrivalDeadLetterSettings(Section):
    """Presigned chat uploads arrive on a queue of their own (their check parses; attachment work
    embeds): its dead-letter queue, by ARN."""

    REQUIRES: ClassVar[tuple[str, ...]] = ("CHAT_ARRIVAL_DLQ_ARN",)
    chat_arrival_dlq_arn: str = Field("", alias="CHAT_ARRIVAL_DLQ_ARN")


class ChatSettings(Section):
    """A chat file's ceiling, its tiers and its overview."""

    chat_max_upload_size_mb: int = Field(10, alias="CHAT_MAX_UPLOAD_SIZE_MB")
    # A direct chat upload is parsed inside the request: it gets this long, below API Gateway's 29 s.
    # A presigned upload is parsed by the worker within PARSE_TIMEOUT_SECONDS.
    chat_parse_timeout_seconds: int = Field(20, ge=1, alias="CHAT_PARSE_TIMEOUT_SECONDS")
    # Tiers by extracted tokens: up to the first, the full text; above, chunks, embeddings and an
    # overview; above the second, the overview is reduced in sections (sluice.chat.overview).
    chat_full_text_max_tokens: int = Field(4000, ge=1, alias="CHAT_FULL_TEXT_MAX_TOKENS")
    chat_large_tokens: int = Field(40_000, ge=1, alias="CHAT_LARGE_TOKENS")
    # The overview's size, the chunks one summarising call reads, and how many summaries one reducing
    # call of a large document reads.
    chat_overview_tokens: int = Field(300, ge=50, alias="CHAT_OVERVIEW_TOKENS")
    chat_overview_window_chunks: int = Field(16, ge=1, alias="CHAT_OVERVIEW_WINDOW_CHUNKS")
    chat_overview_fan_in: int = Field(8, ge=2, alias="CHAT_OVERVIEW_FAN_IN")
    # The scoped excerpt search of R-CHAT-3: top_k (threshold 0 is not a setting: it is the rule).
    chat_excerpt_count: int = Field(5, ge=1, le=50, alias="CHAT_EXCERPT_COUNT")
    chat_max_attachments: int = Field(5, ge=1, alias="CHAT_MAX_ATTACHMENTS")
    # Pages of a TIFF (or PDF) rendered to PNG for a model that reads images.
    chat_tiff_max_inline_pages: int = Field(5, ge=1, le=50, alias="CHAT_TIFF_MAX_INLINE_PAGES")

    @property
    def chat_max_upload_bytes(self) -> int:
        return self.chat_max_upload_size_mb * MIB


class ChatModelSettings(Section):
    """The deployment's chat model, used for attachment overviews: none | openai | bedrock. With none,
    the overview is extractive (leading sentences of each window), labelled so in the record."""

    chat_model_provider: Literal["none", "openai", "bedrock"] = Field("none", alias="CHAT_MODEL_PROVIDER")
    chat_model: str = Field("", alias="CHAT_MODEL")
    chat_model_base_url: str = Field("", alias="CHAT_MODEL_BASE_URL")
    chat_model_secret_id: str = Field("", alias="CHAT_MODEL_SECRET_ID")


# --- local development -------------------------------------------------------------------------

class DevSettings(Section):
    """The key the local gateway verifies tokens with. Empty means the one `sluice local up` generates
    for its data directory (sluice.local.tokens.dev_secret)."""

    dev_jwt_secret: str = Field("", alias="SLUICE_DEV_JWT_SECRET")
