"""Turning a provider's failure into an ``EmbeddingCallError``: the detail to the log, never to the row.

The provider's message, its URL and anything near the key stay in the
``sluice.embedding`` log with the traceback; the raised error carries only its
class, the provider name and the model (R-DOC-4).
"""

from __future__ import annotations

import logging
import re
from typing import NoReturn

from sluice.embedding.backoff import Deadline, RetryPolicy
from sluice.embedding.protocol import EmbeddingSpec
from sluice.errors import (
    EmbeddingCallError,
    EmbeddingInputRejectedError,
    EmbeddingModelNotServedError,
)

logger = logging.getLogger("sluice.embedding")

# Words providers use when the text is too long; checked before the model
# markers because "This model's maximum context length…" names the model too.
_INPUT_MARKERS = re.compile(
    r"context length|too long|too many (input )?tokens|input length|max(imum)?[ _]?(input )?tokens"
    r"|exceeds? the max|token limit|input is too",
    re.IGNORECASE,
)
_MODEL_MARKERS = re.compile(
    r"model_not_found|model (identifier|id)\b|model\b.*\b(not found|does not exist|not supported|"
    r"is not available|unknown|invalid|not exist)|(unknown|invalid|unsupported) model|try pulling it",
    re.IGNORECASE | re.DOTALL,
)


def rejected_request(provider_text: str) -> type[EmbeddingCallError]:
    """Whether a provider's 400-style refusal is about the text or about the model."""
    if _INPUT_MARKERS.search(provider_text):
        return EmbeddingInputRejectedError
    if _MODEL_MARKERS.search(provider_text):
        return EmbeddingModelNotServedError
    return EmbeddingInputRejectedError


def refuse(
    failure: type[EmbeddingCallError],
    spec: EmbeddingSpec,
    detail: str,
    cause: BaseException | None = None,
    *,
    attempts: int = 1,
) -> NoReturn:
    error = failure(spec.provider, spec.model)
    logger.error(
        "embedding call failed (%s) after %d attempt(s): provider=%s model=%s dim=%d endpoint=%s: %s",
        error.kind,
        attempts,
        spec.provider,
        spec.model,
        spec.dim,
        spec.base_url or "-",
        detail,
        exc_info=cause,
    )
    raise error from cause


def wait_before_retry(
    retry: RetryPolicy,
    deadline: Deadline,
    spec: EmbeddingSpec,
    failure: type[EmbeddingCallError],
    detail: str,
    cause: BaseException | None,
    *,
    attempt: int,
    retry_after: float | None = None,
) -> None:
    """Sleep before the next attempt, or refuse when the failure is final or time is up."""
    if not failure.transient or attempt >= retry.max_attempts:
        refuse(failure, spec, detail, cause, attempts=attempt)
    wait = retry.delay(attempt, retry_after)
    if not deadline.allows(wait):
        refuse(failure, spec, f"{detail}; no time left to wait {wait:.1f}s", cause, attempts=attempt)
    logger.warning(
        "embedding request retried in %.2fs (attempt %d, %s): provider=%s model=%s",
        wait, attempt, type(cause).__name__, spec.provider, spec.model,
    )
    retry.sleep(wait)
