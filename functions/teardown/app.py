"""The teardown workflow's tasks (infra/statemachines/teardown.asl.json): one step a call,
named in the event; ``record_failure`` is the workflow's Catch."""

from __future__ import annotations

from typing import Any

from sluice import teardown
from sluice.config.functions import TeardownFunction
from sluice.observability import plain_handler
from sluice.wiring import teardown_context


def run(event: dict[str, Any]) -> dict[str, Any]:
    if event["step"] == "record_failure":
        return teardown.record_failure(teardown_context(), event["teardown_id"], event["failed_step"],
                                       event.get("error") or {})
    return teardown.run_step(teardown_context(), event["step"], event["teardown_id"])


handler = plain_handler(run, settings=TeardownFunction)
