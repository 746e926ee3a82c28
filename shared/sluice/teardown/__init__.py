"""Teardowns (SPEC §11): deleting a collection or a base removes everything of it, nothing of
anyone else's, and says so in a receipt.

``request`` deletes the rows and commits the reservation in the request's transaction (R-TD-1);
``steps`` are the workflow's tasks, each idempotent: the chunks (the table dropped, or only these
bases' chunks when a sibling base still holds the name), the sync sources, the stored objects
(DeleteObjects, 1,000 keys a call), and the release; ``sweep.restart_stalled`` starts again what stalled (R-TD-2);
``receipts`` is what a user (and the log) is told.
"""

from sluice.teardown.context import TeardownContext, Workflow
from sluice.teardown.receipts import get_receipt, summary
from sluice.teardown.request import (
    request_base_teardown,
    request_collection_teardown,
    request_operator_drop,
    start_workflow,
)
from sluice.teardown.steps import STEPS, record_failure, run_all, run_step
from sluice.teardown.sweep import restart_stalled

__all__ = [
    "STEPS",
    "TeardownContext",
    "Workflow",
    "get_receipt",
    "record_failure",
    "request_base_teardown",
    "request_collection_teardown",
    "request_operator_drop",
    "restart_stalled",
    "run_all",
    "run_step",
    "start_workflow",
    "summary",
]
