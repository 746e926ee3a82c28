"""Every request of a crawl: guarded, paced, bounded, retried when the server asks for it.

* Where: each URL, and each redirect hop (at most 5), is checked by the one outbound rule
  (``url_problem_for_source``) and then connected through the guarded client, which resolves the host
  again and connects only to the address it checked (a name re-pointed after the check reaches nothing).
* How fast: one request at a time per host, at most ``rate_limit`` a minute and never faster than
  the host's robots.txt ``Crawl-delay``.
* How much: a body is read up to the upload ceiling plus one byte (more says "too large" without
  holding the rest), and a request has a time limit of its own, body included.
* Throttling: ``429`` and ``503`` (and other 5xx) are tried again through ``sluice.retry``, after the
  server's ``Retry-After`` when it sends one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

import httpx

from sluice.outbound import OutboundPolicy, Resolver, resolve_host
from sluice.retry import Failure, RetryPolicy, Try, call, parse_retry_after
from sluice.sync.connectors.web.urls import canonical, host_of
from sluice.sync.outbound import Busy, EndpointNotAllowed, guarded_client, url_problem_for_source

MAX_REDIRECTS = 5
REDIRECTS = frozenset({301, 302, 303, 307, 308})
# A crawl's request gives up within a minute of throttling or a server's bad moment.
POLICY = RetryPolicy(max_attempts=4, base_delay=1.0, max_delay=15.0, total_seconds=60.0)


class Refused(Exception):
    """The crawl will not make this request (an address it may not reach, too many redirects)."""


class Unreachable(Exception):
    """The request was made and did not succeed (a timeout, a connection error, 5xx after retries)."""


@dataclass
class Response:
    url: str  # the canonical URL that answered, after redirects
    status: int
    headers: httpx.Headers
    body: bytes = b""
    too_large: bool = False


@dataclass
class Totals:
    """A run's traffic: requests made and body bytes received (as sent, before decompression)."""

    requests: int = 0
    bytes: int = 0
    log: list[str] = field(default_factory=list)


class Fetcher:
    def __init__(self, policy: OutboundPolicy, *, user_agent: str, max_bytes: int, rate_per_minute: int,
                 request_seconds: float = 60.0, resolve: Resolver = resolve_host, retry: RetryPolicy = POLICY,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self.policy, self.resolve = policy, resolve
        self.max_bytes = max_bytes
        self.interval = 60.0 / max(1, rate_per_minute)
        self.request_seconds = request_seconds
        self.retry = retry
        self.sleep, self.clock = sleep, clock
        self.delays: dict[str, float] = {}  # a host's robots.txt Crawl-delay
        self._next: dict[str, float] = {}
        self.totals = Totals()
        self.client = guarded_client(policy, timeout=httpx.Timeout(10.0, read=30.0), max_redirects=0,
                                     user_agent=user_agent, resolve=resolve)

    def close(self) -> None:
        self.client.close()

    def set_delay(self, host: str, seconds: float) -> None:
        """The host's robots.txt ``Crawl-delay``, from the request after the robots.txt one."""
        self.delays[host] = seconds
        self._next[host] = max(self._next.get(host, 0.0), self.clock() + seconds)

    def _pace(self, host: str) -> None:
        now = self.clock()
        at = self._next.get(host, now)
        if at > now:
            self.sleep(at - now)
        self._next[host] = max(at, now) + max(self.interval, self.delays.get(host, 0.0))

    def get(self, url: str, headers: dict[str, str] | None = None, *, max_bytes: int | None = None) -> Response:
        """``url`` fetched (redirects followed and checked); a Refused or Unreachable says why not."""
        current = url
        for hop in range(MAX_REDIRECTS + 1):
            problem = url_problem_for_source(current, self.policy, resolve=self.resolve)
            if problem is not None:
                where = "A redirect led to an address" if hop else "The address is one"
                raise Refused(f"{where} the deployment may not reach: {problem} Nothing was fetched there.")
            resp = self._send(current, headers or {}, self.max_bytes if max_bytes is None else max_bytes)
            location = resp.headers.get("location")
            if resp.status not in REDIRECTS or not location:
                return resp
            target = canonical(location, current)
            if target is None:
                raise Refused("A redirect led to an address that is not an http(s) page; nothing was fetched there.")
            current = target
        raise Refused(f"More than {MAX_REDIRECTS} redirects; the page was not fetched.")

    def _send(self, url: str, headers: dict[str, str], limit: int) -> Response:
        host = host_of(url)

        def send(_: Try) -> Response:
            self._pace(host)
            self.totals.requests += 1
            self.totals.log.append(url)
            started = self.clock()
            with self.client.stream("GET", url, headers=headers) as r:
                if r.status_code == 429 or r.status_code >= 500:
                    raise Busy(r.status_code, parse_retry_after(r.headers))
                chunks: list[bytes] = []
                size = 0
                too_large = False
                if r.status_code == 200:
                    for chunk in r.iter_bytes(65536):
                        chunks.append(chunk)
                        size += len(chunk)
                        if size > limit:
                            too_large = True
                            break
                        if self.clock() - started > self.request_seconds:
                            raise httpx.ReadTimeout("the response took longer than a request may")
                self.totals.bytes += r.num_bytes_downloaded
                body = b"".join(chunks)
                return Response(canonical(str(r.url)) or url, r.status_code, r.headers,
                                body[: limit + 1], too_large)

        def classify(exc: Exception, _: Try) -> Failure | None:
            if isinstance(exc, Busy):
                return Failure(f"HTTP {exc.status}", True, str(exc), exc, exc.retry_after)
            if isinstance(exc, httpx.TimeoutException):
                return Failure("a timeout", True, "timeout", exc)
            if isinstance(exc, httpx.TransportError):
                return Failure("a connection error", True, type(exc).__name__, exc)
            return None

        def give_up(failure: Failure, attempts: int, detail: str) -> NoReturn:
            raise Unreachable(f"The server kept failing ({failure.kind}, {attempts} tries); the page was not "
                              "read, and the next run tries again.") from failure.cause

        try:
            return call(self.retry, send, classify, give_up)
        except EndpointNotAllowed as exc:
            raise Refused("The host resolved, when connecting, to an address the deployment may not reach; "
                          "nothing was fetched.") from exc
