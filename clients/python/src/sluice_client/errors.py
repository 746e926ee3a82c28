"""The service's refusals as exceptions: one class per ``error.code`` (R-ERR-1).

Every refusal is ``{"error": {"code", "message", "details"}}``; ``SluiceError``
keeps all three and the status, and ``str(exc)`` is the service's sentence.
Codes this version does not know still raise, as the class of their status.
"""

from __future__ import annotations

from typing import Any

import httpx


class SluiceError(Exception):
    """A refusal, a failure or a timeout; ``message`` is the service's sentence where it gave one."""

    status: int = 0
    code: str = ""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None,
                 details: dict[str, Any] | None = None, response: httpx.Response | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = dict(details or {})
        self.response = response

    @property
    def fields(self) -> dict[str, str]:
        """The refused fields and why, for a validation error: ``{"dotted.field": "sentence"}``."""
        found = self.details.get("fields")
        return dict(found) if isinstance(found, dict) else {}


class ApiError(SluiceError):
    """Any answer of the service's that is not a success."""


class ValidationError(ApiError):
    status, code = 400, "VALIDATION_ERROR"


class Unauthorized(ApiError):
    status, code = 401, "UNAUTHORIZED"


class NotFound(ApiError):
    """Absent, or out of the caller's reach: the service gives both one answer."""

    status, code = 404, "NOT_FOUND"


class Conflict(ApiError):
    status, code = 409, "CONFLICT"


class DocCapReached(Conflict):
    code = "DOC_CAP_REACHED"


class AttachmentLimit(Conflict):
    code = "ATTACHMENT_LIMIT"


class FileTooLarge(ApiError):
    status, code = 413, "FILE_TOO_LARGE"

    @property
    def limit_bytes(self) -> int | None:
        limit = self.details.get("limit_bytes")
        return limit if isinstance(limit, int) else None


class RateLimitExceeded(ApiError):
    status, code = 429, "RATE_LIMIT_EXCEEDED"

    @property
    def retry_after(self) -> float | None:
        """Seconds the service asks to wait (its Retry-After header, else ``details.retry_after``)."""
        return retry_after_of(self.response, self.details)


class IndexingPaused(ApiError):
    """The operator's kill switch: uploads wait, search keeps working."""

    status, code = 503, "INDEXING_PAUSED"


class DocumentRefused(ApiError):
    """A document the service will not index; ``message`` says why."""

    status, code = 400, "DOCUMENT_REFUSED"


class UnsupportedType(DocumentRefused):
    code = "UNSUPPORTED_TYPE"


class ArchiveRefused(DocumentRefused):
    code = "ARCHIVE_REFUSED"


class EncryptedDocument(DocumentRefused):
    code = "ENCRYPTED_DOCUMENT"


class ParseError(DocumentRefused):
    code = "PARSE_ERROR"


class ParseTimeout(ParseError):
    code = "PARSE_TIMEOUT"


class ScannedPdf(DocumentRefused):
    code = "SCANNED_PDF"


class DocumentTooSparse(DocumentRefused):
    code = "DOCUMENT_TOO_SPARSE"


class TooManyChunks(DocumentRefused):
    code = "TOO_MANY_CHUNKS"


class CollectionTornDown(DocumentRefused):
    code = "COLLECTION_TORN_DOWN"


class FileMissing(DocumentRefused):
    code = "FILE_MISSING"


class ServerError(ApiError):
    status, code = 500, "INTERNAL_ERROR"


class EmbeddingFailed(ServerError):
    status, code = 502, "EMBEDDING_FAILED"


class RerankerFailed(ServerError):
    status, code = 502, "RERANKER_FAILED"


class ChatModelFailed(ServerError):
    status, code = 502, "CHAT_MODEL_FAILED"


class Unreachable(SluiceError):
    """The API did not answer: no connection, or no answer in time (``__cause__`` is httpx's error)."""

    code = "UNREACHABLE"


class StorageRefused(SluiceError):
    """Storage did not take a presigned upload; the document it was for is removed again."""

    code = "STORAGE_REFUSED"


class WaitTimeout(SluiceError):
    """A wait ran out of time; ``last`` is the state seen last."""

    code = "WAIT_TIMEOUT"

    def __init__(self, message: str, last: Any) -> None:
        super().__init__(message)
        self.last = last


class Failed(SluiceError):
    """What was waited for ended failed (a document in error, a sync run or teardown failed);
    ``message`` is the service's sentence, ``result`` the final state."""

    code = "FAILED"

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


def _subclasses(cls: type[ApiError]) -> list[type[ApiError]]:
    found = [cls]
    for sub in cls.__subclasses__():
        found += _subclasses(sub)
    return found


BY_CODE: dict[str, type[ApiError]] = {c.code: c for c in reversed(_subclasses(ApiError)) if c is not ApiError}
# VALIDATION_ERROR is 400 and 422 alike; DocumentRefused's code belongs to it alone.
BY_CODE["VALIDATION_ERROR"] = ValidationError
_BY_STATUS: dict[int, type[ApiError]] = {400: ValidationError, 401: Unauthorized, 404: NotFound, 409: Conflict,
                                         413: FileTooLarge, 422: ValidationError, 429: RateLimitExceeded,
                                         503: IndexingPaused}


def retry_after_of(response: httpx.Response | None, details: dict[str, Any]) -> float | None:
    raw = response.headers.get("Retry-After") if response is not None else None
    for value in (raw, details.get("retry_after")):
        try:
            if value is not None:
                return max(0.0, float(value))
        except (TypeError, ValueError):
            continue
    return None


def error_from(response: httpx.Response) -> ApiError:
    """The exception for a refused response: by its ``error.code``, else by its status."""
    code, message = "", ""
    details: dict[str, Any] = {}
    try:
        error = response.json()["error"]
        code, message = str(error.get("code") or ""), str(error.get("message") or "")
        details = error.get("details") if isinstance(error.get("details"), dict) else {}
    except (ValueError, KeyError, TypeError, AttributeError):
        message = f"HTTP {response.status_code}: {response.text[:300].strip()}"
    cls = BY_CODE.get(code) or _BY_STATUS.get(response.status_code) or (
        ServerError if response.status_code >= 500 else ApiError)
    return cls(message or f"HTTP {response.status_code}", status=response.status_code, code=code or cls.code,
               details=details, response=response)
