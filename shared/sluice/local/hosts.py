"""Who the local stack answers: the one rule the gateway and the local moto share.

A web page the developer's browser opens can resolve a name of its own to 127.0.0.1 (DNS
rebinding) and reach a local port as if it were its own origin, but it cannot make the browser
send a Host it did not name. So a request whose Host is neither a loopback name, a name the stack
was told it is reached by, nor an IP address (which no page can rebind) is refused. A page that
names 127.0.0.1 itself is another origin: the browser says so in Origin (and Sec-Fetch-Site),
and only the gateway's own origin is taken (sluice/local/motoserver.py).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def host_name(header: str) -> str:
    """The host of a Host header, without its port (``[::1]:8787`` → ``::1``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def host_allowed(header: str, names: Iterable[str] = ()) -> bool:
    """Whether a request with this Host header is addressed to the stack (see the module's doc)."""
    name = host_name(header)
    return bool(name) and (name in LOOPBACK_HOSTS or name in {n.lower() for n in names} or _is_address(name))


def origins(host: str, port: int) -> frozenset[str]:
    """The web origins of a server listening on ``host:port``, by each loopback name as well."""
    names = {"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host}
    return frozenset(f"http://{name}:{port}" for name in names)
