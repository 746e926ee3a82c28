"""ingestion_config.image_description (R-PARSE-6) is checked as the embedding choice is, each
refusal naming its field."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from sluice.access.vision import FIELD, ImageDescriptionChoice, check_image_description
from sluice.errors import ValidationError
from sluice.identity import Principal

EDITOR = Principal(user_id="ivy", org_id="acme", permissions=frozenset({"secrets:view"}), is_app_admin=False)


class Vault:
    def __init__(self, tags: dict[str, Mapping[str, str]]) -> None:
        self._tags = tags

    def tags_of(self, secret_id: str) -> Mapping[str, str] | None:
        return self._tags.get(secret_id)


VAULT = Vault({"ours": {"sluice:org_id": "acme", "sluice:provider": "openai"},
               "theirs": {"sluice:org_id": "globex", "sluice:provider": "openai"},
               "bedrock-tagged": {"sluice:org_id": "acme", "sluice:provider": "bedrock"}})


def refused(raw: object, *, scope: str = "personal") -> dict[str, str]:
    with pytest.raises(ValidationError) as caught:
        check_image_description(EDITOR, VAULT, scope=scope, raw=raw)
    return dict(caught.value.details["fields"])


def test_a_whole_choice_is_kept_as_sent():
    raw = {"enabled": True, "provider": "openai", "model": "gpt-4o-mini", "secret_id": "ours"}
    assert check_image_description(EDITOR, VAULT, scope="personal", raw=raw) == raw
    assert ImageDescriptionChoice.of({"image_description": raw}) == ImageDescriptionChoice(
        enabled=True, provider="openai", model="gpt-4o-mini", secret_id="ours")
    assert ImageDescriptionChoice.of({"image_description": {**raw, "enabled": False}}) is None
    assert ImageDescriptionChoice.of({}) is None


def test_off_may_be_empty():
    assert check_image_description(EDITOR, VAULT, scope="personal", raw={"enabled": False}) == {"enabled": False}


@pytest.mark.parametrize(("raw", "field", "words"), [
    ("yes", "", "must be an object"),
    ({"enabled": True, "provider": "openai", "model": "gpt-4o-mini", "prompt": "x"}, ".prompt", "Unknown setting"),
    ({"enabled": "true", "provider": "openai", "model": "gpt-4o-mini"}, ".enabled", "true or false"),
    ({"enabled": True, "model": "gpt-4o-mini"}, ".provider", "Choose a provider"),
    ({"enabled": True, "provider": "local", "model": "gpt-4o-mini"}, ".provider", "not a provider"),
    ({"enabled": True, "provider": "openai"}, ".model", "Choose one of"),
    ({"enabled": True, "provider": "openai", "model": "gpt-9", "base_url": "https://example.com/v1"},
     ".model", "is not a model"),
    ({"enabled": True, "provider": "bedrock", "model": "amazon.nova-micro-v1:0"}, ".model", "reads text only"),
    ({"enabled": True, "provider": "bedrock", "model": "amazon.nova-lite-v1:0", "base_url": "https://93.184.216.34/v1"},
     ".base_url", "takes no endpoint"),
    ({"enabled": True, "provider": "openai", "model": "gpt-4o-mini", "base_url": "http://10.0.0.5/v1"},
     ".base_url", ""),
    ({"enabled": True, "provider": "openai", "model": "gpt-4o-mini", "base_url": "http://[::ffff:169.254.169.254]/"},
     ".base_url", ""),
    ({"enabled": True, "provider": "openai", "model": "gpt-4o-mini"}, ".secret_id", "needs a key"),
    ({"enabled": True, "provider": "openai", "model": "gpt-4o-mini", "secret_id": "theirs"},
     ".secret_id", "no key with this id"),
    ({"enabled": True, "provider": "openai", "model": "gpt-4o-mini", "secret_id": "absent"},
     ".secret_id", "no key with this id"),
    ({"enabled": True, "provider": "openai", "model": "gpt-4o-mini", "secret_id": "bedrock-tagged"},
     ".secret_id", "not tagged for the 'openai' provider"),
    ({"enabled": True, "provider": "bedrock", "model": "amazon.nova-lite-v1:0", "secret_id": "ours"},
     ".secret_id", "takes no key"),
    ({"enabled": False, "secret_id": "theirs"}, ".provider", "Choose the provider"),
])
def test_each_refusal_names_its_field(raw, field, words):
    fields = refused(raw)
    assert list(fields) == [FIELD + field]
    assert words in fields[FIELD + field]


def test_an_app_wide_base_names_no_key():
    fields = refused({"enabled": True, "provider": "openai", "model": "gpt-4o-mini", "secret_id": "ours"},
                     scope="app")
    assert "no vault" in fields[f"{FIELD}.secret_id"]


def test_a_key_already_bound_at_the_same_address_is_not_asked_for_again():
    raw = {"enabled": True, "provider": "openai", "model": "gpt-4o", "secret_id": "theirs"}
    previous = {"enabled": True, "provider": "openai", "model": "gpt-4o-mini", "secret_id": "theirs"}
    assert check_image_description(EDITOR, VAULT, scope="personal", raw=raw, previous=previous) == raw
    # Moved to another endpoint, it is a new loan: the vault is asked, and refuses.
    with pytest.raises(ValidationError) as caught:
        check_image_description(EDITOR, VAULT, scope="personal", raw={**raw, "base_url": "https://93.184.216.34/v1"},
                                previous=previous)
    assert list(caught.value.details["fields"]) == [f"{FIELD}.secret_id"]
