"""The Step Functions adapter: starting an execution of a workflow Sluice declares (a teardown)."""

from __future__ import annotations

import json
from typing import Any


class StepFunctionsWorkflow:
    def __init__(self, sfn_client: Any, state_machine_arn: str) -> None:
        self._sfn = sfn_client
        self.state_machine_arn = state_machine_arn

    def start(self, name: str, payload: dict[str, Any]) -> str:
        """Start an execution named ``name`` with ``payload`` as its input; returns its ARN."""
        resp = self._sfn.start_execution(stateMachineArn=self.state_machine_arn, name=name,
                                         input=json.dumps(payload))
        return str(resp["executionArn"])
