"""Powertools Logger, Tracer and Metrics shared by every function (R-OPS-1), and the shapes of
Lambda handler built on them: each reads its function's settings at cold start
(``sluice.config.check``, the model ``sluice.config.functions`` composes), so a missing queue URL
or a malformed number fails by name, not later as ''."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

from sluice import config

logger = Logger(service="sluice")
tracer = Tracer(service="sluice")
metrics = Metrics(namespace="Sluice", service="sluice")

Handler = Callable[[dict[str, Any], Any], Any]


class Resolver(Protocol):
    def resolve(self, event: dict[str, Any], context: Any) -> dict[str, Any]: ...


def _checked_once(settings: type[config.Section]) -> Callable[[], None]:
    checked: list[bool] = []

    def check() -> None:
        if not checked:
            config.check(settings)
            checked.append(True)

    return check


def http_handler(app: Resolver, *, settings: type[config.Section]) -> Handler:
    """An API function's Lambda handler: the resolver's routes, logged, measured and traced."""
    check = _checked_once(settings)

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    @metrics.log_metrics
    @tracer.capture_lambda_handler
    def handler(event: dict[str, Any], context: Any) -> Any:
        check()
        return app.resolve(event, context)

    return handler


def sqs_handler(record_handler: Callable[..., None], *, settings: type[config.Section]) -> Handler:
    """A queue function's Lambda handler: each record on its own, failed ones reported back
    (ReportBatchItemFailures) so only they are redelivered. A record handler with a ``lambda_context``
    parameter is given the invocation's context (Powertools' batch processor does that)."""
    processor = BatchProcessor(event_type=EventType.SQS)
    check = _checked_once(settings)

    @logger.inject_lambda_context
    @metrics.log_metrics
    @tracer.capture_lambda_handler
    def handler(event: dict[str, Any], context: Any) -> Any:
        check()
        return process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                        context=context)

    return handler


def plain_handler(work: Callable[[dict[str, Any]], Any], *, settings: type[config.Section]) -> Handler:
    """A function invoked directly (a migration, a Step Functions task): logged, measured, traced."""
    check = _checked_once(settings)

    @logger.inject_lambda_context
    @metrics.log_metrics
    @tracer.capture_lambda_handler
    def handler(event: dict[str, Any], context: Any) -> Any:
        check()
        return work(event)

    return handler
