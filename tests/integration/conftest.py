"""What every integration test shares: a connection to the test's own migrated database, and a
moto bucket encrypted with a KMS key, as the stages' and the services' object store."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from sluice.storage import ObjectStore
from tests.integration.moto_bucket import Bucket


@pytest.fixture
def conn(db_url):
    """One connection; each test commits what it wants seen, as a request would."""
    with psycopg.connect(db_url, row_factory=dict_row, autocommit=False) as c:
        register_vector(c)
        yield c


@pytest.fixture
def bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[Bucket]:
    """A moto S3 bucket and KMS key, alive for the test (moto's other services too)."""
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        key_id = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["KeyId"]
        name = "sluice-test"
        s3.create_bucket(Bucket=name)
        yield Bucket(s3, name, key_id, ObjectStore(s3, name, key_id))
