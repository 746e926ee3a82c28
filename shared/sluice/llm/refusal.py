"""A chat-model failure as a ``ChatModelError``: the detail to the log, never to a record."""

from __future__ import annotations

import logging
from typing import NoReturn

from sluice.embedding.backoff import Deadline, RetryPolicy
from sluice.errors import ChatModelError

log = logging.getLogger("sluice.llm")


def refuse(failure: type[ChatModelError], provider: str, model: str, detail: str,
           cause: BaseException | None = None, *, attempts: int = 1) -> NoReturn:
    error = failure(provider, model)
    log.error("chat model call failed (%s) after %d attempt(s): provider=%s model=%s: %s",
              error.kind, attempts, provider, model, detail, exc_info=cause)
    raise error from cause


def wait_before_retry(retry: RetryPolicy, deadline: Deadline, provider: str, model: str,
                      failure: type[ChatModelError], detail: str, cause: BaseException | None, *,
                      attempt: int, retry_after: float | None = None) -> None:
    """Sleep before the next attempt, or refuse when the failure is final or time is up."""
    if not failure.transient or attempt >= retry.max_attempts:
        refuse(failure, provider, model, detail, cause, attempts=attempt)
    wait = retry.delay(attempt, retry_after)
    if not deadline.allows(wait):
        refuse(failure, provider, model, f"{detail}; no time left to wait {wait:.1f}s", cause, attempts=attempt)
    log.warning("chat model request retried in %.2fs (attempt %d, %s): provider=%s model=%s",
                wait, attempt, type(cause).__name__, provider, model)
    retry.sleep(wait)
