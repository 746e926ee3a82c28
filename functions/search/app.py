"""Search routes: the search (R-SRCH-1..3), the console diagnostic (R-SRCH-4), filter values (R-SRCH-5)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.metrics import MetricUnit

from sluice.api.http import build_resolver, principal
from sluice.api.views import DiagnosticOut, FilterValuesOut, SearchOut, diagnostic_view, search_view
from sluice.config.functions import SearchFunction
from sluice.db.connection import transaction
from sluice.observability import http_handler, metrics
from sluice.search.service import (
    DiagnosticRequest,
    SearchOutcome,
    SearchRequest,
    diagnostic,
    filter_values,
    search,
)
from sluice.wiring import embedder_for, reranker

app = build_resolver()


def _measure(outcome: SearchOutcome, prefix: str) -> None:
    # R-SRCH-6: one set of figures per search; the log line beside it comes from the service.
    metrics.add_metric(name=f"{prefix}Results", unit=MetricUnit.Count, value=len(outcome.results))
    metrics.add_metric(name=f"{prefix}LatencyMs", unit=MetricUnit.Milliseconds, value=outcome.latency_ms)
    if outcome.top_score is not None:
        metrics.add_metric(name=f"{prefix}TopScore", unit=MetricUnit.NoUnit, value=outcome.top_score)
    if not outcome.results:
        metrics.add_metric(name=f"{prefix}Empty", unit=MetricUnit.Count, value=1)


@app.post("/rag/search", summary="Search the collections the caller reaches")
def run_search(body: Annotated[SearchRequest, Body()]) -> SearchOut:
    p = principal(app)
    with transaction() as conn:
        outcome = search(conn, p, body, embedder_for, reranker())
    _measure(outcome, "Search")
    return search_view(outcome)


@app.post("/rag/search/diagnostic", summary="The console search: every candidate with its scores and verdict")
def run_diagnostic(body: Annotated[DiagnosticRequest, Body()]) -> DiagnosticOut:
    p = principal(app)
    with transaction() as conn:
        outcome = diagnostic(conn, p, body, embedder_for, reranker())
    _measure(outcome, "SearchDiagnostic")
    return diagnostic_view(outcome)


@app.get("/rag/collections/<name>/filter-values", summary="The organizational units present in a collection")
def get_filter_values(name: str) -> FilterValuesOut:
    p = principal(app)
    with transaction() as conn:
        units = filter_values(conn, p, name)
    return FilterValuesOut(collection_name=name, organizational_units=units)


handler = http_handler(app, settings=SearchFunction)
