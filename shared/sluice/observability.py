"""Powertools Logger, Tracer and Metrics shared by every function (R-OPS-1)."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger(service="sluice")
tracer = Tracer(service="sluice")
metrics = Metrics(namespace="Sluice", service="sluice")
