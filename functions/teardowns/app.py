"""Teardowns over HTTP (R-TD-1): delete a base or a collection, and read a teardown's receipt."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from sluice import teardown
from sluice.api.http import build_resolver, principal, respond
from sluice.api.responses import accepted
from sluice.api.views_teardown import TeardownOut, teardown_view
from sluice.config import current
from sluice.config.functions import TeardownsFunction
from sluice.db.connection import transaction
from sluice.observability import http_handler
from sluice.wiring import teardown_workflow

app = build_resolver()


@app.delete("/kb/<kb_id>", summary="Delete a knowledge base and everything of it (a default base is cleared)",
            responses=accepted(TeardownOut))
def delete_kb(kb_id: str) -> Response[TeardownOut]:
    p = principal(app)
    with transaction() as conn:
        td = teardown.request_base_teardown(conn, p, kb_id, current(TeardownsFunction))
    return respond(202, teardown_view(teardown.start_workflow(transaction, teardown_workflow(), td)))


@app.delete("/rag/collections/<name>", summary="Delete every base on a collection name the caller writes",
            responses=accepted(TeardownOut))
def delete_collection(name: str) -> Response[TeardownOut]:
    p = principal(app)
    with transaction() as conn:
        td = teardown.request_collection_teardown(conn, p, name, current(TeardownsFunction))
    return respond(202, teardown_view(teardown.start_workflow(transaction, teardown_workflow(), td)))


@app.get("/rag/teardowns/<teardown_id>", summary="A teardown's receipt: its state and what it removed")
def get_teardown(teardown_id: str) -> TeardownOut:
    p = principal(app)
    with transaction() as conn:
        td = teardown.get_receipt(conn, p, teardown_id)
    return teardown_view(td)


handler = http_handler(app, settings=TeardownsFunction)
