"""The outbound guard for connectors whose official SDK speaks HTTP through ``requests`` (Azure Blob's
azure-core, Google Cloud Storage's google-auth and google-resumable-media).

Those SDKs open their own connections, so the httpx client every other connector uses
(:func:`sluice.sync.outbound.guarded_client`) cannot stand in for them; each accepts a
``requests.Session`` instead (azure-core's ``RequestsTransport(session=)``, google-cloud-storage's
``_http`` and google-auth's ``Request(session=)``). :func:`guarded_session` is that session, with
the same check as the httpx client, made where the connection is opened: the host is resolved
once, every address checked against the operator's policy (:func:`sluice.outbound.connect_addresses`)
and the socket opened to the address checked, so a name that re-points after the config was
accepted (DNS rebinding) reaches nothing inside. Every request's host must also be one of the
service's documented hosts or one the operator lists, and no redirect is followed, so a 3xx
cannot lead a signed request elsewhere; no proxy from the environment stands in between.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util import connection
from urllib3.util.retry import Retry

from sluice.outbound import EndpointNotAllowed, OutboundPolicy, Resolver, connect_addresses, http_host, resolve_host
from sluice.sync.outbound import saas_url_problem


def _open(conn: HTTPConnection, policy: OutboundPolicy, resolve: Resolver) -> socket.socket | None:
    """The socket of a new connection, to an address checked now; None: the host is listed by name."""
    addresses = connect_addresses(conn._dns_host, policy, resolve)  # noqa: SLF001 - the name urllib3 would resolve
    if addresses is None:
        return None
    if not addresses:
        raise NameResolutionError(conn.host, conn, socket.gaierror(f"{conn.host} does not resolve"))
    failure: OSError | None = None
    for address in addresses:
        try:
            return connection.create_connection((str(address), conn.port), conn.timeout,
                                                source_address=conn.source_address,
                                                socket_options=conn.socket_options)
        except TimeoutError as exc:
            raise ConnectTimeoutError(conn, f"Connection to {conn.host} timed out.") from exc
        except OSError as exc:
            failure = exc
    raise NewConnectionError(conn, f"Failed to establish a new connection: {failure}")


def _pool_classes(policy: OutboundPolicy, resolve: Resolver) -> dict[str, type[HTTPConnectionPool]]:
    class GuardedHTTPConnection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            return _open(self, policy, resolve) or super()._new_conn()

    class GuardedHTTPSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            return _open(self, policy, resolve) or super()._new_conn()

    class GuardedHTTPPool(HTTPConnectionPool):
        ConnectionCls = GuardedHTTPConnection

    class GuardedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = GuardedHTTPSConnection

    return {"http": GuardedHTTPPool, "https": GuardedHTTPSPool}


class GuardedAdapter(HTTPAdapter):
    """A ``requests`` adapter whose connections are opened only where the policy allows, to a host of
    the service's (``documented`` patterns) or the operator's."""

    def __init__(self, policy: OutboundPolicy, documented: Iterable[str], resolve: Resolver = resolve_host) -> None:
        self._policy, self._documented, self._resolve = policy, tuple(documented), resolve
        self._hosts: dict[str, bool] = {}
        # No retry here: the SDKs retry in their own policies, each attempt through this adapter.
        super().__init__(max_retries=Retry(total=False, redirect=False, raise_on_status=False))

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        self.poolmanager.pool_classes_by_scheme = _pool_classes(self._policy, self._resolve)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        raise EndpointNotAllowed("a proxy would stand between the check and the connection")

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        url = str(request.url or "")
        key = f"{url.split(':', 1)[0].lower()}://{http_host(url)}"
        if key not in self._hosts:
            self._hosts[key] = saas_url_problem(url, self._documented, self._policy, resolve=self._resolve) is None
        if not self._hosts[key]:
            raise EndpointNotAllowed(f"{http_host(url)} is neither one of the service's hosts nor listed")
        return super().send(request, *args, **kwargs)


class _NoRedirects(requests.Session):
    def get_redirect_target(self, resp: requests.Response) -> str | None:
        return None  # requests asks this before every hop: a redirect is the answer, never followed


_SESSIONS: dict[type[requests.Session], type[requests.Session]] = {}


def guarded_session(policy: OutboundPolicy, documented: Iterable[str], *,
                    session_class: type[requests.Session] = requests.Session, resolve: Resolver = resolve_host,
                    **session_args: Any) -> requests.Session:
    """A ``session_class`` session (google-auth's AuthorizedSession for GCS) that connects only through
    :class:`GuardedAdapter` and follows no redirect; ``session_args`` are its constructor's."""
    if session_class not in _SESSIONS:
        _SESSIONS[session_class] = type(f"Guarded{session_class.__name__}", (_NoRedirects, session_class), {})
    out = _SESSIONS[session_class](**session_args)
    out.trust_env = False  # no proxy, .netrc or CA bundle from the environment
    adapter = GuardedAdapter(policy, documented, resolve)
    for prefix in list(out.adapters):
        del out.adapters[prefix]
    out.mount("https://", adapter)
    out.mount("http://", adapter)
    return out

