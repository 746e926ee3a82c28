"""Settings, read once from the environment (and, on AWS, the function's configuration)."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

MIB = 1024 * 1024


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    # Storage
    bucket_name: str = Field("sluice-local", alias="SLUICE_BUCKET")
    kms_key_id: str = Field("", alias="SLUICE_KMS_KEY_ID")
    # Long enough to start a 50 MB upload; the fields can be replayed until then, so no longer.
    presign_expires_seconds: int = Field(300, alias="PRESIGN_EXPIRES_SECONDS")
    download_url_expires_seconds: int = Field(300, alias="DOWNLOAD_URL_EXPIRES_SECONDS")
    # Where a retry sends its parse job (the stage queue S3 events arrive on)
    ingest_queue_url: str = Field("", alias="INGEST_QUEUE_URL")
    # The dead-letter queues, by ARN: which stage a dead letter comes from
    ingest_dlq_arn: str = Field("", alias="INGEST_DLQ_ARN")
    chunk_dlq_arn: str = Field("", alias="CHUNK_DLQ_ARN")
    embed_dlq_arn: str = Field("", alias="EMBED_DLQ_ARN")
    # The queues of the chunk and embed stages, where the reaper resumes a stalled document
    chunk_queue_url: str = Field("", alias="CHUNK_QUEUE_URL")
    embed_queue_url: str = Field("", alias="EMBED_QUEUE_URL")
    # A document processing with no change for this long lost its next message (sluice.ingest.recovery).
    # Longer than any stage and any redelivery the queues still owe: the embed stage's 900 s timeout,
    # and the 5,400 s a failed embed message stays invisible before the queue delivers it again.
    stale_after_seconds: int = Field(7200, alias="STALE_AFTER_SECONDS", ge=60)

    # Database: a URL, or a Secrets Manager secret holding the usual RDS fields
    database_url: str = Field("", alias="DATABASE_URL")
    database_secret_id: str = Field("", alias="DATABASE_SECRET_ID")
    # An RDS Proxy endpoint that replaces the host of the URL or secret (template DatabaseProxyHost).
    database_proxy_host: str = Field("", alias="DATABASE_PROXY_HOST")
    # Per process. A Lambda environment serves one event at a time: the template sets 1 (DbPoolMaxSize);
    # the local runtime, every function's environments as threads of one process, keeps more.
    db_pool_max_size: int = Field(4, alias="DB_POOL_MAX_SIZE", ge=1)

    # Upload ceilings (R-UP-1) and the direct-upload limit of a Lambda request
    max_upload_size_mb: int = Field(50, alias="MAX_UPLOAD_SIZE_MB")
    chat_max_upload_size_mb: int = Field(10, alias="CHAT_MAX_UPLOAD_SIZE_MB")
    # A Lambda event holds 6 MB, and the file arrives base64-encoded inside it.
    direct_upload_max_mb: int = Field(4, alias="DIRECT_UPLOAD_MAX_MB")

    # Parsing budgets (R-PARSE-1, R-ARC-1)
    parsed_text_max_chars: int = Field(5_000_000, alias="PARSED_TEXT_MAX_CHARS")
    pdf_max_pages: int = Field(2000, alias="PDF_MAX_PAGES")
    sheet_max_cells: int = Field(1_000_000, alias="SHEET_MAX_CELLS")
    archive_max_entries: int = Field(5000, alias="ARCHIVE_MAX_ENTRIES")
    archive_max_bytes: int = Field(200 * MIB, alias="ARCHIVE_MAX_BYTES")
    archive_max_ratio: int = Field(100, alias="ARCHIVE_MAX_RATIO")
    archive_max_member_bytes: int = Field(50 * MIB, alias="ARCHIVE_MAX_MEMBER_BYTES")
    parse_timeout_seconds: int = Field(120, alias="PARSE_TIMEOUT_SECONDS")
    parse_memory_mb: int = Field(1536, alias="PARSE_MEMORY_MB")

    # OCR (R-PARSE-7): which engine reads page images for the whole deployment (sluice.parsing.ocr).
    ocr_provider: Literal["tesseract", "textract"] = Field("tesseract", alias="SLUICE_OCR_PROVIDER")
    # The Tesseract languages the parse function's layer holds, declared to every function (only the
    # parse function carries the layer); None: read the machine's own language data (local runtime).
    ocr_languages: str | None = Field(None, alias="SLUICE_OCR_LANGUAGES")

    # Embedding
    embed_batch_size: int = Field(64, alias="EMBED_BATCH_SIZE")
    # What a base embeds with when its creator names nothing: the operator's choice (stack parameters
    # DefaultEmbeddingProvider / DefaultEmbeddingModel); the bundled model runs on Lambda as it does here.
    default_embedding_provider: str = Field("local", alias="DEFAULT_EMBEDDING_PROVIDER")
    default_embedding_model: str = Field("all-MiniLM-L6-v2", alias="DEFAULT_EMBEDDING_MODEL")
    # Chunks one document may become, whatever its chunking settings: each is embedded and
    # billed to the base's key. The parse budget (5,000,000 characters) at the bundled model's
    # chunk size (635, overlap 51) is about 8,600.
    max_chunks_per_document: int = Field(10_000, alias="MAX_CHUNKS_PER_DOCUMENT")
    # Host names and CIDR ranges a base's embedding_base_url may reach although they are not
    # public (a self-hosted Ollama in the VPC): sluice.embedding.endpoints.
    embedding_allowed_endpoints: str = Field("", alias="EMBEDDING_ALLOWED_ENDPOINTS")

    # Image description (R-PARSE-6, issue 18): a collection's vision model describes a PDF's images.
    # At most this many distinct images a document; smaller ones (icons, rules, bullets) are skipped;
    # this many calls at once; the describe step gives up on what it has not started after this long
    # (it runs in the embed function, whose limit is 900 s).
    image_description_max_per_doc: int = Field(50, ge=0, alias="IMAGE_DESCRIPTION_MAX_PER_DOC")
    image_description_min_pixels: int = Field(5_000, ge=0, alias="IMAGE_DESCRIPTION_MIN_PIXELS")
    image_description_concurrency: int = Field(4, ge=1, le=16, alias="IMAGE_DESCRIPTION_CONCURRENCY")
    image_description_seconds: int = Field(600, ge=1, alias="IMAGE_DESCRIPTION_SECONDS")

    # OCR with Textract (R-PARSE-7, issue 28; ocr_provider textract, sluice.parsing.textract): at most this
    # many DetectDocumentText calls at once for one document, and the seconds one document's pages may
    # take with their retries (the parse function's limit is 300 s, the parse child's
    # PARSE_TIMEOUT_SECONDS 120 of them). ocr_provider itself is the ocr branch's (SLUICE_OCR_PROVIDER).
    textract_max_concurrency: int = Field(4, ge=1, le=32, alias="TEXTRACT_MAX_CONCURRENCY")
    textract_seconds: float = Field(120, gt=0, le=280, alias="TEXTRACT_SECONDS")

    # Access and pools (R-ACC-5)
    private_doc_cap: int = Field(20, alias="PRIVATE_DOC_CAP")
    indexing_paused: bool = Field(False, alias="INDEXING_PAUSED")
    # On AWS the kill switch is also an SSM parameter an operator flips without a deploy.
    indexing_paused_parameter: str = Field("", alias="INDEXING_PAUSED_PARAMETER")
    indexing_paused_cache_seconds: int = Field(30, alias="INDEXING_PAUSED_CACHE_SECONDS")
    upload_rate_per_minute: int = Field(10, alias="UPLOAD_RATE_PER_MINUTE")
    upload_rate_per_day: int = Field(50, alias="UPLOAD_RATE_PER_DAY")
    # R-ACC-6: how many users one document may be shared with in one upload.
    pool_max_recipients: int = Field(50, alias="POOL_MAX_RECIPIENTS")

    # Source syncs (issue 14, SPEC §10). The state machine the API and the schedule start runs of.
    sync_state_machine_arn: str = Field("", alias="SYNC_STATE_MACHINE_ARN")
    # The queue the schedule hands its due runs out on, one message each; its consumer starts them.
    sync_due_queue_url: str = Field("", alias="SYNC_DUE_QUEUE_URL")
    # Files one Map iteration of a run decides and fetches (and the most bytes it fetches, MB).
    sync_batch_files: int = Field(25, alias="SYNC_BATCH_FILES")
    sync_batch_mb: int = Field(200, alias="SYNC_BATCH_MB")
    # How long one await task watches the pipeline before the state machine waits and asks again,
    # the wait between, and how long a run waits in all for what it handed the pipeline.
    sync_await_seconds: int = Field(40, alias="SYNC_AWAIT_SECONDS")
    sync_wait_seconds: int = Field(10, alias="SYNC_WAIT_SECONDS")
    sync_ingest_timeout_seconds: int = Field(6 * 3600, alias="SYNC_INGEST_TIMEOUT_SECONDS")
    # Role ARNs (comma-separated, * wildcards) an S3 source's secret may name for the run to assume.
    sync_assumable_role_arns: str = Field("", alias="SYNC_ASSUMABLE_ROLE_ARNS")
    # Buckets (comma-separated, * wildcards) of the deployment's own account that a source may read
    # with the function's own role instead of a secret; empty: none.
    sync_function_role_buckets: str = Field("", alias="SYNC_FUNCTION_ROLE_BUCKETS")
    sync_min_schedule_minutes: int = Field(15, alias="SYNC_MIN_SCHEDULE_MINUTES")
    # Buckets the stack owns besides SLUICE_BUCKET (comma-separated): with it, the buckets no sync
    # source may read, whatever its credential (``stack_buckets``).
    stack_bucket_names: str = Field("", alias="SLUICE_STACK_BUCKETS")
    # Bounds (issue 26): the sources one base may have, and the files one run lists at most (a listing
    # cut there is not whole, so the run removes nothing).
    sync_max_sources_per_base: int = Field(20, ge=1, alias="SYNC_MAX_SOURCES_PER_BASE")
    sync_max_keys_per_run: int = Field(100_000, ge=1, alias="SYNC_MAX_KEYS_PER_RUN")
    # Each source keeps the per-file lists of its latest this many runs; the reaper deletes older ones'.
    sync_run_files_keep_runs: int = Field(10, ge=1, alias="SYNC_RUN_FILES_KEEP_RUNS")

    # Teardowns (R-TD-1..3): the workflow the delete routes start, and the waits and budgets of its steps.
    teardown_state_machine_arn: str = Field("", alias="TEARDOWN_STATE_MACHINE_ARN")
    # A delete waits this long for the writes running on its collection name, then answers 409.
    teardown_request_wait_seconds: float = Field(15, alias="TEARDOWN_REQUEST_WAIT_SECONDS")
    # A step waits this long for a table lock (a long query on the table) before it fails and is retried.
    teardown_lock_timeout_seconds: float = Field(30, alias="TEARDOWN_LOCK_TIMEOUT_SECONDS")
    # One task call works this long, then hands back to the workflow, which calls it again.
    teardown_step_budget_seconds: float = Field(60, alias="TEARDOWN_STEP_BUDGET_SECONDS")
    # The sweep starts again a reservation that has made no progress for this long (R-TD-2).
    teardown_sweep_after_seconds: int = Field(3600, alias="TEARDOWN_SWEEP_AFTER_SECONDS")

    # Chat files and conversation attachments (SPEC §12, seed 001). CHAT_MAX_UPLOAD_SIZE_MB is above.
    # The queue that runs attachment work off the request, and its dead-letter queue (by ARN).
    chat_queue_url: str = Field("", alias="CHAT_QUEUE_URL")
    chat_dlq_arn: str = Field("", alias="CHAT_DLQ_ARN")
    # Presigned chat uploads arrive on a queue of their own (their check parses; attachment work embeds):
    # its dead-letter queue, by ARN, tells a dead letter from a first delivery.
    chat_arrival_dlq_arn: str = Field("", alias="CHAT_ARRIVAL_DLQ_ARN")
    # A direct chat upload is parsed inside the request: it gets this long, below API Gateway's 29 s.
    # A presigned upload is parsed by the worker within PARSE_TIMEOUT_SECONDS.
    chat_parse_timeout_seconds: int = Field(20, ge=1, alias="CHAT_PARSE_TIMEOUT_SECONDS")
    # Tiers by extracted tokens: up to the first, the full text; above, chunks, embeddings and an
    # overview; above the second, the overview is reduced in sections (sluice.chat.overview).
    chat_full_text_max_tokens: int = Field(4000, ge=1, alias="CHAT_FULL_TEXT_MAX_TOKENS")
    chat_large_tokens: int = Field(40_000, ge=1, alias="CHAT_LARGE_TOKENS")
    # The overview's size, the chunks one summarising call reads, and how many summaries one
    # reducing call of a large document reads.
    chat_overview_tokens: int = Field(300, ge=50, alias="CHAT_OVERVIEW_TOKENS")
    chat_overview_window_chunks: int = Field(16, ge=1, alias="CHAT_OVERVIEW_WINDOW_CHUNKS")
    chat_overview_fan_in: int = Field(8, ge=2, alias="CHAT_OVERVIEW_FAN_IN")
    # The scoped excerpt search of R-CHAT-3: top_k (threshold 0 is not a setting: it is the rule).
    chat_excerpt_count: int = Field(5, ge=1, le=50, alias="CHAT_EXCERPT_COUNT")
    chat_max_attachments: int = Field(5, ge=1, alias="CHAT_MAX_ATTACHMENTS")
    # Pages of a TIFF (or PDF) rendered to PNG for a model that reads images.
    chat_tiff_max_inline_pages: int = Field(5, ge=1, le=50, alias="CHAT_TIFF_MAX_INLINE_PAGES")
    # The deployment's chat model, used for attachment overviews: none | openai | bedrock. With none,
    # the overview is extractive (leading sentences of each window), labelled so in the record.
    chat_model_provider: Literal["none", "openai", "bedrock"] = Field("none", alias="CHAT_MODEL_PROVIDER")
    chat_model: str = Field("", alias="CHAT_MODEL")
    chat_model_base_url: str = Field("", alias="CHAT_MODEL_BASE_URL")
    chat_model_secret_id: str = Field("", alias="CHAT_MODEL_SECRET_ID")

    # Local development: the key the local gateway verifies tokens with. Empty means the one
    # `sluice local up` generates for its data directory (sluice.local.tokens.dev_secret).
    dev_jwt_secret: str = Field("", alias="SLUICE_DEV_JWT_SECRET")
    # Where every AWS client goes instead of AWS (moto): set only by `sluice local env --for-sam` for
    # `sam local`, which passes a function only the variables its template declares. Empty on AWS.
    aws_endpoint_url: str = Field("", alias="SLUICE_AWS_ENDPOINT_URL")

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_size_mb * MIB

    @property
    def chat_max_upload_bytes(self) -> int:
        return self.chat_max_upload_size_mb * MIB

    @property
    def direct_upload_max_bytes(self) -> int:
        return self.direct_upload_max_mb * MIB

    @property
    def stack_buckets(self) -> frozenset[str]:
        """Every bucket of this deployment: the document bucket and SLUICE_STACK_BUCKETS."""
        names = [self.bucket_name, *self.stack_bucket_names.split(",")]
        return frozenset(n.strip().lower() for n in names if n.strip())


# What a function may require (``require``): an environment variable's name, or DATABASE for
# "DATABASE_URL or DATABASE_SECRET_ID".
DATABASE = "DATABASE"


class MissingSettingError(RuntimeError):
    """A function started without a variable it needs: it names the variable, at cold start."""


def require(settings: Settings, names: tuple[str, ...]) -> None:
    """Refuse to run without every variable in ``names`` set (non-empty)."""
    by_alias = {field.alias: name for name, field in Settings.model_fields.items()}
    missing = []
    for name in names:
        if name == DATABASE:
            if not (settings.database_url or settings.database_secret_id):
                missing.append("DATABASE_URL or DATABASE_SECRET_ID")
        elif not getattr(settings, by_alias[name]):
            missing.append(name)
    if missing:
        raise MissingSettingError("This function needs " + ", ".join(missing) + " set; see template.yaml.")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


def reset_settings() -> None:
    """Forget the cached settings (the local runtime and tests change the environment)."""
    get_settings.cache_clear()
