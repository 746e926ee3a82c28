"""The S3 connector: an ``ObjectStoreConnector`` with a boto3 client.

Credentials come only from the source's secret (``SECRET_KIND`` aws_credentials): an
access key pair, or a role ARN the run assumes with an external id Sluice derives from the
base's tenant (so one tenant cannot name a role another tenant's trust policy admits). A
source with no secret reads with the function's own role only for a bucket the operator
lists in ``SyncFunctionRoleBuckets`` - never as a silent fallback.

Its change signal is the object's ETag with its size, compared as an opaque token: under
SSE-KMS or a multipart upload an ETag is not an MD5 of the bytes, so it is never taken for
a content hash; an object whose signal changed is fetched and hashed before anything is
re-embedded.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ConfigDict, Field, field_validator

from sluice.config import SyncContextSettings
from sluice.sync.connectors.base import ConfigRefusal, ListedPage, ObjectStoreConnector, RemoteFile, SourceRefused

SECRET_KIND = "aws_credentials"  # noqa: S105 - the kind of secret, not one
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_REGION = re.compile(r"[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d{1,2}")
_ROLE_ARN = re.compile(r"arn:aws[a-zA-Z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}")
OWN_BUCKET = "This is a bucket of this deployment; a source never reads it."


class S3Config(BaseModel):
    """Where an S3 source's documents are. Never a credential: that is the source's secret_id."""

    model_config = ConfigDict(extra="forbid", title="S3 source")

    bucket: str = Field(description="The bucket's name.")
    prefix: str = Field("", max_length=1024, description="Only keys starting with this are synced ('' for all).")
    region: str | None = Field(None, description="The bucket's region, e.g. eu-west-1 (default: the deployment's).")

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, value: str) -> str:
        if not _BUCKET.fullmatch(value) or ".." in value or re.fullmatch(r"\d+\.\d+\.\d+\.\d+", value):
            raise ValueError("A bucket name is 3-63 lower-case letters, digits, dots and hyphens, starting and "
                             "ending with a letter or digit")
        return value

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if any(ord(ch) < 32 for ch in value):
            raise ValueError("A prefix holds no control characters")
        return value

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        if value is not None and not _REGION.fullmatch(value):
            raise ValueError("A region is a name such as eu-west-1")
        return value


@dataclass(frozen=True)
class AwsKeys:
    access_key_id: str
    secret_access_key: str
    session_token: str | None = None


@dataclass(frozen=True)
class RoleToAssume:
    role_arn: str


class CredentialRefused(SourceRefused):
    """The source's credential cannot be used; the message is the sentence the run records."""


def read_credential(secret: str) -> AwsKeys | RoleToAssume:
    """An aws_credentials secret: ``{"access_key_id", "secret_access_key"[, "session_token"]}`` or
    ``{"role_arn"}``. The AWS CLI's names (aws_access_key_id, ...) are accepted too."""
    try:
        value = json.loads(secret)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise CredentialRefused("The source's secret is not a JSON object of an access key pair or a role_arn.")
    if isinstance(value.get("role_arn"), str):
        if not _ROLE_ARN.fullmatch(value["role_arn"]):
            raise CredentialRefused("The source's secret names a role_arn that is not an IAM role ARN.")
        return RoleToAssume(value["role_arn"])
    key = value.get("access_key_id", value.get("aws_access_key_id"))
    secret_key = value.get("secret_access_key", value.get("aws_secret_access_key"))
    token = value.get("session_token", value.get("aws_session_token"))
    if not isinstance(key, str) or not isinstance(secret_key, str) or not key or not secret_key:
        raise CredentialRefused("The source's secret holds neither an access key pair nor a role_arn.")
    return AwsKeys(key, secret_key, token if isinstance(token, str) and token else None)


def matches_any(value: str, patterns: str) -> bool:
    """Whether ``value`` matches one of the comma-separated ``patterns`` (``*`` wildcards)."""
    return any(fnmatch.fnmatchcase(value, p.strip()) for p in patterns.split(",") if p.strip())


def default_client(service: str, region: str | None, keys: AwsKeys | None) -> Any:
    """A boto3 client with exactly these keys (or, with None, the function's own role)."""
    import boto3

    session = boto3.session.Session(
        aws_access_key_id=keys.access_key_id if keys else None,
        aws_secret_access_key=keys.secret_access_key if keys else None,
        aws_session_token=keys.session_token if keys else None,
    )
    return session.client(service, region_name=region,
                          config=Config(retries={"mode": "standard", "max_attempts": 5},
                                        connect_timeout=10, read_timeout=60))


