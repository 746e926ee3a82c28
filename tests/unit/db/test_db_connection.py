"""The database connection requires TLS unless the URL says otherwise or the server is local."""

from __future__ import annotations

import pytest
from psycopg.conninfo import conninfo_to_dict

from sluice.db.connection import with_tls


@pytest.mark.parametrize("url", [
    "postgresql://u:p@cluster.abc.eu-west-1.rds.amazonaws.com:5432/sluice",
    "host=db.internal dbname=sluice user=u",
    "postgresql://u:p@db.internal,replica.internal/sluice",
])
def test_a_remote_server_without_an_sslmode_gets_require(url):
    assert conninfo_to_dict(with_tls(url))["sslmode"] == "require"
    assert conninfo_to_dict(with_tls(url))["host"] == conninfo_to_dict(url)["host"]


@pytest.mark.parametrize("url", [
    "postgresql://u:p@db.internal/sluice?sslmode=verify-full",  # the URL's own, stricter, choice
    "postgresql://u:p@db.internal/sluice?sslmode=disable",  # or looser: the operator said so
    "postgresql://u:p@localhost:5432/sluice", "postgresql://u:p@127.0.0.1/sluice",
    "postgresql:///sluice?host=/tmp/pg", "dbname=sluice",  # a unix socket: the embedded server
])
def test_an_explicit_sslmode_or_a_local_server_is_left_alone(url):
    assert with_tls(url) == url
