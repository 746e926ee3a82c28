"""The object-store connector base and S3 (R-SYNC-1, R-SYNC-5): the paged listing that says whether
it is whole, directory markers, the field a refusal names, no credential in a config, credentials
only from the source's secret, and schedules."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sluice.config import Settings
from sluice.errors import UnprocessableError
from sluice.sync.connectors import CREDENTIAL_SENTENCE, ConfigRefusal, S3Connector
from sluice.sync.connectors.s3 import AwsKeys, CredentialRefused, RoleToAssume, read_credential
from sluice.sync.schedule import checked_schedule, schedule_period


class Pages:
    """list_objects_v2 over a fixed list of keys, ``page`` at a time, failing the calls named."""

    def __init__(self, keys: list[tuple[str, int]], page: int, fail: set[int] | None = None) -> None:
        self.keys, self.page, self.fail, self.calls = keys, page, fail or set(), 0
        self.fetched: list[dict[str, Any]] = []

    def list_objects_v2(self, **kw: Any) -> dict[str, Any]:
        self.calls += 1
        if self.calls in self.fail:
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "denied on secret-bucket.internal"}},
                              "ListObjectsV2")
        start = int(kw.get("ContinuationToken", "0"))
        chunk = self.keys[start:start + kw["MaxKeys"]]
        more = start + len(chunk) < len(self.keys)
        resp: dict[str, Any] = {"Contents": [{"Key": k, "Size": s, "ETag": f'"etag-{k}"'} for k, s in chunk],
                                "IsTruncated": more}
        if more:
            resp["NextContinuationToken"] = str(start + len(chunk))
        return resp

    def get_object(self, **kw: Any) -> dict[str, Any]:
        self.fetched.append(kw)

        class Body:
            def __init__(self) -> None:
                self.data = b"x" * 10

            def read(self, n: int = -1) -> bytes:
                out, self.data = (self.data, b"") if n < 0 else (self.data[:n], self.data[n:])
                return out

            def close(self) -> None:
                pass

        return {"Body": Body()}


def connector(client: Any, page: int = 2, **config: Any) -> S3Connector:
    c = S3Connector(S3Connector.CONFIG_MODEL.model_validate({"bucket": "docs-bucket", **config}), client)
    c.PAGE_SIZE = page  # type: ignore[misc]
    return c


KEYS = [("a.md", 5), ("folder/", 0), ("folder/b.md", 7), ("c.pdf", 9), ("notes/", 3)]


def test_a_whole_listing_pages_through_and_skips_directory_markers():
    listing = connector(Pages(KEYS, 2)).list_files()
    assert listing.complete and listing.problem is None and listing.markers_skipped == 1
    assert [f.key for f in listing.files] == ["a.md", "folder/b.md", "c.pdf", "notes/"]
    assert [f.source_path for f in listing.files][:2] == ["s3://docs-bucket/a.md", "s3://docs-bucket/folder/b.md"]
    assert listing.files[0].etag == "etag-a.md" and listing.files[0].size == 5


def test_a_listing_that_fails_part_way_says_it_is_not_whole_and_names_no_host():
    listing = connector(Pages(KEYS, 2, fail={2})).list_files()
    assert not listing.complete and [f.key for f in listing.files] == ["a.md"]
    assert listing.problem == ("The listing stopped part-way (AccessDenied) after 1 file(s); those were synced and "
                               "nothing was removed.")


def test_a_listing_that_fails_on_its_first_page_is_empty_and_not_whole():
    listing = connector(Pages(KEYS, 2, fail={1})).list_files()
    assert not listing.complete and listing.files == []
    assert listing.problem is not None and "could not be listed (AccessDenied)" in listing.problem
    assert "secret-bucket" not in listing.problem


CUT = ("The listing was cut at 2 files, the most one run lists (SYNC_MAX_KEYS_PER_RUN): those were synced and "
       "nothing was removed. Narrow the source's prefix, or split it into several sources.")


def test_a_listing_past_the_runs_key_cap_is_cut_there_and_not_whole():
    listing = connector(Pages(KEYS, 2)).list_files(limit=2)
    assert not listing.complete and [f.key for f in listing.files] == ["a.md", "folder/b.md"]
    assert listing.problem == CUT
    # the cap stops the listing: the pages past it are never asked for (a third page holds notes/)
    client = Pages(KEYS, 2)
    connector(client).list_files(limit=2)
    assert client.calls == 2


def test_a_listing_of_exactly_the_cap_is_whole():
    listing = connector(Pages(KEYS, 2)).list_files(limit=4)
    assert listing.complete and listing.problem is None and len(listing.files) == 4


def test_a_listing_repeating_a_page_stops_as_not_whole():
    class Loop(Pages):
        def list_objects_v2(self, **kw: Any) -> dict[str, Any]:
            self.calls += 1
            return {"Contents": [{"Key": f"k{self.calls}", "Size": 1}], "IsTruncated": True,
                    "NextContinuationToken": "same"}

    listing = connector(Loop([], 1)).list_files()
    assert not listing.complete and len(listing.files) == 2


def test_fetch_writes_inside_the_working_directory_asks_for_the_listed_etag_and_reads_no_more_than_allowed(
        tmp_path: Path):
    client = Pages(KEYS, 2)
    c = connector(client)
    file = c.list_files().files[0]
    target = c.fetch(file, tmp_path, max_bytes=4)
    assert target.parent == tmp_path.resolve() and target.read_bytes() == b"xxxxx"  # max + 1: "too large"
    assert client.fetched == [{"Bucket": "docs-bucket", "Key": "a.md", "IfMatch": '"etag-a.md"'}]


@pytest.mark.parametrize(("config", "field"), [
    ({"bucket": "b", "secret_access_key": "x"}, "secret_access_key"),
    ({"bucket": "b", "Password": "x"}, "Password"),
    ({"bucket": "b", "api-key": "x"}, "api-key"),
    ({"bucket": "b", "auth": {"private_key": "x"}}, "auth.private_key"),
    ({"bucket": "b", "prefix": "ASIAIOSFODNN7EXAMPLE"}, "prefix"),
    ({"bucket": "b", "note": "-----BEGIN RSA PRIVATE KEY-----"}, "note"),
])
def test_a_credential_in_a_config_is_refused_by_the_base_class(config, field):
    assert S3Connector.validate_config(config, Settings()) == ConfigRefusal(CREDENTIAL_SENTENCE, field)


@pytest.mark.parametrize(("config", "field"), [
    ({"bucket": "Bad_Name"}, "bucket"), ({"bucket": "ab"}, "bucket"), ({"bucket": "1.2.3.4"}, "bucket"),
    ({"prefix": "x"}, "bucket"), ({"bucket": "docs", "region": "mars"}, "region"),
    ({"bucket": "docs", "prefix": "a\nb"}, "prefix"), ({"bucket": "docs", "secret_id": "x"}, "secret_id"),
])
def test_a_refusal_names_the_field_it_is_about(config, field):
    refusal = S3Connector.validate_config(config, Settings())
    assert refusal is not None and refusal.field == field and refusal.message.endswith(".")


def test_an_acceptable_config_is_none():
    config = {"bucket": "team-docs.eu", "prefix": "handbook/", "region": "eu-west-1"}
    assert S3Connector.validate_config(config, Settings()) is None


def test_the_deployments_own_buckets_are_refused_naming_the_bucket():
    settings = Settings(SLUICE_BUCKET="sluice-docs-123456789012-eu-west-1",
                        SLUICE_STACK_BUCKETS=" sluice-logs-123456789012 ,,")
    assert settings.stack_buckets == {"sluice-docs-123456789012-eu-west-1", "sluice-logs-123456789012"}
    refused = ConfigRefusal("This is a bucket of this deployment; a source never reads it.", "bucket")
    for config in ({"bucket": "sluice-docs-123456789012-eu-west-1", "prefix": "chat/"},
                   {"bucket": "sluice-docs-123456789012-eu-west-1", "region": "us-east-1"},
                   {"bucket": "sluice-logs-123456789012"}):
        assert S3Connector.validate_config(config, settings) == refused
    # a bucket operator-listed for the function's own role is refused too when it is the stack's
    listed = settings.model_copy(update={"sync_function_role_buckets": "sluice-*"})
    assert S3Connector.validate_config({"bucket": "sluice-docs-123456789012-eu-west-1"}, listed) == refused
    assert S3Connector.validate_config({"bucket": "sluice-docs-123456789012-eu-west-2"}, settings) is None


def test_a_credential_secret_is_a_key_pair_or_a_role():
    assert read_credential(json.dumps({"access_key_id": "A", "secret_access_key": "S"})) == AwsKeys("A", "S")
    assert read_credential(json.dumps({"aws_access_key_id": "A", "aws_secret_access_key": "S",
                                       "aws_session_token": "T"})) == AwsKeys("A", "S", "T")
    role = "arn:aws:iam::123456789012:role/sluice-reader"
    assert read_credential(json.dumps({"role_arn": role})) == RoleToAssume(role)
    for bad in ("plain text", json.dumps({"access_key_id": "A"}), json.dumps({"role_arn": "not-an-arn"}), "[]"):
        with pytest.raises(CredentialRefused):
            read_credential(bad)


class Factory:
    def __init__(self) -> None:
        self.made: list[tuple[str, str | None, AwsKeys | None]] = []
        self.assumed: list[dict[str, Any]] = []

    def __call__(self, service: str, region: str | None, keys: AwsKeys | None) -> Any:
        self.made.append((service, region, keys))
        factory = self

        class Sts:
            def assume_role(self, **kw: Any) -> dict[str, Any]:
                factory.assumed.append(kw)
                return {"Credentials": {"AccessKeyId": "TA", "SecretAccessKey": "TS", "SessionToken": "TT"}}

        return Sts() if service == "sts" else object()


def open_s3(secret: str | None, settings: Settings, factory: Factory, bucket: str = "docs") -> S3Connector:
    config = S3Connector.parse_config({"bucket": bucket, "region": "eu-west-1"})
    return S3Connector.open(config, secret, external_id="sluice-org-acme", settings=settings, client_factory=factory,
                            state={})


def test_a_run_reads_with_the_sources_keys_or_its_role_never_a_fallback():
    settings = Settings()
    factory = Factory()
    open_s3(json.dumps({"access_key_id": "A", "secret_access_key": "S"}), settings, factory)
    assert factory.made == [("s3", "eu-west-1", AwsKeys("A", "S"))]

    role = json.dumps({"role_arn": "arn:aws:iam::210987654321:role/reader"})
    with pytest.raises(CredentialRefused, match="not allowed to assume"):
        open_s3(role, settings, Factory())
    allowed = settings.model_copy(update={"sync_assumable_role_arns": "arn:aws:iam::210987654321:role/*"})
    factory = Factory()
    open_s3(role, allowed, factory)
    # the external id is the tenant's, which the secret cannot choose
    assert factory.assumed[0]["ExternalId"] == "sluice-org-acme"
    assert factory.made[-1] == ("s3", "eu-west-1", AwsKeys("TA", "TS", "TT"))

    with pytest.raises(CredentialRefused, match="names no secret"):
        open_s3(None, settings, Factory())
    own = settings.model_copy(update={"sync_function_role_buckets": "corp-docs-*"})
    with pytest.raises(CredentialRefused):
        open_s3(None, own, Factory(), bucket="docs")
    factory = Factory()
    open_s3(None, own, factory, bucket="corp-docs-eu")
    assert factory.made == [("s3", "eu-west-1", None)]


def test_schedules():
    settings = Settings()
    assert schedule_period("rate(1 day)") == timedelta(days=1)
    assert schedule_period("rate(30 minutes)") == timedelta(minutes=30)
    assert checked_schedule(None, settings) is None
    assert checked_schedule(" rate(6 hours) ", settings) == "rate(6 hours)"
    for bad in ("rate(5 minutes)", "cron(0 0 * * ? *)", "rate(1 fortnight)", "rate(-1 days)"):
        with pytest.raises(UnprocessableError) as raised:
            checked_schedule(bad, settings)
        assert list(raised.value.details["fields"]) == ["schedule"]
