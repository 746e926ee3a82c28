"""Binding an embedding key to a knowledge base: whose key pays, and who may lend it (R-EMB-1).

A base's embeddings bill its key for everyone who can write the base, so binding
a key is lending it. The chooser must be able to see the key themselves: the
API takes an id, and an id is guessable.

How a key's ownership is recorded: Secrets Manager tags on the secret, read
with ``DescribeSecret`` (the value is never read to decide this).

==================  ==============================================================
tag                 meaning
==================  ==============================================================
``sluice:org_id``   the organization that holds the key; its members with
                    ``secrets:view`` may bind it
``sluice:owner``    a member's private key: only that user may bind it (and, when
                    ``sluice:org_id`` is also set, only while in that organization)
``sluice:provider`` the embedding provider the key is for (``openai``); required,
                    so a key for one vendor is never sent to another's address
==================  ==============================================================

A secret with neither ``sluice:org_id`` nor ``sluice:owner`` is nobody's to
lend (a deployment secret such as the database's), and is refused like one the
vault does not hold. So is every key the caller cannot see: the refusal never
tells an absent key from somebody else's, so it cannot enumerate them.

Only ``openai`` takes a key. ``local`` runs in the function and ``bedrock`` is
paid by the deployment's own role, so naming a key for either is refused. An
app-wide base belongs to no organization and has no vault to name a key from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from sluice.db.knowledge_bases import KnowledgeBase
from sluice.errors import ValidationError
from sluice.identity import Principal

ORG_TAG = "sluice:org_id"
OWNER_TAG = "sluice:owner"
PROVIDER_TAG = "sluice:provider"

KEYED_PROVIDERS = frozenset({"openai"})

_NOT_IN_VAULT = "The vault holds no key with this id that you can use."


class KeyVault(Protocol):
    def tags_of(self, secret_id: str) -> Mapping[str, str] | None:
        """The tags of ``secret_id``, or ``None`` when the vault holds no such secret."""
        ...


def key_visible(p: Principal, tags: Mapping[str, str]) -> bool:
    """Whether the caller may see (and so lend) a key with these tags."""
    if not p.can("secrets:view"):
        return False
    org, owner = tags.get(ORG_TAG), tags.get(OWNER_TAG)
    if not org and not owner:
        return False
    if org and org != p.org_id:
        return False
    return not owner or owner == p.user_id


def tenant_mismatch(tags: Mapping[str, str], kb: KnowledgeBase) -> str | None:
    """Why a secret with these tags is not ``kb``'s tenant's to read with (None: it is).

    Who may lend a secret is ``key_visible``, asked of a person when they name it; this is what
    the secret must be wherever it is used, asked again by every run, so a source whose base
    changed, or whose secret was re-tagged, does not go on reading with somebody else's. An
    organization base's secret is tagged with its organization; a personal base's is its owner's
    own (``sluice:owner``; with an organization tag, the base's): a personal base outlives its
    owner's membership, so an organization's secret never feeds one. An app-wide base has no
    tenant and takes any secret an app admin could lend.
    """
    org, owner = tags.get(ORG_TAG), tags.get(OWNER_TAG)
    if kb.scope == "org":
        ours = bool(org) and org == kb.org_id
        return None if ours else f"an organization base reads with a secret tagged with its {ORG_TAG}"
    if kb.scope == "personal":
        mine = bool(owner) and owner == kb.owner_id and (not org or org == kb.org_id)
        return None if mine else f"a personal base reads with its owner's own secret, tagged {OWNER_TAG}"
    return None if org or owner else f"an app-wide base reads with a secret tagged {ORG_TAG} or {OWNER_TAG}"


def check_key_binding(p: Principal, vault: KeyVault | None, *, scope: str, provider: str,
                      base_url: str | None, secret_id: str | None, already_bound: bool = False,
                      field: str = "embedding_secret_id", url_field: str = "embedding_base_url",
                      noun: str = "embedding") -> None:
    """Refuse a key the chooser may not bind, or a provider choice that needs one and names none.

    ``already_bound`` is a key this base already holds for this provider at this
    endpoint: it was lent for that address when it was bound, so the vault is not
    asked again on behalf of whoever edits something else about the base. A key
    moving to another address is a new loan, never ``already_bound``. ``field``, ``url_field`` and
    ``noun`` name the choice being checked (an image-description model's key is refused the same way,
    under its own field names).
    """
    if secret_id is None:
        if provider in KEYED_PROVIDERS and base_url is None:
            # The default endpoint is OpenAI's, which answers nothing without a key;
            # a keyless server (Ollama, vLLM, TEI) is named by its embedding_base_url.
            raise ValidationError(
                f"Choose an {noun} key or a keyless endpoint",
                fields={field: "The default OpenAI endpoint needs a key; name one, or set "
                                f"{url_field} to a keyless OpenAI-compatible server."},
            )
        return
    if scope == "app":
        raise ValidationError(
            f"An app-wide knowledge base cannot name an {noun} key",
            fields={field: "An app-wide base belongs to no organization, so it has no vault to "
                           "name a key from; use a keyless provider or endpoint."},
        )
    if provider not in KEYED_PROVIDERS:
        raise ValidationError(
            f"This {noun} provider takes no key",
            fields={field: f"The '{provider}' provider takes no key; leave this empty."},
        )
    if already_bound:
        return
    tags = vault.tags_of(secret_id) if vault is not None else None
    if tags is None or not key_visible(p, tags):
        raise ValidationError(f"Unknown {noun} key", fields={field: _NOT_IN_VAULT})
    if tags.get(PROVIDER_TAG) != provider:
        raise ValidationError(
            "This key is not for the chosen provider",
            fields={field: f"This key is not tagged for the '{provider}' provider."},
        )
