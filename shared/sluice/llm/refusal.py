"""A chat-model failure as a ``ChatModelError``: the detail to the log, never to a record."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NoReturn

from sluice.errors import ChatModelError
from sluice.retry import Failure

log = logging.getLogger("sluice.llm")


def refuse(failure: type[ChatModelError], provider: str, model: str, detail: str,
           cause: BaseException | None = None, *, attempts: int = 1) -> NoReturn:
    error = failure(provider, model)
    log.error("chat model call failed (%s) after %d attempt(s): provider=%s model=%s: %s",
              error.kind, attempts, provider, model, detail, exc_info=cause)
    raise error from cause


def failure_of(kind: type[ChatModelError], detail: str, cause: BaseException | None = None,
               retry_after: float | None = None) -> Failure:
    """A failed try, transient as its error class says."""
    return Failure(kind, kind.transient, detail, cause, retry_after)


def give_up_as(provider: str, model: str) -> Callable[[Failure, int, str], NoReturn]:
    def give_up(failure: Failure, attempts: int, detail: str) -> NoReturn:
        refuse(failure.kind, provider, model, detail, failure.cause, attempts=attempts)
    return give_up


def log_retry(provider: str, model: str) -> Callable[[Failure, int, float], None]:
    def logged(failure: Failure, attempt: int, wait: float) -> None:
        log.warning("chat model request retried in %.2fs (attempt %d, %s): provider=%s model=%s",
                    wait, attempt, type(failure.cause).__name__, provider, model)
    return logged
