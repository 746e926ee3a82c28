"""What the teardown code is handed: a unit of work, the object store, the settings, and the
workflow that runs the steps (Step Functions on AWS and locally)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from sluice.config import TeardownContextSettings
from sluice.db.connection import UnitOfWork
from sluice.storage import ObjectStore


class Workflow(Protocol):
    def start(self, name: str, payload: dict[str, Any]) -> str:
        """Start an execution named ``name`` with ``payload``; returns its id (an ARN)."""
        ...


@dataclass
class TeardownContext:
    uow: UnitOfWork
    store: ObjectStore
    settings: TeardownContextSettings
