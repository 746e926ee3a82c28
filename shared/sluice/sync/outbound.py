"""Where a source connector may connect (R-SYNC-6, R-SYNC-7): one operator list for every connector.

A web or git source reaches any public address, every request and every redirect hop checked where
it connects (:func:`sluice.outbound.guarded_http_client`). A SaaS connector (SharePoint, Drive,
Confluence, ...) reaches only its service's documented hosts. Either may also reach what the
operator lists in ``SyncAllowedHosts`` (``SYNC_ALLOWED_HOSTS``: host names and CIDR ranges): an
intranet, a Data Center install, a test's loopback server. Never anything else: no instance
metadata, no database, no endpoint of the deployment's own network the operator did not name.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from typing import NoReturn

import httpx

from sluice.config import SyncSettings
from sluice.outbound import (
    EndpointNotAllowed,
    OutboundPolicy,
    Resolver,
    Sentences,
    guarded_http_client,
    http_host,
    resolve_host,
    url_problem,
)
from sluice.retry import Failure, RetryPolicy, Try, call, parse_retry_after

__all__ = ["Busy", "EndpointNotAllowed", "NOT_DOCUMENTED_HOST", "NOT_REACHABLE", "SENTENCES", "guarded_client",
           "retry_failure", "saas_url_problem", "send_retried", "sync_policy", "url_problem_for_source"]

SENTENCES = Sentences(
    not_http="Must be an http(s) URL such as https://docs.example.com/.",
    userinfo="Must not carry a user name or password; a source's credential is named by secret_id.",
    not_public=("Must resolve to a public address. A host on the deployment's own network needs the operator "
                "to list it in SyncAllowedHosts (SYNC_ALLOWED_HOSTS)."),
)
NOT_DOCUMENTED_HOST = ("Must be one of the service's own hosts ({hosts}); any other host needs the operator to "
                       "list it in SyncAllowedHosts (SYNC_ALLOWED_HOSTS).")
NOT_HTTPS = "Must be an https URL; plain http only to a host the operator lists in SyncAllowedHosts."
# How a connector's report names a connection the guard refused (no host, no address: words only).
NOT_REACHABLE = "the address is not one the deployment may reach"


def sync_policy(settings: SyncSettings) -> OutboundPolicy:
    """The operator's list (``SYNC_ALLOWED_HOSTS``) as a policy."""
    return OutboundPolicy.parse(settings.sync_allowed_hosts)


def url_problem_for_source(url: str, policy: OutboundPolicy, *, https_only: bool = False,
                           resolve: Resolver = resolve_host) -> str | None:
    """Why a web or git source may not reach ``url`` (``None``: it may). ``https_only``: plain http only
    to a host the operator listed (a git server on loopback in the tests, an intranet one)."""
    problem = url_problem(url, policy, sentences=SENTENCES, resolve=resolve)
    if problem is None and https_only and url.lower().startswith("http:") and not _listed(url, policy, resolve):
        return NOT_HTTPS
    return problem


def saas_url_problem(url: str, documented: Iterable[str], policy: OutboundPolicy, *,
                     resolve: Resolver = resolve_host) -> str | None:
    """Why a SaaS connector may not reach ``url``: its host must match one of the service's ``documented``
    host patterns (``graph.microsoft.com``, ``*.atlassian.net``; https only) or be listed by the operator."""
    documented = tuple(documented)
    host = http_host(url)
    if host is None:
        return SENTENCES.not_http
    if "@" in url.split("//", 1)[-1].split("/", 1)[0]:
        return SENTENCES.userinfo
    if _listed(url, policy, resolve):
        return None
    if url.lower().startswith("https:") and any(fnmatch.fnmatchcase(host, p.lower()) for p in documented):
        return None
    return NOT_DOCUMENTED_HOST.format(hosts=", ".join(documented))


def _listed(url: str, policy: OutboundPolicy, resolve: Resolver) -> bool:
    """Whether the operator named the URL's host, or a range holding every address it resolves to."""
    host = http_host(url)
    if host is None:
        return False
    if host in policy.hosts:
        return True
    return bool(policy.networks) and url_problem(
        url, OutboundPolicy(networks=policy.networks), resolve=resolve) is None and not _public_only(url, resolve)


def _public_only(url: str, resolve: Resolver) -> bool:
    """Whether the URL's host is public anyway (then a range did not 'list' it, the public rule allowed it)."""
    return url_problem(url, OutboundPolicy(), resolve=resolve) is None


def guarded_client(policy: OutboundPolicy, *, timeout: httpx.Timeout, max_redirects: int = 0,
                   user_agent: str | None = None, resolve: Resolver = resolve_host) -> httpx.Client:
    """The HTTP client every connector uses: it connects only to addresses ``policy`` allows, each
    redirect hop checked again (at most ``max_redirects``)."""
    headers = {"User-Agent": user_agent} if user_agent else None
    return guarded_http_client(policy, timeout=timeout, resolve=resolve, max_redirects=max_redirects,
                               headers=headers)


# --- throttling and a server's bad moment: one rule for every connector -------------------------------


class Busy(Exception):
    """A 429 or 5xx (or what a service documents as throttling, with its ``reason``): tried again after
    the server's Retry-After or the policy's back-off."""

    def __init__(self, status: int, retry_after: float | None, reason: str | None = None) -> None:
        super().__init__(f"HTTP {status}" + (f" {reason}" if reason else ""))
        self.status, self.retry_after, self.reason = status, retry_after, reason


def busy_unless_answered(resp: httpx.Response) -> httpx.Response:
    """``resp``, unless it is a 429 or a 5xx: then it is closed and :class:`Busy` raised."""
    if resp.status_code == 429 or resp.status_code >= 500:
        resp.close()
        raise Busy(resp.status_code, parse_retry_after(resp.headers))
    return resp


def retry_failure(exc: Exception, _: Try | None = None) -> Failure | None:
    """``sluice.retry``'s classification of a connector's request: Busy and a transport failure are
    tried again; anything else (a refusal, a malformed URL) goes through as it is."""
    if isinstance(exc, Busy):
        return Failure(f"HTTP{exc.status}", True, str(exc), exc, exc.retry_after)
    if isinstance(exc, httpx.TransportError) and not isinstance(exc, httpx.UnsupportedProtocol):
        return Failure(type(exc).__name__, True, type(exc).__name__, exc)
    return None


def send_retried(policy: RetryPolicy, send: Callable[[], httpx.Response],
                 give_up: Callable[[Failure, int, str], NoReturn], *,
                 on_retry: Callable[[Failure, int, float], None] | None = None) -> httpx.Response:
    """``send()`` (a streamed request) until its answer is neither a 429 nor a 5xx, through ``sluice.retry``;
    ``give_up(failure, attempts, detail)`` when the policy's tries or time run out."""
    return call(policy, lambda _: busy_unless_answered(send()), retry_failure, give_up, on_retry=on_retry)
