"""OCR through Amazon Textract's DetectDocumentText, one call per rendered page (R-PARSE-7, ``ocr_provider`` textract).

Runs in the parse function's own process, never in the parse child: the child sees no AWS credentials
(sluice.parsing.isolation), so the child renders the pages and this engine sends them.

Textract's synchronous limits, checked here before a page is sent (a page past one is refused with a
sentence, never sent to be refused at a price):
- "For synchronous operations, JPEG, PNG, PDF, and TIFF files have a limit of 10 MB in memory", and
  "Amazon Textract supports images with a resolution less than or equal to 10000 pixels on all sides"
  (Set Quotas in Amazon Textract, https://docs.aws.amazon.com/textract/latest/dg/limits-document.html);
  botocore's model caps ``Document.Bytes`` (ImageBlob) at 10,485,760 bytes.
- DetectDocumentText's ``Document`` "must be an image in JPEG or PNG format" when passed as bytes
  (API reference, DetectDocumentText).

Textract has no language setting: ``languages()`` is None and the collection's ``ocr_languages`` is
ignored (docs/operations/deploying.md "OCR on AWS"). Calls run ``max_concurrency`` at a time from a
thread pool (boto3 clients are thread-safe); throttling and server errors are retried with exponential
backoff and full jitter (sluice.retry) until one deadline for the whole document passes. A page Textract refuses, or
one still throttled when its tries or the time run out, comes back as ``Recognised(text=None, error=...)``
so the document's note counts it.
"""

from __future__ import annotations

import dataclasses
import logging
import struct
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any, NoReturn

from botocore.exceptions import (
    ClientError,
    ConnectionError,
    CredentialRetrievalError,
    HTTPClientError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
)

from sluice import retry
from sluice.parsing.ocr_engine import PageImage, Recognised
from sluice.retry import Deadline, RetryPolicy

log = logging.getLogger(__name__)

# Textract's synchronous limits (the module docstring cites them).
TEXTRACT_MAX_BYTES = 10 * 1024 * 1024
TEXTRACT_MAX_SIDE = 10_000
# The most calls the default client's connection pool serves at once (TEXTRACT_MAX_CONCURRENCY's ceiling).
MAX_CONCURRENCY = 32
# Tries per page: Textract's guide recommends five retries for throttling ("Handling Connection Errors").
MAX_ATTEMPTS = 6

_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"

# Worth another try: Textract is busy, or failed on its side.
_RETRIED = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "LimitExceededException",
        "InternalServerError",
        "InternalFailure",
        "ServiceUnavailable",
        "ServiceUnavailableException",
    }
)
# The page itself is what Textract will not read: another try gets the same answer.
_REFUSED = {
    "InvalidParameterException": "Amazon Textract refused the page image as an invalid request.",
    "UnsupportedDocumentException": "Amazon Textract does not support this page image's format.",
    "BadDocumentException": "Amazon Textract could not read this page image.",
    "DocumentTooLargeException": "The page image is larger than Amazon Textract reads in one call (10 MB).",
}
# The deployment, not the page: every other page would fail the same way, so none is sent after it.
_DEPLOYMENT = frozenset(
    {
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "ExpiredTokenException",
        "MissingAuthenticationTokenException",
        "SubscriptionRequiredException",
    }
)
_NOT_ALLOWED = (
    "This deployment may not call Amazon Textract ({code}): check the stack's OcrProvider and the parse "
    "function's role."
)
_NO_CREDENTIALS = "This deployment has no AWS credentials to call Amazon Textract with."


