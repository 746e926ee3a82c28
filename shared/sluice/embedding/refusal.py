"""Turning a provider's failure into an ``EmbeddingCallError``: the detail to the log, never to the row.

The provider's message, its URL and anything near the key stay in the
``sluice.embedding`` log with the traceback; the raised error carries only its
class, the provider name and the model (R-DOC-4).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import NoReturn

from sluice.embedding.protocol import EmbeddingSpec
from sluice.errors import (
    EmbeddingCallError,
    EmbeddingInputRejectedError,
    EmbeddingModelNotServedError,
)
from sluice.retry import Failure

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


def failure_of(kind: type[EmbeddingCallError], detail: str, cause: BaseException | None = None,
               retry_after: float | None = None) -> Failure:
    """A failed try, transient as its error class says."""
    return Failure(kind, kind.transient, detail, cause, retry_after)


def give_up_as(spec: EmbeddingSpec) -> Callable[[Failure, int, str], NoReturn]:
    """How a call to ``spec`` ends when its retries do: refused with the failure's class."""
    def give_up(failure: Failure, attempts: int, detail: str) -> NoReturn:
        refuse(failure.kind, spec, detail, failure.cause, attempts=attempts)
    return give_up


def log_retry(spec: EmbeddingSpec) -> Callable[[Failure, int, float], None]:
    def logged(failure: Failure, attempt: int, wait: float) -> None:
        logger.warning(
            "embedding request retried in %.2fs (attempt %d, %s): provider=%s model=%s",
            wait, attempt, type(failure.cause).__name__, spec.provider, spec.model,
        )
    return logged
