"""The sample events in tests/events (for `sam local invoke -e`) are real: each runs through
its handler in the local runtime and is answered as it should be.

They name objects and rows the runtime does not hold (a base, a collection), so the
routes that name one answer the absent answer, exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EVENTS = Path(__file__).resolve().parents[1] / "events"
FUNCTION_OF = {"kb": "KbFunction", "uploads": "UploadsFunction", "search": "SearchFunction",
               "parse": "ParseFunction", "chunk": "ChunkFunction", "embed": "EmbedFunction",
               "migrate": "MigrateFunction", "documents": "DocumentsFunction", "dlq": "DeadLetterFunction",
               "teardowns": "TeardownsFunction", "teardown": "TeardownFunction", "sweep": "TeardownSweepFunction",
               "chat": "ChatFunction", "chatworker": "ChatWorkerFunction", "sources": "SourcesFunction",
               "chatfiles": "ChatFilesFunction", "chatarrival": "ChatArrivalFunction"}
# Every sample event and the status its route answers, written out (a new event must be added here).
ANSWER = {
    "chat_create_conversation": 201,
    "chatfiles_presign": 202,  # a pending chat file, and the POST its upload takes
    "documents_kb_ingestion": 404,  # names a base no one created: the absent answer
    "documents_supported_formats": 200,
    "kb_create": 201,
    "kb_health": 200,
    "kb_list": 200,
    "search": 404,  # names a collection no one created: the absent answer
    "uploads_presign": 404,  # names a base no one created
    "sources_connectors": 200,
    "sources_list": 404,  # names a base no one created
    "teardowns_delete_kb": 404,  # names a base no one created
    "teardowns_delete_collection": 404,  # names a collection no one created
    "teardowns_receipt": 404,  # names a teardown no one asked for
}
# What each other (direct, scheduled) sample answers: its result's keys and a check of them.
DIRECT = {
    "migrate": lambda r: set(r) == {"applied"} and isinstance(r["applied"], list),
    # a step for a teardown that is not there has nothing to do, and says so
    "teardown_step_release": lambda r: r == {"step": "release", "more": False, "state": "absent"},
    "sweep_hourly": lambda r: set(r) == {"restarted"} and isinstance(r["restarted"], list),
}
ABSENT = {"error": {"code": "NOT_FOUND", "message": "Collection not found", "details": {}}}

pytestmark = pytest.mark.e2e


def test_every_sample_event_has_an_expected_answer():
    http = {p.stem for p in EVENTS.glob("*.json") if "requestContext" in json.loads(p.read_text())}
    assert http == set(ANSWER)


@pytest.mark.parametrize("path", sorted(EVENTS.glob("*.json")), ids=lambda p: p.stem)
def test_sample_event_runs(runtime, path: Path):
    event = json.loads(path.read_text())
    function = FUNCTION_OF[path.stem.split("_")[0]]
    result = runtime.invoke(function, event)
    if "requestContext" in event:
        assert result["statusCode"] == ANSWER[path.stem], result
        body = json.loads(result["body"])
        if result["statusCode"] == 404:
            assert body == ABSENT
    elif "Records" in event:
        assert result == {"batchItemFailures": []}
    else:
        assert DIRECT[path.stem](result), result
