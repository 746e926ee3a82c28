"""The Host rule the gateway and the local moto share (sluice/local/hosts.py)."""

from __future__ import annotations

import pytest

from sluice.local.hosts import host_allowed, origins


@pytest.mark.parametrize("header", ["127.0.0.1", "127.0.0.1:4566", "localhost", "LOCALHOST:8787", "[::1]:4566",
                                    "172.17.0.1:4566", "10.0.0.7"])
def test_loopback_names_and_addresses_are_taken(header):
    assert host_allowed(header)


@pytest.mark.parametrize("header", ["", "evil.example", "evil.example:4566", "127.0.0.1.evil.example",
                                    "localhost.evil", "host.docker.internal:4566", "[evil]:1"])
def test_any_other_name_is_refused(header):
    assert not host_allowed(header)


def test_a_name_the_stack_is_reached_by_is_taken():
    assert host_allowed("host.docker.internal:4566", {"host.docker.internal"})
    assert not host_allowed("evil.example", {"host.docker.internal"})


def test_the_origins_of_a_loopback_server():
    assert origins("127.0.0.1", 8787) == {"http://127.0.0.1:8787", "http://localhost:8787", "http://[::1]:8787"}
    assert "http://192.168.1.5:8787" in origins("192.168.1.5", 8787)
