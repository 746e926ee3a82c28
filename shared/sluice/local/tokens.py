"""HS256 dev tokens: what `sluice local token` mints and the local gateway verifies (R-AUTH-1)."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Any

import jwt

SECRET_FILE = "jwt-secret"  # noqa: S105 - a file name, not a secret
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


def dev_secret(data_dir: Path, configured: str = "") -> str:
    """The key the local gateway signs and verifies with: ``configured`` if set, else this data
    directory's own, generated at first use and readable by its owner only.

    Never a constant in the code: a key everyone knows lets any page the developer's
    browser opens mint tokens for the local API (as any user, app admin included).
    """
    if configured:
        return configured
    path = data_dir / SECRET_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(32))
    return path.read_text().strip()


# The dev user the sign-in link `sluice local up` prints signs in as: a writer of the org "acme".
CONSOLE_USER, CONSOLE_ORG = "alice", "acme"
CONSOLE_PERMISSIONS = ("collections:view", "collections:edit")


def console_link(api_url: str, secret: str, *, ttl_seconds: int = 12 * 3600) -> str:
    """The console's address with a dev user's token in its fragment: a fragment never reaches a
    server (nor a log), and the page takes the token and clears it before anything else (R-UI-1)."""
    token = mint(secret, user=CONSOLE_USER, org=CONSOLE_ORG, permissions=list(CONSOLE_PERMISSIONS),
                 ttl_seconds=ttl_seconds)
    return f"{api_url}/console#token={token}"
