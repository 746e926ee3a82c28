"""Search over the collections the caller reaches (R-SRCH-1)."""

from __future__ import annotations

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

from sluice.api.http import build_resolver, json_response, parse_json, principal
from sluice.db.connection import transaction
from sluice.observability import logger, metrics, tracer
from sluice.search.service import SearchRequest, search
from sluice.wiring import embedder_for

app = build_resolver()


@app.post("/rag/search")
def run_search():
    p = principal(app)
    req = parse_json(app, SearchRequest)
    with transaction() as conn:
        answer = search(conn, p, req, embedder_for)
    metrics.add_metric(name="SearchResults", unit=MetricUnit.Count, value=answer["count"])
    return json_response(200, answer)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event, context):
    return app.resolve(event, context)
