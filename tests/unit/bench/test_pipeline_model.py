"""The simulation's building blocks against answers computed by hand (issue 30), so the capacity
model cannot drift without a test saying so."""

from __future__ import annotations

import random

import pytest

simpy = pytest.importorskip("simpy", reason="simpy is a dev dependency (pyproject.toml)")

from bench.pipeline_model import (  # noqa: E402
    EventSourceMapping,
    Function,
    SqsQueue,
    TokenBucket,
    md1_wait,
)


def _function(env, handler, *, slots=1, timeout=900.0, memory_mb=1769):
    return Function(env, "f", memory_mb, timeout, handler, simpy.Resource(env, capacity=slots))


def test_md1_formula_by_hand():
    # λ = 0.5/s, service 1 s: ρ = 0.5, Wq = 0.5 / (2 · 1 · 0.5) = 0.5 s.
    assert md1_wait(0.5, 1.0) == pytest.approx(0.5)
    # λ = 0.8/s, service 1 s: Wq = 0.8 / (2 · 0.2) = 2.0 s.
    assert md1_wait(0.8, 1.0) == pytest.approx(2.0)


@pytest.mark.slow
@pytest.mark.parametrize(("rate", "expected"), [(0.5, 0.5), (0.8, 2.0)])
def test_one_queue_one_consumer_fixed_service_waits_as_md1(rate, expected):
    """Poisson arrivals, one poller, batch 1, 1 s of work: the mean wait in the queue is the M/D/1
    wait, within 5 % over 30,000 arrivals with a fixed seed (the run's own standard error at
    ρ = 0.8 is about 2 %)."""
    env = simpy.Environment()
    queue = SqsQueue(env, "q", visibility_timeout=10_000)

    def work(fn, batch):
        yield env.timeout(1.0)

    EventSourceMapping(env, queue, _function(env, work), batch_size=1, maximum_concurrency=1, initial=1)
    rng = random.Random(30)
    sent = []

    def arrivals():
        for _ in range(30_000):
            yield env.timeout(rng.expovariate(rate))
            sent.append(queue.send(None))

    env.process(arrivals())
    env.run()
    waits = [m.first_received_at - m.sent_at for m in sent[1000:]]  # past the start, which began empty
    assert len(waits) == 29_000
    assert sum(waits) / len(waits) == pytest.approx(expected, rel=0.05)
    assert queue.deleted == 30_000 and queue.redelivered == 0


def _batch_run(batch_size):
    """Two pollers, five messages, 10 s of work per message done one after another in a batch,
    visibility timeout 30 s, maxReceiveCount 3."""
    env = simpy.Environment()
    dlq = SqsQueue(env, "dlq", visibility_timeout=300)
    queue = SqsQueue(env, "q", visibility_timeout=30, max_receive_count=3, dead_letters=dlq)

    def work(fn, batch):
        yield env.timeout(10.0 * len(batch))

    fn = _function(env, work, slots=2)
    EventSourceMapping(env, queue, fn, batch_size=batch_size, maximum_concurrency=2, initial=2)
    for _ in range(5):
        queue.send(None)
    env.run(until=500)
    return env, queue, dlq, fn


def test_a_batch_outlasting_its_visibility_timeout_is_redelivered_then_dead_lettered():
    # By hand: A receives all 5 at 0 (50 s of work); they reappear at 30 and B takes them (receive 2);
    # A's delete at 50 carries a stale handle; they reappear at 60, A takes them (receive 3); B's
    # delete at 80 is stale; they reappear at 90 and the next receive moves all 5 to the DLQ.
    env, queue, dlq, fn = _batch_run(batch_size=5)
    assert queue.deleted == 0
    assert len(queue.dead) == 5 and dlq.sent == 5
    assert queue.redelivered == 10  # receives 2 and 3 of each message
    assert fn.stats.invocations == 3
    assert {m.receives for m in queue.dead} == {3}


def test_a_batch_inside_its_visibility_timeout_is_delivered_once():
    # Batch 2: 20 s of work against 30 s of visibility; A takes 2, B takes 2 at 0, A the last at 20.
    env, queue, dlq, fn = _batch_run(batch_size=2)
    assert queue.deleted == 5 and queue.redelivered == 0 and not queue.dead
    assert fn.stats.invocations == 3


def test_a_timeout_fails_the_batch_and_it_comes_back():
    env = simpy.Environment()
    queue = SqsQueue(env, "q", visibility_timeout=100, max_receive_count=2)

    def work(fn, batch):
        yield env.timeout(60.0)

    fn = _function(env, work, timeout=29.0)
    EventSourceMapping(env, queue, fn, batch_size=1, maximum_concurrency=1, initial=1)
    queue.send(None)
    env.run(until=1000)
    # Fails at 29 (timeout), reappears at 100, fails at 129, reappears at 200: dead-lettered.
    assert fn.stats.timeouts == 2 and queue.deleted == 0 and len(queue.dead) == 1
    assert fn.stats.gb_seconds == pytest.approx(2 * 29.0 * 1769 / 1024)


def test_the_mapping_scales_by_300_a_minute_from_five():
    env = simpy.Environment()
    queue = SqsQueue(env, "q", visibility_timeout=10_000)

    def work(fn, batch):
        yield env.timeout(1_000.0)

    esm = EventSourceMapping(env, queue, _function(env, work, slots=1000), batch_size=1)
    for _ in range(2000):
        queue.send(None)
    env.run(until=60.0 + 1e-6)
    assert esm.pollers == 5 + 300


def test_a_rate_quota_spaces_requests():
    # 60 a minute is one a second: 120 requests taken at once, with a full bucket of 60, end at 60 s.
    env = simpy.Environment()
    bucket = TokenBucket(env, per_minute=60)
    done = []

    def ask():
        yield from bucket.take(1)
        done.append(env.now)

    for _ in range(120):
        env.process(ask())
    env.run()
    assert done[59] == pytest.approx(0.0) and done[-1] == pytest.approx(60.0)


def test_cpu_share_follows_memory():
    env = simpy.Environment()
    fn = _function(env, None, memory_mb=1024)
    assert fn.cpu_factor() == pytest.approx(1769 / 1024)
    big = _function(env, None, memory_mb=3008)
    assert big.cpu_factor() == pytest.approx(1.0) and big.cpu_factor(threads=2) == pytest.approx(1769 / 3008)