class TextractEngine:
    """An ``OcrEngine`` (sluice.parsing.ocr_engine) that reads each page with Textract's DetectDocumentText."""

    name = "textract"

    def __init__(self, client: Any, *, max_concurrency: int, retry: RetryPolicy, until: float | None = None) -> None:
        self._client = client
        self._concurrency = max(1, max_concurrency)
        self._retry = retry
        # The whole parse's deadline on ``retry.clock`` (issue 37): the pages' time is the least of
        # TEXTRACT_SECONDS and what the parse has left when they are sent.
        self._until = until

    def languages(self) -> frozenset[str] | None:
        # Textract detects its languages by itself and takes no setting for them.
        return None

    def recognise(self, pages: Sequence[PageImage], languages: str) -> list[Recognised]:
        """Each page's text, in the order given; ``languages`` is ignored (Textract has no such setting)."""
        if not pages:
            return []
        if self._until is not None:
            left = max(0.0, min(self._retry.total_seconds, self._until - self._retry.clock()))
            deadline = Deadline(dataclasses.replace(self._retry, total_seconds=left))
        else:
            deadline = Deadline(self._retry)
        halt = _Halt()
        if self._concurrency == 1 or len(pages) == 1:
            return [self._one(page, deadline, halt) for page in pages]
        with ThreadPoolExecutor(max_workers=min(self._concurrency, len(pages)), thread_name_prefix="textract") as pool:
            return list(pool.map(lambda page: self._one(page, deadline, halt), pages))

    def _one(self, page: PageImage, deadline: Deadline, halt: _Halt) -> Recognised:
        refusal = image_refusal(page.png)
        if refusal is not None:
            return Recognised(page.number, None, refusal)

        def send(t: retry.Try) -> Recognised:
            if halt.reason is not None:
                raise _Unread(halt.reason)
            if t.deadline.remaining() <= 0:
                raise _Unread(_out_of_time(self._retry, t.number - 1))
            return Recognised(page.number, page_text(self._client.detect_document_text(Document={"Bytes": page.png})),
                              None)

        def classify(exc: Exception, t: retry.Try) -> retry.Failure | None:
            return _classify(exc, page.number, halt)

        def give_up(failure: retry.Failure, attempts: int, detail: str) -> NoReturn:
            if not failure.transient:
                raise _Unread(str(failure.kind))
            if attempts >= self._retry.max_attempts:
                log.warning("textract gave up on page %d after %d tries: %s", page.number, attempts, detail)
                raise _Unread(_exhausted(attempts))
            log.warning("textract out of time on page %d after %d tries: %s", page.number, attempts, detail)
            raise _Unread(_out_of_time(self._retry, attempts))

        def on_retry(failure: retry.Failure, attempt: int, wait: float) -> None:
            log.info("textract page %d: %s, try %d again in %.2f s", page.number, failure.detail, attempt + 1, wait)

        try:
            return retry.call(self._retry, send, classify, give_up, on_retry=on_retry, deadline=deadline)
        except _Unread as unread:
            return Recognised(page.number, None, unread.reason)


class _Unread(Exception):
    """A page that will not be read, and the sentence its note gives (never leaves this module)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _classify(exc: Exception, number: int, halt: _Halt) -> retry.Failure | None:
    """What a failed DetectDocumentText call means; a non-transient failure's ``kind`` is the page's sentence."""
    if isinstance(exc, _Unread):
        return retry.Failure(exc.reason, transient=False, detail=exc.reason)
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        if code in _REFUSED:
            log.warning("textract refused page %d: %s: %s", number, code, error.get("Message"))
            return retry.Failure(_REFUSED[code], transient=False, detail=code)
        if code in _DEPLOYMENT:
            log.error("textract refused the deployment: %s: %s", code, error.get("Message"))
            return retry.Failure(halt.stop(_NOT_ALLOWED.format(code=code)), transient=False, detail=code)
        if code not in _RETRIED and status < 500:
            log.warning("textract refused page %d: %s: %s", number, code, error.get("Message"))
            return retry.Failure(f"Amazon Textract refused the page ({code or status}).", transient=False,
                                 detail=code or str(status))
        return retry.Failure(None, transient=True, detail=code or f"HTTP {status}", cause=exc)
    if isinstance(exc, (HTTPClientError, ConnectionError)):
        return retry.Failure(None, transient=True, detail=f"no answer ({type(exc).__name__})", cause=exc)
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError, CredentialRetrievalError)):
        log.error("textract: no AWS credentials")
        return retry.Failure(halt.stop(_NO_CREDENTIALS), transient=False, detail="no credentials")
    if isinstance(exc, ParamValidationError):  # botocore's own checks, e.g. the 10 MB blob ceiling
        log.warning("textract request for page %d invalid: %s", number, exc)
        return retry.Failure("Amazon Textract cannot be sent this page image.", transient=False, detail=str(exc))
    return None


class _Halt:
    """The first deployment-wide failure (no permission, no credentials): later pages are not sent."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reason: str | None = None

    def stop(self, reason: str) -> str:
        with self._lock:
            if self.reason is None:
                self.reason = reason
            return self.reason


def _exhausted(attempts: int) -> str:
    return f"Amazon Textract was still busy or failing after {attempts} tries, so the page was not read."


