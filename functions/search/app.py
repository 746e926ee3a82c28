"""Search routes: the search (R-SRCH-1..3), the console diagnostic (R-SRCH-4), filter values (R-SRCH-5)."""

from __future__ import annotations

from aws_lambda_powertools.metrics import MetricUnit

from sluice.api.http import build_resolver, json_response, parse_json, principal
from sluice.db.connection import transaction
from sluice.observability import http_handler, metrics
from sluice.search.service import (
    DiagnosticRequest,
    SearchOutcome,
    SearchRequest,
    diagnostic,
    diagnostic_body,
    filter_values,
    search,
    search_body,
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


@app.post("/rag/search")
def run_search():
    p = principal(app)
    req = parse_json(app, SearchRequest)
    with transaction() as conn:
        outcome = search(conn, p, req, embedder_for, reranker())
    _measure(outcome, "Search")
    return json_response(200, search_body(outcome))


@app.post("/rag/search/diagnostic")
def run_diagnostic():
    p = principal(app)
    req = parse_json(app, DiagnosticRequest)
    with transaction() as conn:
        outcome = diagnostic(conn, p, req, embedder_for, reranker())
    _measure(outcome, "SearchDiagnostic")
    return json_response(200, diagnostic_body(outcome))


@app.get("/rag/collections/<name>/filter-values")
def get_filter_values(name: str):
    p = principal(app)
    with transaction() as conn:
        answer = filter_values(conn, p, name)
    return json_response(200, answer)


handler = http_handler(app)
