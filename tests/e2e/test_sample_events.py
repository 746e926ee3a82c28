"""The sample events in tests/events (for `sam local invoke -e`) are real: each runs through
its handler in the local runtime and is answered without a server error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EVENTS = Path(__file__).resolve().parents[1] / "events"
FUNCTION_OF = {"kb": "KbFunction", "uploads": "UploadsFunction", "search": "SearchFunction",
               "parse": "ParseFunction", "chunk": "ChunkFunction", "embed": "EmbedFunction",
               "migrate": "MigrateFunction", "documents": "DocumentsFunction", "dlq": "DeadLetterFunction"}

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("path", sorted(EVENTS.glob("*.json")), ids=lambda p: p.stem)
def test_sample_event_runs(runtime, path: Path):
    event = json.loads(path.read_text())
    function = FUNCTION_OF[path.stem.split("_")[0]]
    result = runtime.invoke(function, event)
    if "requestContext" in event:
        assert result["statusCode"] < 500, result
        body = json.loads(result["body"])
        assert "error" not in body or set(body["error"]) == {"code", "message", "details"}
    elif "Records" in event:
        assert result == {"batchItemFailures": []}
    else:
        assert isinstance(result, dict)
