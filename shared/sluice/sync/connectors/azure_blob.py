"""An Azure Blob Storage container as a source (R-SYNC-7): the object-store connector with Azure's client.

The listing loop, the ``azure://<container>/<key>`` address, the directory-marker skip and the
"is this listing whole" answer are ``ObjectStoreConnector``'s; this module supplies the client
(the official ``azure-storage-blob``), one page of a listing and one download. The change signal
is the blob's ETag with its size; a download is conditional on that ETag, so a blob overwritten
between the listing and the fetch is refused (412) rather than hashed under the old signal.

The credential is the source's ``azure_storage`` secret: a SAS token, or an account key with its
account's name. The service is ``https://<account>.blob.core.windows.net``; another endpoint (an
Azurite emulator, a sovereign cloud's host) only when the operator lists it in ``SyncAllowedHosts``.
The SDK's requests go through the outbound guard (``sdk_http``): each connection to an address the
policy allows, checked where it is opened; no redirect followed.
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

SECRET_KIND = "azure_storage"  # noqa: S105 - the kind of secret, not one
DOCUMENTED_HOSTS = ("*.blob.core.windows.net",)
_ACCOUNT = re.compile(r"[a-z0-9]{3,24}")
_CONTAINER = re.compile(r"[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]")


def _prefix(value: str) -> str:
    if any(ord(ch) < 32 for ch in value):
        raise ValueError("A prefix holds no control characters")
    return value


class AzureBlobConfig(BaseModel):
    """Where an Azure Blob source's documents are. Never a credential: that is the source's secret_id."""

    model_config = ConfigDict(extra="forbid", title="Azure Blob Storage container")

    account: str = Field(description="The storage account's name.")
    container: str = Field(description="The container's name.")
    prefix: str = Field("", max_length=1024, description="Only blobs whose names start with this ('' for all).")
    endpoint: str | None = Field(None, max_length=512, description=(
        "The blob service's URL, when it is not https://<account>.blob.core.windows.net (an emulator, a "
        "sovereign cloud): only a host the operator lists in SyncAllowedHosts."))

    @field_validator("account")
    @classmethod
    def _account(cls, value: str) -> str:
        if not _ACCOUNT.fullmatch(value):
            raise ValueError("A storage account's name is 3-24 lower-case letters and digits")
        return value

    @field_validator("container")
    @classmethod
    def _container(cls, value: str) -> str:
        if not _CONTAINER.fullmatch(value):
            raise ValueError("A container's name is 3-63 lower-case letters, digits and single hyphens, starting "
                             "and ending with a letter or digit")
        return value

    _check_prefix = field_validator("prefix")(_prefix)

    def service_url(self) -> str:
        return (self.endpoint or f"https://{self.account}.blob.core.windows.net").rstrip("/")


def read_credential(secret: str, account: str) -> Any:
    """An azure_storage secret: ``{"sas_token"}`` or ``{"account_name", "account_key"}`` (JSON)."""
    try:
        value = json.loads(secret)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise SourceRefused("The source's azure_storage secret is not a JSON object of a sas_token, or of an "
                            "account_name and account_key.")
    sas = value.get("sas_token")
    if isinstance(sas, str) and sas.strip():
        from azure.core.credentials import AzureSasCredential

        return AzureSasCredential(sas.strip().lstrip("?"))
    name, key = value.get("account_name"), value.get("account_key")
    if not isinstance(key, str) or not key or not isinstance(name, str):
        raise SourceRefused("The source's azure_storage secret holds neither a sas_token nor an account_name with "
                            "its account_key.")
    if name != account:
        raise SourceRefused("The source's azure_storage secret is the key of another storage account than the "
                            "source's account.")
    return {"account_name": name, "account_key": key}


class AzureBlobConnector(ObjectStoreConnector):
    CONNECTOR_TYPE = "azure_blob"
    TITLE = "Azure Blob Storage container"
    CONFIG_MODEL = AzureBlobConfig
    SECRET_KIND: ClassVar[str | None] = SECRET_KIND
    SCHEME = "azure"
    CONTAINER_FIELD = "container"

    def __init__(self, config: AzureBlobConfig, container_client: Any) -> None:
        super().__init__(config)
        self._container = container_client

    @classmethod
    def check(cls, model: BaseModel, settings: SyncContextSettings) -> ConfigRefusal | None:
        assert isinstance(model, AzureBlobConfig)
        if model.endpoint is None:
            return None
        problem = saas_url_problem(model.endpoint, DOCUMENTED_HOSTS, sync_policy(settings))
        return ConfigRefusal(problem, "endpoint") if problem else None

    @classmethod
    def open(cls, config: BaseModel, credential: str | None, *, external_id: str, settings: SyncContextSettings,
             client_factory: Any, state: Mapping[str, Any]) -> AzureBlobConnector:
        from azure.core.pipeline.transport import RequestsTransport
        from azure.storage.blob import BlobServiceClient

        from sluice.sync.connectors.sdk_http import guarded_session

        assert isinstance(config, AzureBlobConfig)
        if credential is None:
            raise SourceRefused("An azure_blob source needs its azure_storage secret (a SAS token or an account key); "
                                "the deployment has no Azure credential of its own.")
        # azure-core's own transport, over a session that connects only where the policy allows, to
        # Azure's hosts or the operator's, and follows no redirect (sdk_http).
        transport = RequestsTransport(session=guarded_session(sync_policy(settings), DOCUMENTED_HOSTS),
                                      session_owner=True, use_env_settings=False, connection_timeout=10,
                                      read_timeout=60)
        service = BlobServiceClient(
            config.service_url(), credential=read_credential(credential, config.account), transport=transport,
            permit_redirects=False, connection_timeout=10, read_timeout=60, retry_total=4,
            # a download holds at most this much at once
            max_single_get_size=4 * 1024 * 1024, max_chunk_get_size=4 * 1024 * 1024)
        return cls(config, service.get_container_client(config.container))

    def _list_page(self, token: str | None) -> ListedPage:
        pages = self._container.list_blobs(name_starts_with=self.prefix or None,
                                           results_per_page=self.PAGE_SIZE).by_page(continuation_token=token)
        page = next(pages)
        entries = [RemoteFile(key=b.name, source_path=self.address(b.name), size=int(b.size or 0),
                              etag=str(b.etag or "").strip('"') or None, modified=b.last_modified)
                   for b in page]
        return ListedPage(entries, pages.continuation_token or None)

    def _fetch(self, file: RemoteFile, target: Path, max_bytes: int) -> None:
        from azure.core import MatchConditions

        with target.open("wb") as out:
            if file.size > max_bytes:
                out.truncate(max_bytes + 1)  # too large, said by the listing's size: nothing is downloaded
                return
            kwargs: dict[str, Any] = {"offset": 0, "length": max_bytes + 1}
            if file.etag:
                kwargs.update(etag=f'"{file.etag}"', match_condition=MatchConditions.IfNotModified)
            for chunk in self._container.download_blob(file.key, **kwargs).chunks():
                out.write(chunk)

    def describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, EndpointNotAllowed):
            return NOT_REACHABLE
        status = getattr(exc, "status_code", None)
        if status == 412:
            return "PreconditionFailed"
        code = getattr(exc, "error_code", None)
        code = getattr(code, "value", code)  # the SDK's StorageErrorCode: its wire name
        return str(code or (f"HTTP {status}" if status else type(exc).__name__))
