"""Principals and a connection for the access tests: plain values, the real embedded Postgres."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from sluice.identity import Principal

VIEW, EDIT, SECRETS = "collections:view", "collections:edit", "secrets:view"


def who(user: str, org: str | None = None, *perms: str, admin: bool = False) -> Principal:
    return Principal(user_id=user, org_id=org, permissions=frozenset(perms), is_app_admin=admin)


@pytest.fixture(scope="package")
def aws_client() -> Iterator[Callable[[str], Any]]:
    """Clients of a private moto server: nothing process-wide is patched, so a local runtime
    another test started keeps talking to its own moto."""
    from moto.server import ThreadedMotoServer

    from sluice.local.runtime import free_port

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()

    def client(service: str) -> Any:
        return boto3.client(service, endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                            aws_access_key_id="testing", aws_secret_access_key="testing")  # noqa: S106 - moto's

    yield client
    server.stop()
