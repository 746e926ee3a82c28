"""The one provider retry loop (R-EMB-3): how long a call may keep retrying, how long to wait between
tries, and the loop itself, ``call(policy, send, classify, give_up)``.

Every provider (the embedders, the rerankers, the chat models) writes only what is its own: one try
(``send``), what a failure of it means (``classify``: a ``Failure``, transient or not, or ``None`` for
an error that is not the provider's to retry), and how it refuses at the end (``give_up``). Sluice's
own refusals (a ``SluiceError`` raised inside a try) are never retried.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, NoReturn, TypeVar

from sluice.errors import SluiceError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, bounded by attempts and by total time.

    ``total_seconds`` bounds one provider call including its retries; a wait
    that would overrun it (a long ``Retry-After`` included) ends the call at once,
    since sleeping through a stage's Lambda timeout helps nobody. ``sleep``,
    ``clock`` and ``uniform`` (the jitter's draw) are injected by tests.
    """

    max_attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 20.0
    total_seconds: float = 150.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)
    uniform: Callable[[float, float], float] = field(default=random.uniform, compare=False, repr=False)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """The wait before try ``attempt + 1``; the provider's own ``Retry-After`` wins."""
        if retry_after is not None:
            # A little jitter still, so clients told the same instant do not all return at it.
            return retry_after + self.uniform(0, min(retry_after, self.base_delay) * 0.1)
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return self.uniform(0, ceiling)


class Deadline:
    """The moment a call with its retries must be over."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._clock = policy.clock
        self._at = policy.clock() + policy.total_seconds

    def remaining(self) -> float:
        return max(0.0, self._at - self._clock())

    def allows(self, wait: float) -> bool:
        return wait < self.remaining()


@dataclass(frozen=True)
class Try:
    """One try of a call: its number (from 1) and the call's deadline (a try's timeout stays within it)."""

    number: int
    deadline: Deadline


@dataclass(frozen=True)
class Failure:
    """What a failed try meant: ``kind`` (the provider's error class, for ``give_up``), whether another
    try may cure it, the detail for the log, its cause and the provider's ``Retry-After``."""

    kind: Any
    transient: bool
    detail: str
    cause: BaseException | None = None
    retry_after: float | None = None


def call(policy: RetryPolicy, send: Callable[[Try], T], classify: Callable[[Exception, Try], Failure | None],
         give_up: Callable[[Failure, int, str], NoReturn], *,
         on_retry: Callable[[Failure, int, float], None] | None = None, deadline: Deadline | None = None) -> T:
    """``send`` until it answers; a failure ``classify`` calls transient is tried again after
    ``policy.delay`` while attempts and the deadline allow, any other ends in ``give_up(failure,
    attempts, detail)``. ``classify`` answering None (or raising) lets the error through as it is.
    ``deadline``: one shared by several calls (the pages of one document), else the policy's own."""
    deadline = deadline if deadline is not None else Deadline(policy)
    attempt = 0
    while True:
        attempt += 1
        t = Try(attempt, deadline)
        try:
            return send(t)
        except SluiceError:
            raise
        except Exception as exc:
            failure = classify(exc, t)
            if failure is None:
                raise
        if not failure.transient or attempt >= policy.max_attempts:
            give_up(failure, attempt, failure.detail)
        wait = policy.delay(attempt, failure.retry_after)
        if not deadline.allows(wait):
            give_up(failure, attempt, f"{failure.detail}; no time left to wait {wait:.1f}s")
        if on_retry is not None:
            on_retry(failure, attempt, wait)
        policy.sleep(wait)


def parse_retry_after(headers: dict[str, str] | object, *, now: Callable[[], datetime] | None = None
                      ) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    millis = get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now() if now is not None else datetime.now(UTC))).total_seconds())
