"""The connectors a source may name, and how a run opens one with the source's own credential.

A run reads the source's secret where there is a tenant to read it for, and hands the value
to the connector beside the config; a connector cannot reach the vault itself, and there is
no deployment-wide fallback credential.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from sluice.access.keys import PROVIDER_TAG, tenant_mismatch
from sluice.config import SyncContextSettings
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.db.sync_sources import SyncSource
from sluice.sync.connectors.azure_blob import AzureBlobConnector
from sluice.sync.connectors.base import (
    CREDENTIAL_SENTENCE,
    ConfigRefusal,
    Connector,
    ObjectStoreConnector,
    RemoteFile,
    RemoteListing,
    SourceRefused,
)
from sluice.sync.connectors.confluence import ConfluenceConnector
from sluice.sync.connectors.gcs import GcsConnector
from sluice.sync.connectors.gdrive import GdriveConnector
from sluice.sync.connectors.git import GitConnector
from sluice.sync.connectors.s3 import ClientFactory, CredentialRefused, S3Config, S3Connector, default_client
from sluice.sync.connectors.sharepoint import SharePointConnector
from sluice.sync.connectors.web import WebConnector

log = logging.getLogger("sluice.sync")

CONNECTORS: dict[str, type[Connector]] = {
    cls.CONNECTOR_TYPE: cls
    for cls in (S3Connector, AzureBlobConnector, GcsConnector, GitConnector, GdriveConnector, ConfluenceConnector,
                SharePointConnector, WebConnector)}

__all__ = [
    "CONNECTORS",
    "AzureBlobConnector",
    "ConfluenceConnector",
    "GcsConnector",
    "GdriveConnector",
    "GitConnector",
    "CREDENTIAL_SENTENCE",
    "ConfigRefusal",
    "Connector",
    "ConnectorOpener",
    "CredentialRefused",
    "ObjectStoreConnector",
    "RemoteFile",
    "RemoteListing",
    "S3Config",
    "S3Connector",
    "SecretValues",
    "SharePointConnector",
    "SourceRefused",
    "WebConnector",
    "external_id",
]


class SecretValues:
    """Reads a source's secret and its tags through an injected ``secretsmanager`` client."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def read(self, secret_id: str) -> tuple[str, dict[str, str]]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            described = self._client.describe_secret(SecretId=secret_id)
            value = self._client.get_secret_value(SecretId=secret_id).get("SecretString")
        except (ClientError, BotoCoreError) as exc:
            code = exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else type(exc).__name__
            log.warning("a source's secret could not be read", exc_info=exc)
            raise CredentialRefused(f"The source's secret could not be read ({code}); a source whose secret is "
                                    "gone syncs no further until it names another.") from exc
        if described.get("DeletedDate") or value is None:
            raise CredentialRefused("The source's secret is deleted or holds no text.")
        return value, {t["Key"]: t.get("Value", "") for t in described.get("Tags") or []}


def external_id(kb: KnowledgeBase) -> str:
    """The ExternalId a run presents when it assumes a source's role: the base's tenant, which a
    tenant cannot choose, so a role trusting one tenant's syncs never serves another's."""
    if kb.scope == "org" and kb.org_id:
        return f"sluice-org-{kb.org_id}"
    if kb.scope == "personal" and kb.owner_id:
        return f"sluice-user-{kb.owner_id}"
    return "sluice-app"


@dataclass
class ConnectorOpener:
    """Opens a source's connector for a run: its config, and its own secret or nothing.

    Every run asks this before it lists and before it fetches, so what a writer could not save
    now does not run because it was saved before: the connector's config rules are asked again.
    """

    settings: SyncContextSettings
    secrets: Any  # SecretValues, or a test's stand-in
    client_factory: ClientFactory = field(default=default_client)

    def open(self, source: SyncSource, kb: KnowledgeBase) -> Connector:
        cls = CONNECTORS.get(source.connector)
        if cls is None:
            raise CredentialRefused(f"The '{source.connector}' connector is not available in this deployment.")
        config = cls.parse_config(source.config)
        refusal = cls.check(config, self.settings)  # again: the config may predate the rule
        if refusal is not None:
            where = f"config.{refusal.field}" if refusal.field else "config"
            raise SourceRefused(f"{refusal.message} Nothing was read; correct {where} and run again.")
        credential = None
        if source.secret_id:
            credential, tags = self.secrets.read(source.secret_id)
            if tags.get(PROVIDER_TAG) != cls.SECRET_KIND:
                raise CredentialRefused(f"The source's secret is not tagged {PROVIDER_TAG}={cls.SECRET_KIND}.")
            why = tenant_mismatch(tags, kb)  # the base or the tags may have changed since it was named
            if why is not None:
                raise CredentialRefused(f"The source's secret does not belong to its base's tenant ({why}); "
                                        "nothing was read.")
        # full mode ingests every listed file again, so the connector lists everything: a cursor (a delta
        # link, a commit, a page's validators) would hand it only what changed.
        state = {} if source.sync_mode == "full" else source.connector_state
        return cls.open(config, credential, external_id=external_id(kb), settings=self.settings,
                        client_factory=self.client_factory, state=state)
