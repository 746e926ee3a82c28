"""Claims → Principal (R-AUTH-1).

API Gateway's JWT authorizer hands claims over as strings: a list claim arrives
as ``"[a b]"`` and a boolean as ``"true"``. The local gateway builds the same
shape, so this is the one parser both paths use.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sluice.errors import UnauthorizedError

PERMISSIONS = frozenset({"collections:view", "collections:edit", "secrets:view"})


@dataclass(frozen=True)
class Principal:
    user_id: str
    org_id: str | None
    permissions: frozenset[str]
    is_app_admin: bool

    def can(self, permission: str) -> bool:
        return permission in self.permissions


def _permissions(value: Any) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, list | tuple):
        return frozenset(str(v) for v in value)
    text = str(value).strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            parsed = json.loads(text)
            if isinstance(parsed, list):
                return frozenset(str(v) for v in parsed)
        except ValueError:
            text = text[1:-1]
    return frozenset(p for p in text.replace(",", " ").split() if p)


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "1", "yes")


def principal_from_claims(claims: Mapping[str, Any] | None) -> Principal:
    if not claims or not claims.get("sub"):
        raise UnauthorizedError("A bearer token is required")
    org = claims.get("org_id")
    return Principal(
        user_id=str(claims["sub"]),
        org_id=str(org) if org not in (None, "", "null") else None,
        permissions=_permissions(claims.get("permissions")),
        is_app_admin=_flag(claims.get("is_app_admin", False)),
    )


def principal_from_event(event: Mapping[str, Any]) -> Principal:
    claims = (((event.get("requestContext") or {}).get("authorizer") or {}).get("jwt") or {}).get("claims")
    return principal_from_claims(claims)
