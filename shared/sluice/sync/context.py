"""What the sync service needs, built once per cold start by the composition root."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from sluice.access.keys import KeyVault
from sluice.admission import ParameterReader
from sluice.config import SyncContextSettings
from sluice.db.connection import UnitOfWork
from sluice.storage import ObjectStore
from sluice.sync.connectors import ConnectorOpener


class Executions(Protocol):
    """Where a run's state machine executes (Step Functions; moto's interpreter locally)."""

    def start(self, run_id: str) -> str:
        """Start the run's execution; returns its ARN."""
        ...

    def status(self, execution_arn: str) -> str | None:
        """RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED; None when it cannot be told."""
        ...


class StepFunctionsExecutions:
    """``Executions`` over an injected ``stepfunctions`` client and the sync state machine's ARN."""

    def __init__(self, client: Any, state_machine_arn: str) -> None:
        self._client = client
        self._arn = state_machine_arn

    def start(self, run_id: str) -> str:
        import json

        started = self._client.start_execution(stateMachineArn=self._arn, name=f"run-{run_id}",
                                               input=json.dumps({"run_id": run_id}))
        return str(started["executionArn"])

    def status(self, execution_arn: str) -> str | None:
        try:
            return str(self._client.describe_execution(executionArn=execution_arn)["status"])
        except Exception:
            return None


class DueQueue(Protocol):
    """Where the schedule hands out due runs (an SQS queue: ``sluice.storage.queues.JobQueue``)."""

    def send_all(self, messages: list[dict[str, Any]]) -> None:
        """Queue one message each, in the order given."""
        ...


@dataclass
class SyncContext:
    uow: UnitOfWork
    store: ObjectStore
    settings: SyncContextSettings
    connectors: ConnectorOpener
    executions: Executions | None = None
    vault: KeyVault | None = None
    read_parameter: ParameterReader | None = None
    # Where the schedule hands out its due runs, one message each (SYNC_DUE_QUEUE_URL).
    due_queue: DueQueue | None = None
