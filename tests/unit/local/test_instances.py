"""A function's local environments keep their events apart, as Lambda's do.

Powertools' HTTP resolver keeps the event it is handling on the ``BaseRouter`` class, so every
resolver in a process shares it. Lambda runs one event per process; the local runtime runs several
environments as threads of one process, so two requests at once read each other's event unless the
runtime keeps that attribute per thread. Seen in a CI rehearsal: a file's name paired with another
file's upload."""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

import pytest

from sluice.local.instances import Instances

HANDLER = '''
import sys
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

app = APIGatewayHttpResolver()
meeting = sys.modules["sluice_test_meeting"]


@app.get("/echo/<name>")
def echo(name: str) -> dict:
    meeting.barrier.wait(timeout=10)  # both requests are inside their handlers, their events both set
    return {"asked": name, "seen_path": app.current_event.path,
            "seen_context": app.lambda_context.function_name}


def handler(event, context):
    return app.resolve(event, context)
'''


class _Context:
    def __init__(self, name: str) -> None:
        self.function_name = name


def _event(name: str) -> dict:
    path = f"/echo/{name}"
    return {"version": "2.0", "routeKey": f"GET {path}", "rawPath": path, "rawQueryString": "",
            "headers": {}, "isBase64Encoded": False,
            "requestContext": {"http": {"method": "GET", "path": path, "sourceIp": "127.0.0.1"},
                               "stage": "$default"}}


@pytest.fixture
def meeting(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("sluice_test_meeting")
    module.barrier = threading.Barrier(2)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sluice_test_meeting", module)
    return module


def test_two_requests_handled_at_once_each_read_their_own_event_and_context(
        tmp_path: Path, meeting: types.ModuleType) -> None:
    (tmp_path / "app.py").write_text(HANDLER)
    instances = Instances("Echo", tmp_path / "app.py", limit=2)
    answers: dict[str, str] = {}

    def call(name: str) -> None:
        with instances.checkout() as module:
            answers[name] = module.handler(_event(name), _Context(f"fn-{name}"))["body"]

    threads = [threading.Thread(target=call, args=(name,)) for name in ("alpha", "beta")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)

    assert answers == {
        "alpha": '{"asked":"alpha","seen_path":"/echo/alpha","seen_context":"fn-alpha"}',
        "beta": '{"asked":"beta","seen_path":"/echo/beta","seen_context":"fn-beta"}',
    }
