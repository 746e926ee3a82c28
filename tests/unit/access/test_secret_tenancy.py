"""Whose secret a base's source reads with (issue 26): ``tenant_mismatch``, asked when a source is named,
changed, cloned or repointed and again by every run."""

from __future__ import annotations

import uuid

import pytest

from sluice.access.keys import tenant_mismatch
from sluice.db.knowledge_bases import KnowledgeBase


def base(scope: str, org: str | None, owner: str | None = None) -> KnowledgeBase:
    return KnowledgeBase(
        id=uuid.uuid4(), name="b", collection_name="b", scope=scope, owner_id=owner, org_id=org, is_default=False,
        description="", embedding_provider="local", embedding_model="m", embedding_dim=384, embedding_base_url=None,
        embedding_secret_id=None, ingestion_config={}, created_by="t")


ORG_BASE = base("org", "acme")
PERSONAL = base("personal", "acme", owner="ann")
APP = base("app", None)
ACME = {"sluice:org_id": "acme"}
ANNS = {"sluice:owner": "ann"}
ANNS_IN_ACME = {"sluice:owner": "ann", "sluice:org_id": "acme"}


@pytest.mark.parametrize(("tags", "kb"), [
    (ACME, ORG_BASE), (ANNS_IN_ACME, ORG_BASE),
    (ANNS, PERSONAL), (ANNS_IN_ACME, PERSONAL),
    (ACME, APP), (ANNS, APP),
])
def test_a_secret_of_the_bases_tenant_is_none(tags, kb):
    assert tenant_mismatch({"sluice:provider": "aws_credentials", **tags}, kb) is None


@pytest.mark.parametrize(("tags", "kb", "why"), [
    ({"sluice:org_id": "globex"}, ORG_BASE, "an organization base reads with a secret tagged with its sluice:org_id"),
    (ANNS, ORG_BASE, "an organization base reads with a secret tagged with its sluice:org_id"),
    ({}, ORG_BASE, "an organization base reads with a secret tagged with its sluice:org_id"),
    # an organization's secret never feeds a personal base: the base outlives its owner's membership
    (ACME, PERSONAL, "a personal base reads with its owner's own secret, tagged sluice:owner"),
    ({"sluice:owner": "bob"}, PERSONAL, "a personal base reads with its owner's own secret, tagged sluice:owner"),
    ({"sluice:owner": "ann", "sluice:org_id": "globex"}, PERSONAL,
     "a personal base reads with its owner's own secret, tagged sluice:owner"),
    ({}, APP, "an app-wide base reads with a secret tagged sluice:org_id or sluice:owner"),
])
def test_a_secret_of_another_tenant_says_why(tags, kb, why):
    assert tenant_mismatch(tags, kb) == why
