"""Reading a collection's embedding key from Secrets Manager (``embedding_secret_id``)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

SECRET_TTL_SECONDS = 300.0


def api_key_from_secret(secret: str) -> str:
    """The API key in a secret stored as a plain string or as JSON ``{"api_key": ...}``."""
    text = secret.strip()
    if text.startswith("{"):
        try:
            payload = json.loads(text)
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            key = payload.get("api_key")
            if not isinstance(key, str) or not key.strip():
                raise LookupError("the secret is a JSON object without an api_key string")
            return key.strip()
    if not text:
        raise LookupError("the secret is empty")
    return text


class SecretsManagerSecretReader:
    """A ``SecretReader`` over an injected ``secretsmanager`` client.

    Keys are kept for a few minutes so a document's many batches do not each
    pay a Secrets Manager call, yet a rotated key is picked up without a cold start.
    """

    def __init__(self, client: Any, *, ttl_seconds: float = SECRET_TTL_SECONDS) -> None:
        self._client = client
        self._ttl = ttl_seconds
        self._keys: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def get_secret(self, secret_id: str) -> str:
        now = time.monotonic()
        with self._lock:
            cached = self._keys.get(secret_id)
        if cached and now - cached[0] < self._ttl:
            return cached[1]
        response = self._client.get_secret_value(SecretId=secret_id)
        secret = response.get("SecretString")
        if secret is None:
            raise LookupError("the secret holds binary data, not an API key")
        key = api_key_from_secret(secret)
        with self._lock:
            self._keys[secret_id] = (now, key)
        return key

    def forget(self, secret_id: str) -> None:
        """Drop a key the provider refused, so the next call reads the rotated one."""
        with self._lock:
            self._keys.pop(secret_id, None)


class SecretsManagerKeyVault:
    """The ``KeyVault`` of ``sluice.access.keys`` over an injected ``secretsmanager`` client.

    Reads a secret's tags with ``DescribeSecret``; the value is never read to
    decide who may bind it. A secret scheduled for deletion is not held.
    """

    # AccessDenied: the deployment's role may describe only secrets tagged sluice:provider (template.yaml),
    # so an untagged secret, nobody's to lend, is refused like an absent one.
    _ABSENT = frozenset({"ResourceNotFoundException", "InvalidParameterException", "ValidationException",
                         "AccessDeniedException"})

    def __init__(self, client: Any) -> None:
        self._client = client

    def tags_of(self, secret_id: str) -> dict[str, str] | None:
        from botocore.exceptions import ClientError

        try:
            described = self._client.describe_secret(SecretId=secret_id)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in self._ABSENT:
                return None
            raise
        if described.get("DeletedDate"):
            return None
        return {t["Key"]: t.get("Value", "") for t in described.get("Tags") or []}
