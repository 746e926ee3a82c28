"""The building blocks of the capacity simulation (issue 30), in simpy: an SQS queue with visibility
timeouts and a redrive policy, an event source mapping that scales its pollers as Lambda's does, the
account's concurrency, a function with its memory, timeout and reserved concurrency, and the limited
resources the stages share (database connections, a provider's requests per minute).

Only ``bench/simulate.py`` and the tests import this; nothing under ``functions/`` or ``shared/``
does, and none of it is shipped. Times are seconds of simulated time.

Model choices, each also in SCALING.md:
- A batch is one invocation; its messages are deleted when the invocation ends (success), or left
  to reappear when their visibility timeout runs out (failure, or an invocation still running).
- A delete with a receipt handle older than the message's latest receive is ignored: SQS documents
  that such a delete "might not" remove the message, and the model takes the pessimistic reading.
- A message whose receive count has reached ``max_receive_count`` is moved to the dead-letter queue
  at its next receive, as SQS's redrive policy does.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import simpy

Work = Generator[simpy.events.Event, Any, Any]

# --- AWS figures the model uses by default; each with its source (looked up 2026-12-02) ------------
# Lambda, "Configuring scaling behavior for SQS event source mappings"
# (docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html): five concurrent batches to start,
# "up to 300 more instances per minute", at most 1,000 batches at once per mapping.
ESM_INITIAL_POLLERS = 5
ESM_SCALE_PER_MINUTE = 300
ESM_MAX_BATCHES = 1000
# Lambda, "Lambda scaling behavior" (docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html):
# per function, 1,000 new execution environments every 10 seconds.
FUNCTION_SCALE_PER_10S = 1000
# The same guide and the Lambda quotas page: 1,000 concurrent executions per account and Region by default.
ACCOUNT_CONCURRENCY = 1000
# Lambda, "Configuring Lambda function memory" (docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html):
# "At 1,769 MB, a function has the equivalent of one vCPU"; CPU is allocated in proportion to memory.
MB_PER_VCPU = 1769


@dataclass(eq=False)
class Message:
    id: int
    body: Any
    sent_at: float
    receives: int = 0
    handle: int = 0
    visible: bool = True
    deleted: bool = False
    first_received_at: float | None = None


@dataclass
class Sample:
    at: float
    visible: int
    in_flight: int


class SqsQueue:
    """A standard queue: ``receive`` hands out up to n visible messages and hides them for the
    visibility timeout; ``delete`` with the latest receipt handle removes one."""

    _ids = itertools.count()

    def __init__(
        self,
        env: simpy.Environment,
        name: str,
        visibility_timeout: float,
        max_receive_count: int | None = None,
        dead_letters: SqsQueue | None = None,
    ) -> None:
        self.env = env
        self.name = name
        self.visibility_timeout = visibility_timeout
        self.max_receive_count = max_receive_count
        self.dead_letters = dead_letters
        self._visible: deque[Message] = deque()
        self._waiters: list[simpy.Event] = []
        self.in_flight = 0
        self.sent = 0
        self.deleted = 0
        self.redelivered = 0
        self.samples: list[Sample] = []
        self.dead: list[Message] = []

    def send(self, body: Any) -> Message:
        message = Message(next(self._ids), body, self.env.now)
        self.sent += 1
        self._make_visible(message)
        return message

    def _make_visible(self, message: Message) -> None:
        message.visible = True
        self._visible.append(message)
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.triggered:
                w.succeed()

    def depth(self) -> int:
        return len(self._visible)

    def sample(self) -> None:
        self.samples.append(Sample(self.env.now, len(self._visible), self.in_flight))

    def wait_for_message(self) -> simpy.Event:
        event = self.env.event()
        if self._visible:
            event.succeed()
        else:
            self._waiters.append(event)
        return event

    def receive(self, max_messages: int) -> list[Message]:
        """Up to ``max_messages`` visible messages, now (empty when none are visible)."""
        got: list[Message] = []
        while self._visible and len(got) < max_messages:
            message = self._visible.popleft()
            if message.deleted:
                continue
            if self.max_receive_count is not None and message.receives >= self.max_receive_count:
                message.visible = False
                message.deleted = True  # gone from this queue: a late delete of it changes nothing
                self.dead.append(message)
                if self.dead_letters is not None:
                    self.dead_letters.send(message.body)
                continue
            message.receives += 1
            message.handle += 1
            message.visible = False
            if message.receives > 1:
                self.redelivered += 1
            if message.first_received_at is None:
                message.first_received_at = self.env.now
            self.in_flight += 1
            handle = message.handle
            timer = self.env.timeout(self.visibility_timeout)
            timer.callbacks.append(lambda _e, m=message, h=handle: self._expire(m, h))
            got.append(message)
        return got

    def _expire(self, message: Message, handle: int) -> None:
        if message.deleted or message.handle != handle or message.visible:
            return
        self.in_flight -= 1
        self._make_visible(message)

    def delete(self, message: Message, handle: int) -> bool:
        """Remove the message if ``handle`` is its latest receipt handle and it is still hidden."""
        if message.deleted or message.handle != handle or message.visible:
            return False
        message.deleted = True
        self.in_flight -= 1
        self.deleted += 1
        return True


class TokenBucket:
    """A rate quota (requests or tokens per minute): ``take(n)`` waits until n units are available.
    The bucket holds at most one minute's worth and refills continuously."""

    def __init__(self, env: simpy.Environment, per_minute: float) -> None:
        self.env = env
        self.rate = per_minute / 60.0
        self.capacity = per_minute
        self.level = per_minute
        self.updated = 0.0
        self.waited = 0.0
        self._lock = simpy.Resource(env, capacity=1)

    def _refill(self) -> None:
        self.level = min(self.capacity, self.level + (self.env.now - self.updated) * self.rate)
        self.updated = self.env.now

    def take(self, n: float) -> Work:
        started = self.env.now
        with self._lock.request() as turn:
            yield turn
            self._refill()
            if self.level < n:
                yield self.env.timeout((n - self.level) / self.rate)
                self._refill()
            self.level -= n
        self.waited += self.env.now - started


