"""How long a provider call may keep retrying, and how long to wait between tries (R-EMB-3)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, bounded by attempts and by total time.

    ``total_seconds`` bounds one provider call including its retries; a wait
    that would overrun it (a long ``Retry-After`` included) ends the call at once,
    since sleeping through a stage's Lambda timeout helps nobody.
    """

    max_attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 20.0
    total_seconds: float = 150.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """The wait before try ``attempt + 1``; the provider's own ``Retry-After`` wins."""
        if retry_after is not None:
            # A little jitter still, so clients told the same instant do not all return at it.
            return retry_after + random.uniform(0, min(retry_after, self.base_delay) * 0.1)  # noqa: S311
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return random.uniform(0, ceiling)  # noqa: S311


class Deadline:
    """The moment a call with its retries must be over."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._clock = policy.clock
        self._at = policy.clock() + policy.total_seconds

    def remaining(self) -> float:
        return max(0.0, self._at - self._clock())

    def allows(self, wait: float) -> bool:
        return wait < self.remaining()


def parse_retry_after(headers: dict[str, str] | object) -> float | None:
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
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
