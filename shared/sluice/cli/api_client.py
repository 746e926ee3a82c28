"""The API as the CLI's ``--api`` commands reach it: through sluice-client, one client for every command.

sluice-client is a distribution of its own (clients/python; ``make install`` installs it), so it is
imported when a command needs it, and its absence is a sentence, not a traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sluice_client import Sluice

NEEDS_CLIENT = ("--api needs sluice-client (clients/python): `make install` installs it, or "
                "pip install -e clients/python")


def connect(url: str, token: str, **kwargs: Any) -> Sluice:
    try:
        from sluice_client import Sluice
    except ImportError:
        raise SystemExit(NEEDS_CLIENT) from None
    return Sluice(url.rstrip("/"), token=token, **kwargs)


def refusal_of(exc: BaseException) -> dict[str, Any] | None:
    """A refusal of the service's as it answered it (R-ERR-1), or the client's own (no answer, a wait run out),
    in the same shape; None for any other exception."""
    try:
        from sluice_client import SluiceError
    except ImportError:
        return None
    if not isinstance(exc, SluiceError):
        return None
    return {"error": {"code": exc.code, "message": exc.message, "details": exc.details}}
