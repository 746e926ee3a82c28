"""Where a collection's embedding endpoint may point.

Any writer of a base may set its ``embedding_base_url``, and the embed and
search workers then POST to it from inside the deployment's network. Left
open, that is a server-side request forgery: an instance-metadata address, the
database's host or any other internal service would be reachable through
Sluice. So an endpoint must resolve only to public addresses unless the
operator allows it: ``EMBEDDING_ALLOWED_ENDPOINTS`` lists host names and CIDR
ranges, comma-separated. A self-hosted Ollama or TEI on the deployment's own
network is legitimate, but the operator says so, not any writer of a base.

It is checked when a base is configured (a 422 naming the field) and again
before each call, since the name may resolve elsewhere by then.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str], list[str]]

NOT_HTTP = "Must be an http(s) URL such as https://api.openai.com/v1."
# One answer for "private" and "does not resolve": the API must not tell a caller which
# internal names exist or where they point.
NOT_PUBLIC = ("Must resolve to a public address. An endpoint on the deployment's own network "
              "needs the operator to allow it (EMBEDDING_ALLOWED_ENDPOINTS).")


def resolve_host(host: str) -> list[str]:
    return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)})


@dataclass(frozen=True)
class EndpointPolicy:
    """The operator's exceptions: host names allowed whatever they resolve to, and address ranges."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, text: str) -> EndpointPolicy:
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for item in (part.strip() for part in text.split(",")):
            if not item:
                continue
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                hosts.add(_normal_host(item))
        return cls(frozenset(hosts), tuple(networks))

    def allows(self, address: IPAddress) -> bool:
        return address.is_global or any(address in n for n in self.networks if n.version == address.version)


def _normal_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def _address(text: str) -> IPAddress:
    address = ipaddress.ip_address(text.split("%", 1)[0])  # an IPv6 zone says nothing about the range
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def http_host(url: str) -> str | None:
    """The host of an http(s) URL, or ``None`` when ``url`` is not one."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return _normal_host(parts.hostname)


def endpoint_problem(url: str, policy: EndpointPolicy, *, resolve: Resolver = resolve_host,
                     unresolved_is_problem: bool = True) -> str | None:
    """Why ``url`` may not be called, or ``None`` when it may.

    Every address the host resolves to must be allowed, so a name cannot pair
    a public address with an internal one. ``unresolved_is_problem`` is for
    configuration time; just before a call a name that does not resolve is
    left to the HTTP client, which fails it as an unreachable endpoint.
    """
    host = http_host(url)
    if host is None:
        return NOT_HTTP
    if host in policy.hosts:
        return None
    try:
        addresses = [_address(host)]
    except ValueError:
        try:
            addresses = [_address(a) for a in resolve(host)]
        except (OSError, UnicodeError, ValueError):
            addresses = []
        if not addresses:
            return NOT_PUBLIC if unresolved_is_problem else None
    return None if all(policy.allows(a) for a in addresses) else NOT_PUBLIC
