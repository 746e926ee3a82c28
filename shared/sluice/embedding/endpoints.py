"""Where a collection's embedding endpoint may point.

Any writer of a base may set its ``embedding_base_url``, and the embed and
search workers then POST to it from inside the deployment's network. Left
open, that is a server-side request forgery: an instance-metadata address, the
database's host or any other internal service would be reachable through
Sluice. So an endpoint must resolve only to public addresses unless the
operator allows it: ``EMBEDDING_ALLOWED_ENDPOINTS`` lists host names and CIDR
ranges, comma-separated. A self-hosted Ollama or TEI on the deployment's own
network is legitimate, but the operator says so, not any writer of a base.

It is checked when a base is configured (a 400 naming the field), and again
where the worker connects: the embedders' HTTP client resolves each host
itself, checks every address and connects to the address it checked, so a
name that re-points after the check (DNS rebinding) reaches nothing inside.
"""

from __future__ import annotations

from sluice.config import EndpointSettings, current
from sluice.outbound import (
    EndpointNotAllowed,
    GuardedBackend,
    OutboundPolicy,
    Resolver,
    Sentences,
    embedded_ipv4,
    guarded_http_client,
    http_host,
    resolve_host,
    url_problem,
)

# A base's policy is the generic one; the name stays for the embedders, chat models and tests.
EndpointPolicy = OutboundPolicy

NOT_HTTP = "Must be an http(s) URL such as https://api.openai.com/v1."
NO_USERINFO = "Must not carry a user name or password; a base's key is named by embedding_secret_id."
NOT_PUBLIC = ("Must resolve to a public address. An endpoint on the deployment's own network "
              "needs the operator to allow it (EMBEDDING_ALLOWED_ENDPOINTS).")
_SENTENCES = Sentences(not_http=NOT_HTTP, userinfo=NO_USERINFO, not_public=NOT_PUBLIC)

__all__ = ["NOT_HTTP", "NOT_PUBLIC", "NO_USERINFO", "EndpointNotAllowed", "EndpointPolicy", "GuardedBackend",
           "deployment_policy", "embedded_ipv4", "endpoint_problem", "guarded_http_client", "http_host",
           "resolve_host"]


def deployment_policy() -> OutboundPolicy:
    """The policy this deployment's operator set (``EMBEDDING_ALLOWED_ENDPOINTS``)."""
    return OutboundPolicy.parse(current(EndpointSettings).embedding_allowed_endpoints)


def endpoint_problem(url: str, policy: OutboundPolicy, *, resolve: Resolver = resolve_host) -> str | None:
    """Why ``url`` may not be a base's endpoint, or ``None`` when it may."""
    return url_problem(url, policy, sentences=_SENTENCES, resolve=resolve)
