"""The error taxonomy: every failure Sluice raises on purpose, and its HTTP face (R-ERR-1).

Each class names one failure. Handlers map any ``SluiceError`` to
``{"error": {"code", "message", "details"}}`` with ``status``; anything else is a
500 whose body says nothing about hosts, buckets, SQL or URLs.

``DocumentRefused`` marks refusals that Sluice itself raised while reading a
document: their message is written whole into ``documents.error_message``
(R-DOC-4), where a library's own exception text never goes.
"""

from __future__ import annotations

from typing import Any


class SluiceError(Exception):
    """Anything Sluice did not raise on purpose: a 500 whose body names no host, bucket, SQL or URL."""

    status: int = 500
    code: str = "INTERNAL_ERROR"

    def __init__(
        self,
        message: str,
        *,
        fields: dict[str, str] | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        if fields:
            self.details["fields"] = dict(fields)
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class ValidationError(SluiceError):
    """A request the caller can fix: 400, fields named in ``details.fields``."""

    status = 400
    code = "VALIDATION_ERROR"


class UnprocessableError(ValidationError):
    """A well-formed body whose values are refused (a collection's own config): 422."""

    status = 422


class UnauthorizedError(SluiceError):
    """No bearer token, or one the deployment does not verify."""

    status = 401
    code = "UNAUTHORIZED"


class NotFoundError(SluiceError):
    """Absent, or out of the caller's reach: the same answer."""

    status = 404
    code = "NOT_FOUND"


class CollectionNotFoundError(NotFoundError):
    """Absent and out of reach are one answer, byte for byte (R-ACC-2)."""

    def __init__(self) -> None:
        super().__init__("Collection not found")


class ConflictError(SluiceError):
    """In conflict with the current state: a name taken, a run already going, a teardown holding the name."""

    status = 409
    code = "CONFLICT"


class DocCapReachedError(ConflictError):
    """A cap reached: a private pool's documents (PRIVATE_DOC_CAP) or a base's sources
    (SYNC_MAX_SOURCES_PER_BASE); ``details`` says the cap and how many are held."""

    code = "DOC_CAP_REACHED"


# --- teardowns (R-TD-1, R-TD-3) ---------------------------------------------------------------

class NameBusyError(ConflictError):
    """A running write (or teardown) holds the collection name: 409, try again after Retry-After."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, details={"retry_after": retry_after}, headers={"Retry-After": str(retry_after)})


class RateLimitError(SluiceError):
    """A user's upload rate (UPLOAD_RATE_PER_MINUTE, UPLOAD_RATE_PER_DAY) spent: Retry-After says when to try again."""

    status = 429
    code = "RATE_LIMIT_EXCEEDED"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(
            message, details={"retry_after": retry_after}, headers={"Retry-After": str(retry_after)}
        )


class IndexingPausedError(SluiceError):
    """The operator paused indexing (INDEXING_PAUSED or its SSM parameter): uploads wait, search keeps working."""

    status = 503
    code = "INDEXING_PAUSED"


class SearchTimeoutError(SluiceError):
    """R-SRCH-8: a search's statement ran past its bound and the server stopped it."""

    status = 503
    code = "SEARCH_TIMEOUT"


class FileTooLargeError(SluiceError):
    """A body or a file larger than the route takes (MAX_UPLOAD_SIZE_MB, DIRECT_UPLOAD_MAX_MB,
    CHAT_MAX_UPLOAD_SIZE_MB)."""

    status = 413
    code = "FILE_TOO_LARGE"


class DocumentRefused(SluiceError):
    """A document Sluice will not index; the message is user-facing and stored whole."""

    status = 400
    code = "DOCUMENT_REFUSED"


class UnsupportedTypeError(DocumentRefused):
    """Content no reader takes (a program, an unknown format, an archive under a document's name),
    named by what it is and what it is called."""

    code = "UNSUPPORTED_TYPE"


class ArchiveRefusedError(DocumentRefused):
    """An archive (or an OOXML/ODF container) that breaks a rule of R-ARC-1/R-ARC-3."""

    code = "ARCHIVE_REFUSED"


class EncryptedDocumentError(DocumentRefused):
    """A password-protected document: it cannot be read without its password."""

    code = "ENCRYPTED_DOCUMENT"


class ParseError(DocumentRefused):
    """The bytes are the type they claim but cannot be read (corrupt, truncated, undecodable)."""

    code = "PARSE_ERROR"


class ParseTimeoutError(ParseError):
    """Reading the document took longer than the parse may (PARSE_TIMEOUT_SECONDS, the function's remaining time)."""

    code = "PARSE_TIMEOUT"


class OcrConfigurationError(ParseError):
    """OCR was asked for but this deployment cannot run it (no engine, no language data)."""

    code = "OCR_UNAVAILABLE"


class ScannedPdfError(DocumentRefused):
    """A PDF with no text layer in a collection with OCR off; the sentence says OCR can be turned on (R-PARSE-3)."""

    code = "SCANNED_PDF"


class SparseDocumentError(DocumentRefused):
    """Too few words of text to index; the sentence says how many were found."""

    code = "DOCUMENT_TOO_SPARSE"


class TooManyChunksError(DocumentRefused):
    """A document whose settings would split it into more chunks than one document may have."""

    code = "TOO_MANY_CHUNKS"


class CollectionTornDownError(DocumentRefused):
    """A chunk write reached a collection a teardown has reserved (R-TD-1): nothing is written."""

    code = "COLLECTION_TORN_DOWN"


class StoredFileMissingError(DocumentRefused):
    """The object a document was to be read from is not in storage (any more)."""

    code = "FILE_MISSING"


class EmbeddingError(SluiceError):
    """A provider refused or failed; summarised for the row, detailed in the log."""

    status = 502
    code = "EMBEDDING_FAILED"


class EmbeddingCallError(EmbeddingError):
    """An embedding call the provider refused or could not answer.

    The message and ``summary()`` say what happened and what to do, never the
    provider's own text, its URL or the key: those go to the ``sluice.embedding``
    log with the traceback (R-DOC-4). ``transient`` tells a stage that a later
    redelivery may succeed where an immediate one will not.
    """

    happened = "the embedding provider failed"
    advice = "check the collection's embedding settings"
    transient = False

    def __init__(self, provider: str, model: str) -> None:
        super().__init__(
            f"Embedding with provider '{provider}' failed: {self.happened} ({self.kind}) - {self.advice}.",
            details={"provider": provider, "model": model, "kind": self.kind},
        )
        self.provider = provider
        self.model = model

    @property
    def kind(self) -> str:
        # The R-DOC-4 example names the failure without the package's prefix.
        return type(self).__name__.removeprefix("Embedding")

    def summary(self, stage: str = "indexed") -> str:
        """The ``documents.error_message`` for a document this failure stopped."""
        return (
            f"The document could not be {stage} ({self.kind}) - {self.advice}, "
            "then retry the upload. The worker log has the full error."
        )


class EmbeddingAuthenticationError(EmbeddingCallError):
    happened = "the provider refused the credential"
    advice = "check the collection's embedding credential"


class EmbeddingCredentialMissingError(EmbeddingCallError):
    """The collection's key is gone, unreadable, or holds no API key (no deployment key to fall back to)."""

    happened = "the collection's embedding credential could not be read or holds no API key"
    advice = "choose an embedding credential the collection can use"


class EmbeddingRateLimitedError(EmbeddingCallError):
    happened = "the provider kept rate limiting the requests"
    advice = "wait a few minutes"
    transient = True


class EmbeddingProviderError(EmbeddingCallError):
    happened = "the provider failed or did not answer in time"
    advice = "wait a few minutes and check that the embedding endpoint is up"
    transient = True


class EmbeddingModelNotServedError(EmbeddingCallError):
    happened = "the endpoint does not serve the collection's model"
    advice = "check the collection's embedding provider and endpoint"


class EmbeddingEndpointRefusedError(EmbeddingCallError):
    happened = "the endpoint no longer resolves to an address the deployment allows"
    advice = "point the collection at a public endpoint, or ask the operator to allow it"


class EmbeddingInputRejectedError(EmbeddingCallError):
    happened = "the provider refused the text it was sent"
    advice = "use a smaller chunk_size for this collection"


class EmbeddingResponseError(EmbeddingCallError):
    happened = "the provider answered with vectors the collection cannot store"
    advice = "check that the embedding endpoint serves the collection's model at its recorded width"


class RerankerError(SluiceError):
    """The deployment's reranker failed: the search is refused rather than answered ungated.

    The message never carries the endpoint, its answer or a key; the
    ``sluice.rerank`` log has them.
    """

    status = 502
    code = "RERANKER_FAILED"

    def __init__(self, message: str) -> None:
        super().__init__(f"Search could not be completed: {message}.")


# --- chat (SPEC §12) -------------------------------------------------------------------------

class ChatModelError(SluiceError):
    """The deployment's chat model failed a call (an attachment overview).

    Like ``EmbeddingCallError``: the message says what happened and what to do,
    never the provider's text, its URL or the key (those go to the ``sluice.llm``
    log with the traceback); ``transient`` tells the worker a later try may succeed.
    """

    status = 502
    code = "CHAT_MODEL_FAILED"
    happened = "the chat model failed"
    transient = False

    def __init__(self, provider: str, model: str) -> None:
        super().__init__(f"The chat model ({provider}) failed: {self.happened} ({self.kind}).",
                         details={"provider": provider, "model": model, "kind": self.kind})
        self.provider = provider
        self.model = model

    @property
    def kind(self) -> str:
        return type(self).__name__.removeprefix("ChatModel")


class ChatModelAuthenticationError(ChatModelError):
    happened = "the provider refused the credential"


class ChatModelRateLimitedError(ChatModelError):
    happened = "the provider kept rate limiting the requests"
    transient = True


class ChatModelUnavailableError(ChatModelError):
    happened = "the provider failed or did not answer in time"
    transient = True


class ChatModelRefusedError(ChatModelError):
    """The endpoint does not serve the model, refuses the request, or may not be reached."""

    happened = "the endpoint refused the request or does not serve the configured model"


class ChatModelResponseError(ChatModelError):
    happened = "the provider answered with something that is not a completion"


class AttachmentLimitError(ConflictError):
    """A conversation already holds as many attachments as it may (CHAT_MAX_ATTACHMENTS)."""

    code = "ATTACHMENT_LIMIT"
