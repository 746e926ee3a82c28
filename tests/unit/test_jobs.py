"""The skeleton every queued job runs through (sluice.jobs.run): claim, work, final or redelivered."""

from __future__ import annotations

import pytest

from sluice import jobs


class Stale(Exception):
    pass


class Final(Exception):
    pass


def run(claimed, raises: BaseException | None):
    seen: list[tuple[str, object]] = []

    def work(job):
        seen.append(("work", job))
        if raises is not None:
            raise raises

    jobs.run(lambda: claimed, work, is_final=lambda exc: isinstance(exc, Final),
             fail=lambda job, exc: seen.append(("fail", type(exc).__name__)),
             retry_later=lambda job, exc: seen.append(("retry_later", type(exc).__name__)), stale=(Stale,))
    return seen


@pytest.mark.parametrize("claimed, raises, seen", [
    (None, None, []),  # not current: nothing runs
    ("job", None, [("work", "job")]),
    ("job", Stale(), [("work", "job")]),  # went stale during the work: quietly nothing
    ("job", Final(), [("work", "job"), ("fail", "Final")]),  # final: failed now, not raised
])
def test_what_is_settled_without_raising(claimed, raises, seen):
    assert run(claimed, raises) == seen


def test_any_other_failure_is_noted_and_raised_for_the_queue():
    with pytest.raises(TimeoutError):
        run("job", TimeoutError())
    seen: list[str] = []

    def replaced(job, exc):
        seen.append("noted")
        raise KeyError("what the queue should see")

    with pytest.raises(KeyError):
        jobs.run(lambda: "job", lambda job: (_ for _ in ()).throw(OSError()), is_final=lambda exc: False,
                 fail=lambda job, exc: None, retry_later=replaced)
    assert seen == ["noted"]


@pytest.mark.parametrize("redriven, marked, busy, failed, outcome, calls", [
    (False, True, False, True, "redriven", ["mark", "resend"]),  # resumed once per attempt
    (False, False, False, True, "", ["mark"]),  # the row moved since it was read: left alone
    (True, True, True, True, "waiting", ["backlog"]),  # its queue has a backlog: not a loss
    (True, True, False, True, "failed", ["backlog", "fail"]),
    (True, True, False, False, "", ["backlog", "fail"]),  # moved meanwhile: nothing failed
])
def test_a_stalled_job_is_resumed_once_then_waits_or_fails(redriven, marked, busy, failed, outcome, calls):
    seen: list[str] = []

    def note(name: str, answer: bool):
        return lambda: seen.append(name) or answer

    got = jobs.settle_stalled(redriven=redriven, mark_redriven=note("mark", marked), resend=note("resend", True),
                              backlog=note("backlog", busy), fail=note("fail", failed))
    assert (got, seen) == (outcome, calls)
