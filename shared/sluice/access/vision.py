"""A collection's image-description choice (R-PARSE-6): ``ingestion_config.image_description``.

``{enabled, provider, model, base_url?, secret_id?}``, checked as the embedding choice is: the
model must be in the chat-model catalog and read images, an endpoint must pass the deployment's
endpoint guard, and a key is bound under the same rules (the chooser must see it; it must be
tagged for the provider; an app-wide base names none). Every refusal names its field,
``ingestion_config.image_description.<field>``. A choice that is off may be left incomplete; one
that is on must be whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sluice.access.keys import KEYED_PROVIDERS, KeyVault, check_key_binding
from sluice.embedding.endpoints import deployment_policy, endpoint_problem
from sluice.errors import ValidationError
from sluice.identity import Principal
from sluice.llm.catalog import CHAT_PROVIDERS, find_chat_model, vision_models

FIELD = "ingestion_config.image_description"
_KEYS = ("enabled", "provider", "model", "base_url", "secret_id")
# Which key pays and where the images go: shown to the base's writers only, as the embedding's are.
WRITER_ONLY = ("base_url", "secret_id")
_MAX_TEXT = 2048


@dataclass(frozen=True)
class ImageDescriptionChoice:
    """A collection's stored choice, as the describe step reads it back."""

    enabled: bool
    provider: str
    model: str
    base_url: str | None = None
    secret_id: str | None = None

    @classmethod
    def of(cls, ingestion_config: dict[str, Any] | None) -> ImageDescriptionChoice | None:
        """The stored choice when it is on, else None (stored configs were validated when set)."""
        raw = (ingestion_config or {}).get("image_description")
        if not isinstance(raw, dict) or raw.get("enabled") is not True:
            return None
        return cls(enabled=True, provider=str(raw.get("provider")), model=str(raw.get("model")),
                   base_url=raw.get("base_url") or None, secret_id=raw.get("secret_id") or None)


def for_readers(ingestion_config: dict[str, Any]) -> dict[str, Any]:
    """A collection's config as one who only reads the base sees it: the describer's model, not its key
    or its endpoint."""
    raw = ingestion_config.get("image_description")
    if not isinstance(raw, dict):
        return ingestion_config
    return {**ingestion_config, "image_description": {k: v for k, v in raw.items() if k not in WRITER_ONLY}}


def _refuse(field: str, sentence: str) -> ValidationError:
    return ValidationError("The image description setting is not valid",
                           fields={f"{FIELD}.{field}" if field else FIELD: sentence})


def check_image_description(p: Principal, vault: KeyVault | None, *, scope: str, raw: Any,
                            previous: Any = None) -> dict[str, Any] | None:
    """The choice to store (None when none was sent), or a ValidationError naming the field.

    ``previous`` is what the base stores now: a key it already holds for the same provider at the
    same endpoint was lent for that address, so an edit of something else does not ask the vault
    again on the editor's behalf (as for the embedding key).
    """
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _refuse("", "Image description must be an object: {enabled, provider, model, base_url?, secret_id?}.")
    unknown = [k for k in raw if k not in _KEYS]
    if unknown:
        raise _refuse(str(unknown[0]), f"Unknown setting {unknown[0]!r}; the image description settings are "
                                       f"{', '.join(_KEYS)}.")
    enabled = raw.get("enabled", False)
    if not isinstance(enabled, bool):
        raise _refuse("enabled", "Enabled must be true or false.")
    for name in ("provider", "model", "base_url", "secret_id"):
        value = raw.get(name)
        if value is not None and (not isinstance(value, str) or not value.strip() or len(value) > _MAX_TEXT):
            raise _refuse(name, f"This must be a non-empty text of at most {_MAX_TEXT:,} characters.")
    provider, model = raw.get("provider"), raw.get("model")
    base_url, secret_id = raw.get("base_url"), raw.get("secret_id")
    if not enabled and provider is None and model is None:
        if base_url is not None or secret_id is not None:
            raise _refuse("provider", "Choose the provider the endpoint or key is for.")
        return {"enabled": False}
    if provider is None:
        raise _refuse("provider", f"Choose a provider: {', '.join(CHAT_PROVIDERS)}.")
    if provider not in CHAT_PROVIDERS:
        raise _refuse("provider", f"'{provider}' is not a provider of vision models; choose one of: "
                                  f"{', '.join(CHAT_PROVIDERS)}.")
    offered = ", ".join(m.model for m in vision_models() if m.provider == provider)
    if model is None:
        raise _refuse("model", f"Choose one of the '{provider}' vision models: {offered}.")
    entry = find_chat_model(provider, model)
    if entry is None:
        raise _refuse("model", f"'{model}' is not a model '{provider}' serves here; choose one of its vision "
                               f"models: {offered} (GET /rag/vision-models).")
    if not entry.vision:
        raise _refuse("model", f"'{model}' reads text only, so it cannot describe images; choose one of: {offered}.")
    if base_url is not None:
        if provider not in KEYED_PROVIDERS:
            raise _refuse("base_url", f"The '{provider}' provider takes no endpoint; leave this empty.")
        problem = endpoint_problem(base_url, deployment_policy())
        if problem is not None:
            raise _refuse("base_url", problem)
    already = (isinstance(previous, dict) and secret_id is not None and previous.get("secret_id") == secret_id
               and (previous.get("provider"), previous.get("base_url")) == (provider, base_url))
    check_key_binding(p, vault, scope=scope, provider=provider, base_url=base_url, secret_id=secret_id,
                      already_bound=already, field=f"{FIELD}.secret_id", url_field=f"{FIELD}.base_url",
                      noun="image description")
    choice: dict[str, Any] = {"enabled": enabled, "provider": provider, "model": model}
    if base_url is not None:
        choice["base_url"] = base_url
    if secret_id is not None:
        choice["secret_id"] = secret_id
    return choice


def stored_config(p: Principal, vault: KeyVault | None, *, scope: str, config: dict[str, Any],
                  previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """A collection's validated ``ingestion_config`` with its image-description choice checked."""
    raw = config.get("image_description")
    if raw is None:
        return config
    before = (previous or {}).get("image_description")
    return {**config, "image_description": check_image_description(p, vault, scope=scope, raw=raw, previous=before)}
