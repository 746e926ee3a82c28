"""Powertools Logger, Tracer and Metrics shared by every function (R-OPS-1), and the two
shapes of Lambda handler built on them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

logger = Logger(service="sluice")
tracer = Tracer(service="sluice")
metrics = Metrics(namespace="Sluice", service="sluice")

Handler = Callable[[dict[str, Any], Any], Any]


def http_handler(app: APIGatewayHttpResolver) -> Handler:
    """An API function's Lambda handler: the resolver's routes, logged, measured and traced."""

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    @metrics.log_metrics
    @tracer.capture_lambda_handler
    def handler(event: dict[str, Any], context: Any) -> Any:
        return app.resolve(event, context)

    return handler


def sqs_handler(record_handler: Callable[[SQSRecord], None]) -> Handler:
    """A queue function's Lambda handler: each record on its own, failed ones reported back
    (ReportBatchItemFailures) so only they are redelivered."""
    processor = BatchProcessor(event_type=EventType.SQS)

    @logger.inject_lambda_context
    @metrics.log_metrics
    @tracer.capture_lambda_handler
    def handler(event: dict[str, Any], context: Any) -> Any:
        return process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                        context=context)

    return handler