@dataclass
class Stats:
    invocations: int = 0
    messages_done: int = 0
    timeouts: int = 0
    failures: int = 0
    busy_seconds: float = 0.0
    gb_seconds: float = 0.0
    waited_for_concurrency: float = 0.0
    peak_concurrency: int = 0


class Concurrency:
    """The account's concurrent executions, shared by every function without a reservation; a
    function with reserved concurrency draws on its own pool instead."""

    def __init__(self, env: simpy.Environment, limit: int = ACCOUNT_CONCURRENCY) -> None:
        self.env = env
        self.limit = limit
        self.unreserved = simpy.Resource(env, capacity=limit)

    def reserve(self, n: int) -> simpy.Resource:
        # Lambda keeps 100 unreserved; the model only carves the reservation out of the account.
        self.unreserved = simpy.Resource(self.env, capacity=max(1, self.unreserved.capacity - n))
        return simpy.Resource(self.env, capacity=n)


Handler = Callable[["Function", list[Message]], Work]


@dataclass
class Function:
    """A Lambda function: memory (its CPU share), timeout, an optional reservation, and its handler,
    a simpy process over a batch that returns the messages that failed (or None: all succeeded)."""

    env: simpy.Environment
    name: str
    memory_mb: int
    timeout: float
    handler: Handler
    slots: simpy.Resource
    stats: Stats = field(default_factory=Stats)
    running: int = 0

    @property
    def vcpus(self) -> float:
        return self.memory_mb / MB_PER_VCPU

    def cpu_factor(self, threads: int = 1) -> float:
        """How much longer CPU-bound work measured on one full core of this machine takes here: a
        single thread gets min(1, share) of a core; ``threads`` can use up to that many."""
        return 1.0 / max(1e-9, min(float(threads), self.vcpus))

    def invoke(self, batch: list[Message]) -> Work:
        """One invocation: waits for a concurrency slot, runs the handler up to the timeout."""
        asked = self.env.now
        with self.slots.request() as slot:
            yield slot
            self.stats.waited_for_concurrency += self.env.now - asked
            self.running += 1
            self.stats.peak_concurrency = max(self.stats.peak_concurrency, self.running)
            self.stats.invocations += 1
            started = self.env.now
            work = self.env.process(self.handler(self, batch))
            outcome = yield work | self.env.timeout(self.timeout)
            elapsed = self.env.now - started
            self.running -= 1
            self.stats.busy_seconds += elapsed
            self.stats.gb_seconds += elapsed * self.memory_mb / 1024
            if work not in outcome:
                self.stats.timeouts += 1
                return list(batch)  # the whole batch fails; the handler's process is abandoned
            failed = outcome[work] or []
            self.stats.failures += len(failed)
            return failed


class EventSourceMapping:
    """SQS → Lambda: pollers that receive up to ``batch_size`` messages and invoke the function, one
    batch per poller at a time. The pool starts at five and grows by 300 a minute while messages are
    waiting, up to ``maximum_concurrency`` (ScalingConfig) or 1,000 batches."""

    def __init__(
        self,
        env: simpy.Environment,
        queue: SqsQueue,
        function: Function,
        batch_size: int,
        maximum_concurrency: int | None = None,
        initial: int = ESM_INITIAL_POLLERS,
        scale_per_minute: float = ESM_SCALE_PER_MINUTE,
    ) -> None:
        self.env = env
        self.queue = queue
        self.function = function
        self.batch_size = batch_size
        self.cap = min(maximum_concurrency or ESM_MAX_BATCHES, ESM_MAX_BATCHES)
        self.pollers = 0
        self.scale_per_minute = scale_per_minute
        for _ in range(min(initial, self.cap)):
            self._add()
        if self.pollers < self.cap:
            env.process(self._scale())

    def _add(self) -> None:
        self.pollers += 1
        self.env.process(self._poll())

    def _scale(self) -> Work:
        step = 60.0 / self.scale_per_minute
        while self.pollers < self.cap:
            yield self.env.timeout(step)
            if self.queue.depth() > 0:
                self._add()

    def _poll(self) -> Work:
        while True:
            yield self.queue.wait_for_message()
            batch = self.queue.receive(self.batch_size)
            if not batch:
                continue
            handles = [m.handle for m in batch]
            failed = yield self.env.process(self.function.invoke(batch))
            failed_ids = {id(m) for m in failed}
            for message, handle in zip(batch, handles, strict=True):
                if id(message) not in failed_ids and self.queue.delete(message, handle):
                    self.function.stats.messages_done += 1


def md1_wait(arrival_rate: float, service_time: float) -> float:
    """Pollaczek–Khinchine for deterministic service: Wq = ρ / (2μ(1−ρ)), ρ = λ/μ, μ = 1/service."""
    mu = 1.0 / service_time
    rho = arrival_rate / mu
    if rho >= 1:
        return math.inf
    return rho / (2 * mu * (1 - rho))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]
