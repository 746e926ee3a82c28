"""What the sync and the async client share: an operation as data, the retry decision, the token,
and when a waited-for thing is finished. No I/O here: ``Sluice`` and ``AsyncSluice`` send."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel, TypeAdapter

from sluice_client import errors

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

DEFAULT_TIMEOUT = 60.0
# The service's default (DIRECT_UPLOAD_MAX_MB): larger files go through a presigned POST to storage.
DEFAULT_DIRECT_LIMIT = 4 * 1024 * 1024
Token = str | Callable[[], str] | Callable[[], Awaitable[str]] | None


def env_base_url(base_url: str | None) -> str:
    found = base_url or os.environ.get("SLUICE_API_URL")
    if not found:
        raise errors.SluiceError("No API address: pass base_url or set SLUICE_API_URL")
    return found.rstrip("/")


def env_token(token: Token) -> Token:
    return token if token is not None else os.environ.get("SLUICE_TOKEN")


@dataclass(frozen=True)
class RetryPolicy:
    """How refusals that say "later" are retried.

    A 429 (and a 503 that names a Retry-After) is waited out and sent again when the
    operation is ``safe``: it reads, is idempotent, or the service refused it before
    doing anything (its rate limits refuse an upload before accepting it). A wait
    longer than ``max_wait`` is not waited: the refusal is raised with its ``retry_after``.
    """

    attempts: int = 4
    max_wait: float = 60.0
    default_wait: float = 1.0

    def wait_for(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before sending again, or None to raise the refusal."""
        if attempt + 1 >= self.attempts or response.status_code not in (429, 503):
            return None
        error = errors.error_from(response)
        wait = errors.retry_after_of(response, error.details)
        if wait is None:
            if response.status_code == 503:
                return None  # the kill switch names no time: it lasts until the operator lifts it
            wait = self.default_wait
        return wait if wait <= self.max_wait else None


@dataclass(frozen=True)
class Op(Generic[T]):
    """One call: where, what, and how its answer becomes a value."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    safe: bool = False
    params: dict[str, Any] | None = None
    json: Any = None
    data: dict[str, str] | None = None
    files: dict[str, tuple[str, bytes]] | None = None

    def request_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self.params:
            kwargs["params"] = {k: v for k, v in self.params.items() if v is not None}
        if self.json is not None:
            kwargs["json"] = self.json
        if self.data is not None:
            kwargs["data"] = self.data
        if self.files is not None:
            kwargs["files"] = self.files
        return kwargs


def model(cls: type[M]) -> Callable[[httpx.Response], M]:
    return lambda response: cls.model_validate(response.json())


def typed(kind: Any) -> Callable[[httpx.Response], Any]:
    adapter: TypeAdapter[Any] = TypeAdapter(kind)
    return lambda response: adapter.validate_python(response.json())


def nothing(response: httpx.Response) -> None:
    return None


def body(value: BaseModel | dict[str, Any] | None, cls: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """A request body: ``value`` (a model or a dict) or ``fields``; only what was set is sent, so the
    service's defaults apply, and fields this client does not name pass through."""
    if value is None:
        value = cls(**{k: v for k, v in fields.items() if v is not None})
    elif isinstance(value, dict):
        value = cls.model_validate(value)
    dumped: dict[str, Any] = value.model_dump(mode="json", exclude_unset=True, by_alias=True)
    return dumped


def form_fields(metadata: dict[str, Any]) -> dict[str, str]:
    import json

    return {k: (json.dumps(v) if isinstance(v, dict) else str(v)) for k, v in metadata.items() if v is not None}


# --- waiting ----------------------------------------------------------------------------------

@dataclass
class Waiting:
    """When a waited-for state is final, and what a failed one says."""

    what: str
    done: Callable[[Any], bool]
    failure: Callable[[Any], str | None]
    poll: float = 1.0
    seen: list[Any] = field(default_factory=list)

    def check(self, state: Any) -> bool:
        """True when ``state`` is final; raises ``Failed`` with the service's sentence when it failed."""
        self.seen[:] = [state]
        reason = self.failure(state)
        if reason is not None:
            raise errors.Failed(reason, state)
        return self.done(state)

    def timeout(self, seconds: float) -> errors.WaitTimeout:
        last = self.seen[0] if self.seen else None
        where = _describe(last)
        return errors.WaitTimeout(f"{self.what} was not finished after {seconds:g} s{where}", last)


def _describe(state: Any) -> str:
    for attr in ("stage", "step", "status", "state"):
        value = getattr(state, attr, None)
        if value:
            return f" (still {value})"
    return ""


def document_waiting(doc_id: str) -> Waiting:
    return Waiting(f"Document {doc_id}", lambda d: d.status == "done",
                   lambda d: (d.error_message or "The document failed to index.") if d.status == "error" else None)


def run_waiting(run_id: str) -> Waiting:
    return Waiting(f"Sync run {run_id}", lambda r: r.status == "succeeded",
                   lambda r: (r.error or "The sync run failed.") if r.status == "failed" else None)


def teardown_waiting(teardown_id: str) -> Waiting:
    def failure(t: Any) -> str | None:
        if t.state != "failed":
            return None
        err = t.error
        return f"The teardown failed at {err.step}: {err.reason}" if err is not None else "The teardown failed."

    return Waiting(f"Teardown {teardown_id}", lambda t: t.state == "done", failure)
