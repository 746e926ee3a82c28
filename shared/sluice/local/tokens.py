"""HS256 dev tokens: what `sluice local token` mints and the local gateway verifies (R-AUTH-1)."""

from __future__ import annotations

import time
from typing import Any

import jwt

ISSUER = "sluice-local"
AUDIENCE = "sluice"


def mint(secret: str, *, user: str, org: str | None = None, permissions: list[str] | None = None,
         app_admin: bool = False, ttl_seconds: int = 12 * 3600) -> str:
    now = int(time.time())
    claims: dict[str, Any] = {
        "sub": user, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + ttl_seconds,
        "permissions": list(permissions or []), "is_app_admin": app_admin,
    }
    if org:
        claims["org_id"] = org
    return jwt.encode(claims, secret, algorithm="HS256")


def verify(secret: str, token: str) -> dict[str, Any]:
    """The claims of a valid token; raises ``jwt.InvalidTokenError`` otherwise."""
    return jwt.decode(token, secret, algorithms=["HS256"], audience=AUDIENCE, issuer=ISSUER,
                      options={"require": ["sub", "exp"]})


def as_authorizer_claims(claims: dict[str, Any]) -> dict[str, str]:
    """Claims as API Gateway's JWT authorizer hands them over: every value a string."""
    out: dict[str, str] = {}
    for k, v in claims.items():
        if isinstance(v, bool):
            out[k] = "true" if v else "false"
        elif isinstance(v, list):
            out[k] = "[" + " ".join(str(x) for x in v) + "]"
        else:
            out[k] = str(v)
    return out
