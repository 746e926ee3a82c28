"""Where Sluice may connect on a writer's behalf: public addresses only, unless the operator says so.

A writer of a base names URLs that the deployment's functions then connect to from inside its
network: an embedding endpoint, a web site to crawl, a git repository, a SaaS tenant's host. Left
open, each is a server-side request forgery: an instance-metadata address, the database's host or
any other internal service would be reachable through Sluice. So a URL must resolve only to public
addresses unless the operator's policy lists the host or its range (host names and CIDR ranges,
comma-separated: ``EMBEDDING_ALLOWED_ENDPOINTS`` for embedding endpoints, ``SYNC_ALLOWED_HOSTS``
for every source connector).

It is checked when the URL is configured (a refusal naming the field), and again where the worker
connects: :func:`guarded_http_client` resolves each host itself, checks every address and connects
to the address it checked, so a name that re-points after the check (DNS rebinding) reaches nothing
inside, and a redirect is a new connection, checked again. This module reads no settings: callers
hand it the policy their section holds.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str], list[str]]



@dataclass(frozen=True)
class Sentences:
    """How a caller words the three refusals: each names its own setting and an example of its own."""

    not_http: str = "Must be an http(s) URL."
    # A user name or password in the URL would be sent with every request, and
    # "https://api.example.com@10.0.0.7/" reads as one host while connecting to another.
    userinfo: str = "Must not carry a user name or password."
    # One answer for "private" and "does not resolve": the API must not tell a caller which
    # internal names exist or where they point.
    not_public: str = ("Must resolve to a public address. A host on the deployment's own network needs "
                       "the operator to allow it.")


def resolve_host(host: str) -> list[str]:
    return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)})


@dataclass(frozen=True)
class OutboundPolicy:
    """The operator's exceptions: host names allowed whatever they resolve to, and address ranges."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, text: str) -> OutboundPolicy:
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
        """Whether the policy allows ``address`` and every IPv4 address it carries inside it."""
        return all(a.is_global or any(a in n for n in self.networks if n.version == a.version)
                   for a in (address, *embedded_ipv4(address)))


def _normal_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


# NAT64 prefixes (RFC 6052 well-known, RFC 8215 local use): the last 32 bits are the IPv4 address
# a NAT64 gateway connects to, so 64:ff9b::a9fe:a9fe reaches the instance metadata service.
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))


def embedded_ipv4(address: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address leads to: NAT64, 6to4, Teredo and IPv4-compatible forms.

    Each is a way to name an internal IPv4 address with a global-looking IPv6 one.
    """
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found: list[ipaddress.IPv4Address] = []
    if any(address in n for n in _NAT64):
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    if 1 < int(address) < 1 << 32:  # ::a.b.c.d, the deprecated IPv4-compatible form (not :: or ::1)
        found.append(ipaddress.IPv4Address(int(address)))
    return found


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


def _addresses(host: str, resolve: Resolver) -> list[IPAddress]:
    """What ``host`` stands for: itself when it is an address, else what it resolves to (maybe nothing)."""
    try:
        return [_address(host)]
    except ValueError:
        pass
    try:
        return [_address(a) for a in resolve(host)]
    except (OSError, UnicodeError, ValueError):
        return []


def url_problem(url: str, policy: OutboundPolicy, *, sentences: Sentences = Sentences(),
                resolve: Resolver = resolve_host) -> str | None:
    """Why ``url`` may not be reached, or ``None`` when it may.

    Every address the host resolves to must be allowed, so a name cannot pair
    a public address with an internal one.
    """
    host = http_host(url)
    if host is None:
        return sentences.not_http
    if "@" in urlsplit(url).netloc:
        return sentences.userinfo
    if host in policy.hosts:
        return None
    addresses = _addresses(host, resolve)
    return None if addresses and all(policy.allows(a) for a in addresses) else sentences.not_public


class EndpointNotAllowed(Exception):
    """Raised where the worker connects: the host resolves to an address the policy does not allow."""


def connect_addresses(host: str, policy: OutboundPolicy, resolve: Resolver = resolve_host) -> list[IPAddress] | None:
    """Where a connection to ``host`` may go, checked now: the addresses to connect to (IPv4 first, as
    many VPCs have no IPv6 route; empty: the name does not resolve), or None when the operator listed
    the host by name (connect by name). Raises EndpointNotAllowed when any address is not allowed.

    Every transport that connects on a writer's behalf connects to these, not to the name, so a
    name that re-points after this check (DNS rebinding) reaches nothing inside; TLS still verifies
    the certificate against the URL's name, not the address.
    """
    if _normal_host(host) in policy.hosts:
        return None
    addresses = _addresses(_normal_host(host), resolve)
    if not all(policy.allows(a) for a in addresses):
        raise EndpointNotAllowed(f"{host} resolves to an address the deployment does not allow")
    return sorted(addresses, key=lambda a: a.version)


class GuardedBackend(httpcore.SyncBackend):
    """httpcore's own sockets, opened only to an address the policy allows, and to the one checked."""

    def __init__(self, policy: OutboundPolicy, resolve: Resolver = resolve_host) -> None:
        self._policy = policy
        self._resolve = resolve

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        addresses = connect_addresses(host, self._policy, self._resolve)
        if addresses is None:
            return super().connect_tcp(host, port, timeout, local_address, socket_options)
        if not addresses:
            raise httpcore.ConnectError(f"{host} does not resolve")
        # Each checked address in turn, as socket.create_connection would try them.
        failure: httpcore.ConnectError | None = None
        for address in addresses:
            try:
                return super().connect_tcp(str(address), port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                failure = exc
        assert failure is not None
        raise failure


def guarded_http_client(policy: OutboundPolicy, *, timeout: httpx.Timeout, resolve: Resolver = resolve_host,
                        max_redirects: int = 0, headers: dict[str, str] | None = None) -> httpx.Client:
    """An HTTP client that connects only where ``policy`` allows.

    With ``max_redirects`` it follows at most that many redirects; each hop is a connection of its
    own through the same check. ``trust_env`` is off so that no proxy from the environment stands
    between the check and the connection.
    """
    transport = httpx.HTTPTransport()
    # httpx takes no network backend of its own; its pool is httpcore's and takes one.
    transport._pool._network_backend = GuardedBackend(policy, resolve)  # noqa: SLF001
    return httpx.Client(transport=transport, timeout=timeout, trust_env=False, headers=headers,
                        follow_redirects=max_redirects > 0, max_redirects=max_redirects)
