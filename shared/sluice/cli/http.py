"""The HTTP transport the command's API clients use."""

from __future__ import annotations

import socket

import httpx

# httpx writes a request's headers and its body in two sends. With Nagle's algorithm on, the body
# waits for the server's (delayed) ACK of the headers: up to 40 ms on every POST. TCP_NODELAY sends
# it at once, as curl and urllib3 do by default.
NO_DELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


def api_transport(retries: int = 0) -> httpx.HTTPTransport:
    """A transport with Nagle's algorithm off, retrying a failed connection ``retries`` times."""
    return httpx.HTTPTransport(retries=retries, socket_options=NO_DELAY)