ClientFactory = Callable[[str, str | None, AwsKeys | None], Any]


def assume(role: RoleToAssume, external_id: str, region: str | None, allowed: str,
           client_factory: ClientFactory) -> AwsKeys:
    """Temporary keys for ``role``, if the operator allows it (SyncAssumableRoleArns)."""
    if not matches_any(role.role_arn, allowed):
        raise CredentialRefused("The source's secret names a role the deployment is not allowed to assume; "
                                "ask the operator to add it to SyncAssumableRoleArns.")
    sts = client_factory("sts", region, None)
    try:
        creds = sts.assume_role(RoleArn=role.role_arn, RoleSessionName="sluice-sync", ExternalId=external_id,
                                DurationSeconds=3600)["Credentials"]
    except (ClientError, BotoCoreError) as exc:
        raise CredentialRefused(f"The source's role could not be assumed ({_code(exc)}): its trust policy must "
                                f"allow this deployment with the external id {external_id}.") from exc
    return AwsKeys(creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])


def _code(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code") or type(exc).__name__)
    return type(exc).__name__


class S3Connector(ObjectStoreConnector):
    CONNECTOR_TYPE = "s3"
    TITLE = "Amazon S3 bucket"
    CONFIG_MODEL = S3Config
    SECRET_KIND: ClassVar[str | None] = SECRET_KIND
    SCHEME = "s3"
    CONTAINER_FIELD = "bucket"

    def __init__(self, config: S3Config, client: Any) -> None:
        super().__init__(config)
        self._s3 = client

    @classmethod
    def check(cls, model: BaseModel, settings: SyncContextSettings) -> ConfigRefusal | None:
        """The deployment's own buckets hold every tenant's documents and chat files: no source reads one,
        whatever its credential could reach (a same-account key pair, the function's own role)."""
        assert isinstance(model, S3Config)
        if model.bucket.lower() in settings.stack_buckets:
            return ConfigRefusal(OWN_BUCKET, "bucket")
        return None

    @classmethod
    def open(cls, config: BaseModel, credential: str | None, *, external_id: str, settings: SyncContextSettings,
             client_factory: Any, state: Mapping[str, Any]) -> S3Connector:
        assert isinstance(config, S3Config)
        if credential is None:
            if not matches_any(config.bucket, settings.sync_function_role_buckets):
                raise CredentialRefused("The source names no secret, and its bucket is not one the deployment "
                                        "reads with its own role (SyncFunctionRoleBuckets).")
            keys = None
        else:
            found = read_credential(credential)
            keys = found if isinstance(found, AwsKeys) else assume(
                found, external_id, config.region, settings.sync_assumable_role_arns, client_factory)
        return cls(config, client_factory("s3", config.region, keys))

    def _list_page(self, token: str | None) -> ListedPage:
        args: dict[str, Any] = {"Bucket": self.container, "MaxKeys": self.PAGE_SIZE}
        if self.prefix:
            args["Prefix"] = self.prefix
        if token:
            args["ContinuationToken"] = token
        resp = self._s3.list_objects_v2(**args)
        entries = [
            RemoteFile(key=o["Key"], source_path=self.address(o["Key"]), size=int(o.get("Size", 0)),
                       etag=str(o.get("ETag", "")).strip('"') or None, modified=o.get("LastModified"))
            for o in resp.get("Contents", [])
        ]
        next_token = resp.get("NextContinuationToken") if resp.get("IsTruncated") else None
        if resp.get("IsTruncated") and not next_token:
            raise RuntimeError("a truncated page without a continuation token")
        return ListedPage(entries, next_token)

    def _fetch(self, file: RemoteFile, target: Path, max_bytes: int) -> None:
        args: dict[str, Any] = {"Bucket": self.container, "Key": file.key}
        if file.etag:
            # The bytes must be the ones the listing's signal describes: an object overwritten since
            # is refused (412) rather than hashed under the old ETag; the next run takes it.
            args["IfMatch"] = f'"{file.etag}"'
        resp = self._s3.get_object(**args)
        body = resp["Body"]
        left = max_bytes + 1
        try:
            with target.open("wb") as out:
                while left > 0:
                    chunk = body.read(min(1024 * 1024, left))
                    if not chunk:
                        break
                    out.write(chunk)
                    left -= len(chunk)
        finally:
            body.close()

    def describe_failure(self, exc: BaseException) -> str:
        return _code(exc)
