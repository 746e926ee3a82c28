"""The OpenAPI description of a route's non-200 answers, written once."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def _with(status: int, description: str, model: type[BaseModel]) -> dict[int, Any]:
    return {status: {"description": description, "content": {"application/json": {"model": model}}}}


def created(model: type[BaseModel]) -> dict[int, Any]:
    return _with(201, "Created", model)


def accepted(model: type[BaseModel]) -> dict[int, Any]:
    return _with(202, "Accepted: the work goes on after the answer", model)


def no_content() -> dict[int, Any]:
    return {204: {"description": "Done; no body"}}
