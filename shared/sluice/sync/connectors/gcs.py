"""A Google Cloud Storage bucket as a source (R-SYNC-7): the object-store connector with Google's client.

The listing loop, the ``gs://<bucket>/<key>`` address, the directory-marker skip and the "is this
listing whole" answer are ``ObjectStoreConnector``'s; this module supplies the client (the official
``google-cloud-storage``), one page of a listing and one download. The change signal is the
object's ETag with its size; a download is conditional on that ETag (``If-Match``), so an object
overwritten between the listing and the fetch is refused (412) rather than hashed under the old
signal.

The credential is the source's ``gcp_service_account`` secret, a service account's JSON key, used
with the read-only storage scope. The service is ``https://storage.googleapis.com`` and the key's
token endpoint ``https://oauth2.googleapis.com/token``; another endpoint (an emulator) or token
URI only when the operator lists its host in ``SyncAllowedHosts`` - a key's ``token_uri`` is input
too, and the service would otherwise POST a signed assertion wherever a key says. The SDK's
requests and the token exchange go through the outbound guard (``sdk_http``): each connection to an
address the policy allows, checked where it is opened; no redirect followed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sluice.config import SyncContextSettings
from sluice.sync.connectors.base import ConfigRefusal, ListedPage, ObjectStoreConnector, RemoteFile, SourceRefused
from sluice.sync.outbound import NOT_REACHABLE, EndpointNotAllowed, saas_url_problem, sync_policy

SECRET_KIND = "gcp_service_account"  # noqa: S105 - the kind of secret, not one
DOCUMENTED_HOSTS = ("storage.googleapis.com",)
TOKEN_HOSTS = ("oauth2.googleapis.com",)
READ_ONLY = "https://www.googleapis.com/auth/devstorage.read_only"
_BUCKET = re.compile(r"[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]")


class GcsConfig(BaseModel):
    """Where a GCS source's documents are. Never a credential: that is the source's secret_id."""

    model_config = ConfigDict(extra="forbid", title="Google Cloud Storage bucket")

    bucket: str = Field(description="The bucket's name.")
    prefix: str = Field("", max_length=1024, description="Only objects whose names start with this ('' for all).")
    endpoint: str | None = Field(None, max_length=512, description=(
        "The storage API's URL, when it is not https://storage.googleapis.com (an emulator): only a host the "
        "operator lists in SyncAllowedHosts."))

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, value: str) -> str:
        if (not _BUCKET.fullmatch(value) or ".." in value or value.startswith("goog")
                or any(len(part) > 63 for part in value.split("."))):
            raise ValueError("A bucket name is 3-63 lower-case letters, digits, hyphens and underscores (dotted "
                             "names up to 222), starting and ending with a letter or digit")
        return value

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if any(ord(ch) < 32 for ch in value):
            raise ValueError("A prefix holds no control characters")
        return value


def read_key(secret: str, settings: SyncContextSettings) -> dict[str, Any]:
    """A gcp_service_account secret: a service account's JSON key, its token endpoint checked."""
    try:
        value = json.loads(secret)
    except ValueError:
        value = None
    if (not isinstance(value, dict) or value.get("type") != "service_account"
            or not all(isinstance(value.get(k), str) and value[k] for k in ("client_email", "private_key"))):
        raise SourceRefused("The source's gcp_service_account secret is not a service account's JSON key "
                            "(type service_account, client_email, private_key).")
    value.setdefault("token_uri", "https://oauth2.googleapis.com/token")
    if saas_url_problem(str(value["token_uri"]), TOKEN_HOSTS, sync_policy(settings)) is not None:
        raise SourceRefused("The source's service account key names a token_uri other than Google's "
                            "(https://oauth2.googleapis.com/token) that the operator does not list in "
                            "SyncAllowedHosts.")
    return value


class GcsConnector(ObjectStoreConnector):
    CONNECTOR_TYPE = "gcs"
    TITLE = "Google Cloud Storage bucket"
    CONFIG_MODEL = GcsConfig
    SECRET_KIND: ClassVar[str | None] = SECRET_KIND
    SCHEME = "gs"
    CONTAINER_FIELD = "bucket"

    def __init__(self, config: GcsConfig, client: Any) -> None:
        super().__init__(config)
        self._client = client
        self._bucket = client.bucket(config.bucket)

    @classmethod
    def check(cls, model: BaseModel, settings: SyncContextSettings) -> ConfigRefusal | None:
        assert isinstance(model, GcsConfig)
        if model.endpoint is None:
            return None
        problem = saas_url_problem(model.endpoint, DOCUMENTED_HOSTS, sync_policy(settings))
        return ConfigRefusal(problem, "endpoint") if problem else None

    @classmethod
    def open(cls, config: BaseModel, credential: str | None, *, external_id: str, settings: SyncContextSettings,
             client_factory: Any, state: Mapping[str, Any]) -> GcsConnector:
        from google.auth.transport.requests import AuthorizedSession, Request
        from google.cloud import storage
        from google.oauth2 import service_account

        from sluice.sync.connectors.sdk_http import guarded_session

        assert isinstance(config, GcsConfig)
        if credential is None:
            raise SourceRefused("A gcs source needs its gcp_service_account secret (a service account's JSON key); "
                                "the deployment has no Google credential of its own.")
        key = read_key(credential, settings)
        try:
            creds = service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
                key, scopes=[READ_ONLY])
        except (ValueError, KeyError) as exc:
            raise SourceRefused("The source's service account key could not be read (its private_key is not a "
                                "PEM key).") from exc
        options = {"api_endpoint": config.endpoint.rstrip("/")} if config.endpoint else None
        # Storage requests and the token exchange both over sessions that connect only where the policy
        # allows, to Google's hosts or the operator's, and follow no redirect (sdk_http).
        policy, hosts = sync_policy(settings), DOCUMENTED_HOSTS + TOKEN_HOSTS
        http = guarded_session(policy, hosts, session_class=AuthorizedSession, credentials=creds,
                               auth_request=Request(guarded_session(policy, hosts)))
        client = storage.Client(project=key.get("project_id") or "-", credentials=creds, client_options=options,
                                _http=http)
        return cls(config, client)

    def _list_page(self, token: str | None) -> ListedPage:
        blobs = self._client.list_blobs(self.container, prefix=self.prefix or None, page_size=self.PAGE_SIZE,
                                        page_token=token, timeout=60)
        page = next(blobs.pages)
        entries = [RemoteFile(key=b.name, source_path=self.address(b.name), size=int(b.size or 0),
                              etag=str(b.etag or "").strip('"') or None, modified=b.updated)
                   for b in page]
        return ListedPage(entries, blobs.next_page_token or None)

    def _fetch(self, file: RemoteFile, target: Path, max_bytes: int) -> None:
        with target.open("wb") as out:
            if file.size > max_bytes:
                out.truncate(max_bytes + 1)  # too large, said by the listing's size: nothing is downloaded
                return
            kwargs: dict[str, Any] = {"start": 0, "end": max_bytes, "timeout": 60, "checksum": None}
            if file.etag:
                kwargs["if_etag_match"] = file.etag
            self._bucket.blob(file.key).download_to_file(out, **kwargs)

    def describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, EndpointNotAllowed):
            return NOT_REACHABLE
        code = getattr(exc, "code", None)
        if code == 412:
            return "PreconditionFailed"
        return f"HTTP {code}" if isinstance(code, int) else type(exc).__name__
