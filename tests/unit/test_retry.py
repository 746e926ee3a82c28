"""The one provider retry loop (sluice.retry): attempts, the deadline, Retry-After and the jitter's
bounds, with the clock, the sleep and the jitter's draw injected."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sluice import retry
from sluice.errors import ValidationError
from sluice.retry import Failure, RetryPolicy, parse_retry_after


class Clock:
    """A monotonic clock that moves only when the loop sleeps (or a try takes time)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class GaveUp(Exception):
    pass


def give_up(failure: Failure, attempts: int, detail: str):
    raise GaveUp(attempts, detail)


def run(policy: RetryPolicy, answers: list, *, try_seconds: float = 0.0, clock: Clock):
    """Call with one scripted answer per try: an exception raised, or a value returned."""
    tries: list[retry.Try] = []

    def send(t: retry.Try):
        tries.append(t)
        clock.now += try_seconds
        answer = answers[len(tries) - 1]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def classify(exc: Exception, t: retry.Try) -> Failure | None:
        if isinstance(exc, TimeoutError):
            return Failure("timeout", True, "timed out", exc)
        if isinstance(exc, ConnectionRefusedError):
            return Failure("refused", False, "refused", exc)
        if isinstance(exc, InterruptedError):  # a throttle with the provider's Retry-After
            return Failure("throttled", True, "throttled", exc, retry_after=3.0)
        return None

    return retry.call(policy, send, classify, give_up), tries


def policy(clock: Clock, **kw) -> RetryPolicy:
    # The jitter's draw answers its upper bound, so every wait is the most the policy allows.
    return RetryPolicy(**{"max_attempts": 5, "base_delay": 0.5, "max_delay": 20.0, "total_seconds": 150.0,
                          "sleep": clock.sleep, "clock": clock, "uniform": lambda lo, hi: hi, **kw})


@pytest.mark.parametrize(("answers", "kw", "result", "slept"), [
    (["ok"], {}, "ok", []),  # no failure, no wait
    ([TimeoutError(), TimeoutError(), "ok"], {}, "ok", [0.5, 1.0]),  # doubling from base_delay
    ([TimeoutError()] * 6 + ["ok"], {"max_attempts": 7, "max_delay": 2.0}, "ok",
     [0.5, 1.0, 2.0, 2.0, 2.0, 2.0]),  # capped at max_delay
    ([InterruptedError(), "ok"], {}, "ok", [3.0 + 0.05]),  # Retry-After wins, plus at most 10 % of base
])
def test_transient_failures_are_tried_again_after_the_policy_s_wait(answers, kw, result, slept):
    clock = Clock()
    got, tries = run(policy(clock, **kw), answers, clock=clock)
    assert got == result and clock.slept == pytest.approx(slept)
    assert [t.number for t in tries] == list(range(1, len(answers) + 1))


def test_attempts_run_out():
    clock = Clock()
    with pytest.raises(GaveUp) as raised:
        run(policy(clock, max_attempts=3), [TimeoutError()] * 3, clock=clock)
    assert raised.value.args == (3, "timed out") and len(clock.slept) == 2


def test_a_final_failure_is_not_tried_again():
    clock = Clock()
    with pytest.raises(GaveUp) as raised:
        run(policy(clock), [ConnectionRefusedError(), "never"], clock=clock)
    assert raised.value.args == (1, "refused") and clock.slept == []


def test_a_wait_past_the_deadline_ends_the_call_at_once():
    clock = Clock()
    # 4 s per try: tries end at 4, 8.5 and 13.5 (after waits of 0.5 and 1.0); the third wait, 2.0 s,
    # would pass the 15 s bound with 1.5 s left, so the call ends there.
    with pytest.raises(GaveUp) as raised:
        run(policy(clock, total_seconds=15.0), [TimeoutError()] * 5, try_seconds=4.0, clock=clock)
    assert raised.value.args == (3, "timed out; no time left to wait 2.0s")
    assert clock.slept == [0.5, 1.0]


def test_a_retry_after_longer_than_the_deadline_is_not_slept_through():
    clock = Clock()
    with pytest.raises(GaveUp) as raised:
        run(policy(clock, total_seconds=2.0), [InterruptedError(), "ok"], clock=clock)
    assert raised.value.args[0] == 1 and clock.slept == []


def test_what_classify_does_not_know_and_sluice_s_own_refusals_pass_through_untried():
    clock = Clock()
    with pytest.raises(KeyError):
        run(policy(clock), [KeyError("x"), "ok"], clock=clock)
    with pytest.raises(ValidationError):
        run(policy(clock), [ValidationError("no"), "ok"], clock=clock)
    assert clock.slept == []


def test_the_try_carries_the_deadline():
    clock = Clock()
    _, tries = run(policy(clock, total_seconds=10.0), [TimeoutError(), "ok"], try_seconds=1.0, clock=clock)
    assert tries[0].deadline is tries[1].deadline and tries[1].deadline.remaining() == pytest.approx(10 - 2.5)


@pytest.mark.parametrize("attempt, retry_after, low, high", [
    (1, None, 0.0, 0.5), (2, None, 0.0, 1.0), (3, None, 0.0, 2.0), (10, None, 0.0, 20.0),
    (1, 4.0, 4.0, 4.05), (1, 0.1, 0.1, 0.11), (1, 0.0, 0.0, 0.0),
])
def test_the_jitter_stays_within_its_bounds(attempt, retry_after, low, high):
    drawn: list[tuple[float, float]] = []

    def uniform(lo: float, hi: float) -> float:
        drawn.append((lo, hi))
        return hi

    wait = RetryPolicy(base_delay=0.5, max_delay=20.0, uniform=uniform).delay(attempt, retry_after)
    assert wait == pytest.approx(high)
    assert (retry_after or 0.0) + drawn[0][0] == pytest.approx(low)
    real = RetryPolicy(base_delay=0.5, max_delay=20.0)  # random.uniform, drawn many times
    assert all(low <= real.delay(attempt, retry_after) <= high + 1e-9 for _ in range(200))


@pytest.mark.parametrize("headers, seconds", [
    ({"retry-after-ms": "1500"}, 1.5),
    ({"retry-after": "7"}, 7.0),
    ({"retry-after": "-3"}, 0.0),
    ({"retry-after": "Wed, 02 Dec 2026 12:00:30 GMT"}, 30.0),
    ({"retry-after": "soon"}, None),
    ({}, None),
    (object(), None),
])
def test_retry_after(headers, seconds):
    now = lambda: datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)  # noqa: E731
    assert parse_retry_after(headers, now=now) == (pytest.approx(seconds) if seconds is not None else None)
