"""Applies pending schema migrations; invoked after each deployment (R-OPS-3)."""

from __future__ import annotations

from typing import Any

from sluice.config.functions import MigrateFunction
from sluice.db.connection import database_url
from sluice.db.migrations import migrate
from sluice.observability import logger, plain_handler


def apply(event: dict[str, Any]) -> dict[str, Any]:
    applied = migrate(database_url())
    logger.info("migrations applied", extra={"applied": applied})
    return {"applied": applied}


handler = plain_handler(apply, settings=MigrateFunction)