def _out_of_time(retry: RetryPolicy, attempts: int) -> str:
    if attempts == 0:
        return f"OCR ran out of its {retry.total_seconds:g} seconds for this document before the page was sent."
    return (
        f"Amazon Textract was still busy or failing when OCR's {retry.total_seconds:g} seconds for this "
        "document ran out, so the page was not read."
    )


def page_text(response: dict[str, Any]) -> str:
    """The LINE blocks' text, one line each, in Textract's reading order: the order its PAGE block lists
    them in (then any line no PAGE names, in the order the answer holds them)."""
    blocks = response.get("Blocks") or []
    lines = {b["Id"]: b.get("Text") or "" for b in blocks if b.get("BlockType") == "LINE" and "Id" in b}
    ordered: list[str] = []
    for block in blocks:
        if block.get("BlockType") != "PAGE":
            continue
        for relation in block.get("Relationships") or []:
            if relation.get("Type") == "CHILD":
                ordered += [i for i in relation.get("Ids") or [] if i in lines and i not in ordered]
    named = set(ordered)
    ordered += [i for i in lines if i not in named]
    return "\n".join(lines[i] for i in ordered)


def image_refusal(image: bytes) -> str | None:
    """Why Textract's synchronous call would refuse ``image``, or None when it is within its limits."""
    if len(image) > TEXTRACT_MAX_BYTES:
        return (
            f"The page image is {len(image) / (1024 * 1024):.1f} MB, more than the 10 MB Amazon Textract "
            "reads in one call."
        )
    size = _png_size(image) if image.startswith(_PNG) else _jpeg_size(image) if image.startswith(_JPEG) else None
    if size is None:
        return "The page image is not a PNG or JPEG image, the formats Amazon Textract reads from bytes."
    width, height = size
    if width > TEXTRACT_MAX_SIDE or height > TEXTRACT_MAX_SIDE:
        return (
            f"The page image is {width} x {height} pixels; Amazon Textract reads at most "
            f"{TEXTRACT_MAX_SIDE:,} pixels a side."
        )
    return None


def _png_size(image: bytes) -> tuple[int, int] | None:
    # The IHDR chunk comes first: length (4), type (4), then width and height (4 each, big-endian).
    if len(image) < 24 or image[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", image[16:24])
    return width, height


def _jpeg_size(image: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 4 <= len(image):
        if image[at] != 0xFF:
            return None
        marker = image[at + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers with no length
            at += 2
            continue
        (length,) = struct.unpack(">H", image[at + 2 : at + 4])
        # Start of frame (SOF0..SOF15 but DHT, JPG and DAC): precision (1), height (2), width (2).
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            if at + 9 > len(image):
                return None
            height, width = struct.unpack(">HH", image[at + 5 : at + 9])
            return width, height
        at += 2 + length
    return None


@lru_cache(maxsize=1)
def _default_client() -> Any:
    """The textract client, built once per process: botocore retries nothing (this module does, within
    its deadline), a call waits at most 30 s for its answer, and the pool holds every concurrent call."""
    import boto3
    from botocore.config import Config

    from sluice.config import AwsSettings, current

    config = Config(
        retries={"mode": "standard", "max_attempts": 1},
        connect_timeout=5,
        read_timeout=30,
        max_pool_connections=MAX_CONCURRENCY,
    )
    return boto3.session.Session().client(
        "textract", endpoint_url=current(AwsSettings).aws_endpoint_url or None, config=config
    )


def textract_engine(
    client: Any = None,
    *,
    max_concurrency: int | None = None,
    deadline: float | None = None,
    retry: RetryPolicy | None = None,
    until: float | None = None,
) -> TextractEngine:
    """The Textract engine. Unset arguments come from the settings: TEXTRACT_MAX_CONCURRENCY (calls at once)
    and TEXTRACT_SECONDS (one document's pages with their retries); ``retry`` (tests) replaces the backoff,
    its ``total_seconds`` then being the deadline."""
    from sluice.config import OcrSettings, current

    settings = current(OcrSettings)
    concurrency = max_concurrency if max_concurrency is not None else settings.textract_max_concurrency
    if retry is None:
        seconds = deadline if deadline is not None else settings.textract_seconds
        retry = RetryPolicy(max_attempts=MAX_ATTEMPTS, base_delay=0.5, max_delay=8.0, total_seconds=seconds)
    return TextractEngine(
        client if client is not None else _default_client(),
        max_concurrency=min(MAX_CONCURRENCY, concurrency),
        retry=retry,
        until=until,
    )
