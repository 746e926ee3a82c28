"""Applies pending schema migrations; invoked after each deployment (R-OPS-3)."""

from __future__ import annotations

from sluice.db.connection import database_url
from sluice.db.migrations import migrate
from sluice.observability import logger


@logger.inject_lambda_context
def handler(event, context):
    applied = migrate(database_url())
    logger.info("migrations applied", extra={"applied": applied})
    return {"applied": applied}
