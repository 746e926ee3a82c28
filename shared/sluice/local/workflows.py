"""Step Functions and schedules locally: the template's state machines run on moto's interpreter,
their Lambda tasks call the in-process handlers, and schedule events fire on their rate.

moto executes real ASL (Task, Map, Choice, Retry, Catch...) when its config says so; a Lambda
task becomes an ``Invoke`` on moto's Lambda backend, which the runtime answers by calling the
handler the template maps the function to. A handler's exception comes back as a function error
whose ``errorType`` is the exception's class name, so an ASL ``Retry``/``Catch`` on
``ErrorEquals: ["SomethingError"]`` matches as it does on AWS.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sluice.local.template import ACCOUNT, REGION, Resolver, Schedule, Template

log = logging.getLogger("sluice.local")

Invoke = Callable[[str, dict[str, Any]], Any]


def function_arn(name: str) -> str:
    """The ARN a function of the template has locally: its logical id is its name."""
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"


def state_machine_arn(name: str) -> str:
    return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}"


def configure_moto(moto_port: int) -> None:
    """Execute state machines, and answer Lambda invokes without Docker (the runtime routes them)."""
    import os

    from moto.core.config import default_user_config

    default_user_config.setdefault("stepfunctions", {})["execute_state_machine"] = True
    default_user_config.setdefault("lambda", {})["use_docker"] = False
    # moto's interpreter calls Lambda through the server it runs in, found by this variable.
    os.environ["MOTO_PORT"] = str(moto_port)


def route_lambda_tasks(invoke: Invoke, functions: set[str]) -> Callable[[], None]:
    """Answer moto's Lambda invokes by calling the template's handlers; returns the undo."""
    from moto.awslambda_simple.models import LambdaSimpleBackend

    original = LambdaSimpleBackend.invoke

    def answer(self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any,
               response_headers: dict[str, str]) -> str | bytes | None:
        name = function_name.rsplit(":", 1)[-1] if function_name.startswith("arn:") else function_name
        if name not in functions:
            return original(self, function_name, qualifier, body, headers, response_headers)
        event = json.loads(body) if body else {}
        try:
            result = invoke(name, event)
        except Exception as exc:
            log.info("task %s raised %s", name, type(exc).__name__, exc_info=True)
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc),
                               "stackTrace": traceback.format_exception(exc)[-3:]}).encode()
        return json.dumps(result, default=str).encode()

    LambdaSimpleBackend.invoke = answer  # type: ignore[method-assign]

    def undo() -> None:
        LambdaSimpleBackend.invoke = original  # type: ignore[method-assign]

    return undo


def create_state_machines(template: Template, root: Path, resolve: Resolver, sfn: Any) -> dict[str, str]:
    """Create each state machine of the template in moto from its ASL file; returns logical id → ARN."""
    arns: dict[str, str] = {}
    for sm in template.state_machines.values():
        definition = (root / sm.definition_uri).read_text(encoding="utf-8")
        for key, value in sm.substitutions.items():
            definition = definition.replace("${" + key + "}", str(resolve(value)))
        arns[sm.name] = sfn.create_state_machine(
            name=sm.name, definition=definition,
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/sluice-local-state-machines",
        )["stateMachineArn"]
    return arns


_RATE = re.compile(r"rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


def rate_seconds(expression: str) -> float:
    """The period of a ``rate(...)`` schedule expression (the only kind the template uses)."""
    m = _RATE.fullmatch(expression.strip())
    if m is None:
        raise ValueError(f"the local runtime runs rate(...) schedules only, not {expression!r}")
    return int(m.group(1)) * _UNIT_SECONDS[m.group(2).rstrip("s")]


class Scheduler:
    """Fires each schedule event of the template on its rate, as EventBridge does (first after one period)."""

    def __init__(self, template: Template, invoke: Invoke) -> None:
        self._jobs: list[tuple[str, Schedule]] = [(fn.name, s) for fn in template.functions.values()
                                                  for s in fn.schedules]
        self._invoke = invoke
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def fire(self, function: str | None = None) -> None:
        """Run every schedule (of one function) now, as a due schedule would."""
        for name, schedule in self._jobs:
            if function is None or name == function:
                self._invoke(name, {"source": "aws.scheduler", "detail-type": "Scheduled Event",
                                    **schedule.payload})

    def start(self) -> None:
        for name, schedule in self._jobs:
            thread = threading.Thread(target=self._run, args=(name, schedule), name=f"schedule-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def request_stop(self) -> None:
        """Fire nothing more; a run in progress finishes (see ``join``)."""
        self._stop.set()

    def join(self, timeout: float) -> None:
        """Wait for the runs in progress, ``timeout`` seconds for all of them together."""
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def stop(self) -> None:
        self.request_stop()
        self.join(timeout=5)

    def _run(self, name: str, schedule: Schedule) -> None:
        period = rate_seconds(schedule.expression)
        while not self._stop.wait(period):
            try:
                self._invoke(name, {"source": "aws.scheduler", "detail-type": "Scheduled Event", **schedule.payload})
            except Exception:
                log.exception("scheduled run of %s failed", name)
