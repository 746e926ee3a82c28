"""``AsyncSluice``: ``Sluice`` (sluice_client.client) awaited, on httpx.AsyncClient."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

from sluice_client import _ops as ops
from sluice_client import errors
from sluice_client import models as m
from sluice_client._core import (
    DEFAULT_DIRECT_LIMIT,
    DEFAULT_TIMEOUT,
    Op,
    RetryPolicy,
    Token,
    Waiting,
    document_waiting,
    env_base_url,
    env_token,
    run_waiting,
    teardown_waiting,
)
from sluice_client._upload import Source, plan, presigned_fallback, storage_failure

P = ParamSpec("P")
T = TypeVar("T")


def _op(build: Callable[P, Op[T]]) -> Callable[Concatenate[AsyncSluice, P], Awaitable[T]]:
    @functools.wraps(build)
    async def method(self: AsyncSluice, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.send(build(*args, **kwargs))

    return method


class AsyncSluice:
    """``Sluice``, awaited: the same operations, uploads, waits, errors and retries.

    ``token`` may also be an async callable (awaited for every request).
    """

    def __init__(self, base_url: str | None = None, *, token: Token = None, timeout: float = DEFAULT_TIMEOUT,
                 retry: RetryPolicy | None = None, direct_limit: int = DEFAULT_DIRECT_LIMIT,
                 transport: httpx.AsyncBaseTransport | None = None, headers: dict[str, str] | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.base_url = env_base_url(base_url)
        self.token = env_token(token)
        self.retry = retry or RetryPolicy()
        self.direct_limit = direct_limit
        self._sleep = sleep
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout, headers=headers,
                                       transport=transport or httpx.AsyncHTTPTransport(retries=2))
        self._storage = httpx.AsyncClient(timeout=timeout)

    async def __aenter__(self) -> AsyncSluice:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()
        await self._storage.aclose()

    async def _bearer(self) -> dict[str, str]:
        token: Any = self.token() if callable(self.token) else self.token
        if inspect.isawaitable(token):
            token = await token
        return {"Authorization": f"Bearer {token}"} if token else {}

    async def send(self, op: Op[T]) -> T:
        """Send one operation: retried as ``retry`` says, its answer parsed, a refusal raised."""
        attempt, refreshed = 0, False
        while True:
            try:
                response = await self._http.request(op.method, op.path, headers=await self._bearer(),
                                                    **op.request_kwargs())
            except httpx.TransportError as exc:
                raise errors.Unreachable(f"The Sluice API at {self.base_url} did not answer: {exc}") from exc
            if response.status_code == 401 and callable(self.token) and not refreshed:
                refreshed = True
                continue
            if response.is_success:
                return op.parse(response)
            wait = self.retry.wait_for(response, attempt) if op.safe else None
            if wait is None:
                raise errors.error_from(response)
            await self._sleep(wait)
            attempt += 1

    async def upload(self, kb_id: str, source: Source, *, filename: str | None = None,
                     presigned: bool | None = None, organizational_unit: str | None = None,
                     document_type: str | None = None, document_date: str | None = None,
                     ingestion: dict[str, Any] | None = None) -> m.AcceptedOut:
        """``Sluice.upload``, awaited."""
        upload = plan(source, filename)
        meta: dict[str, Any] = {"organizational_unit": organizational_unit, "document_type": document_type,
                                "document_date": document_date, "ingestion": ingestion}
        if not (presigned if presigned is not None else upload.size > self.direct_limit):
            try:
                return await self.send(ops.upload_document(kb_id, upload.filename, upload.read(), **meta))
            except errors.ApiError as exc:
                if not presigned_fallback(exc, upload.size):
                    raise
        accepted = await self.send(ops.presign_upload(kb_id, upload.filename, upload.size, **meta))
        content = upload.content if upload.content is not None else await asyncio.to_thread(upload.read)
        failed: str | None
        try:
            response = await self._storage.post(accepted.upload.url, data=accepted.upload.fields,
                                                files={"file": (upload.filename, content)})
            failed = storage_failure(response)
        except httpx.HTTPError as exc:
            failed = storage_failure(None, exc)
        if failed is not None:
            with contextlib.suppress(errors.SluiceError, httpx.HTTPError):
                await self.send(ops.delete_document(accepted.id))
            raise errors.StorageRefused(failed)
        return m.AcceptedOut.model_validate(accepted.model_dump(exclude={"upload"}))

    async def _wait(self, waiting: Waiting, get: Callable[[], Awaitable[Any]], timeout: float, poll: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            state = await get()
            if waiting.check(state):
                return state
            if time.monotonic() + poll > deadline:
                raise waiting.timeout(timeout)
            await self._sleep(poll)

    async def wait(self, document: str | m.AcceptedOut | m.DocumentOut, *, timeout: float = 600,
                   poll: float = 1.0) -> m.DocumentOut:
        """``Sluice.wait``, awaited."""
        doc_id = document if isinstance(document, str) else document.id
        found: m.DocumentOut = await self._wait(document_waiting(doc_id), lambda: self.get_document(doc_id),
                                                timeout, poll)
        return found

    async def wait_run(self, run: str | m.SyncRunOut, *, timeout: float = 600, poll: float = 1.0) -> m.SyncRunOut:
        run_id = run if isinstance(run, str) else run.id
        found: m.SyncRunOut = await self._wait(run_waiting(run_id), lambda: self.get_sync_run(run_id), timeout, poll)
        return found

    async def wait_teardown(self, teardown: str | m.TeardownOut, *, timeout: float = 600,
                            poll: float = 1.0) -> m.TeardownOut:
        td_id = teardown if isinstance(teardown, str) else teardown.id
        found: m.TeardownOut = await self._wait(teardown_waiting(td_id), lambda: self.get_teardown(td_id),
                                                timeout, poll)
        return found

    async def iter_documents(self, kb_id: str, *, page: int = 200) -> AsyncIterator[m.DocumentOut]:
        offset: int | None = 0
        while offset is not None:
            listed = await self.list_documents(kb_id, limit=page, offset=offset)
            for doc in listed.documents:
                yield doc
            offset = listed.next_offset

    # --- every operation of the API (sluice_client._ops) ---------------------------------------

    health = _op(ops.health)
    embedding_models = _op(ops.embedding_models)
    vision_models = _op(ops.vision_models)
    parsers = _op(ops.parsers)
    supported_formats = _op(ops.supported_formats)
    text_search_languages = _op(ops.text_search_languages)
    list_knowledge_bases = _op(ops.list_knowledge_bases)
    create_knowledge_base = _op(ops.create_knowledge_base)
    get_knowledge_base = _op(ops.get_knowledge_base)
    update_knowledge_base = _op(ops.update_knowledge_base)
    delete_knowledge_base = _op(ops.delete_knowledge_base)
    knowledge_base_ingestion = _op(ops.knowledge_base_ingestion)
    grant = _op(ops.grant)
    revoke_grant = _op(ops.revoke_grant)
    upload_document = _op(ops.upload_document)
    presign_upload = _op(ops.presign_upload)
    list_documents = _op(ops.list_documents)
    get_document = _op(ops.get_document)
    delete_document = _op(ops.delete_document)
    document_content = _op(ops.document_content)
    document_download = _op(ops.document_download)
    retry_document = _op(ops.retry_document)
    search = _op(ops.search)
    diagnostic_search = _op(ops.diagnostic_search)
    list_collections = _op(ops.list_collections)
    collection_info = _op(ops.collection_info)
    filter_values = _op(ops.filter_values)
    delete_collection = _op(ops.delete_collection)
    get_teardown = _op(ops.get_teardown)
    list_connectors = _op(ops.list_connectors)
    list_sync_sources = _op(ops.list_sync_sources)
    create_sync_source = _op(ops.create_sync_source)
    preview_sync_source = _op(ops.preview_sync_source)
    get_sync_source = _op(ops.get_sync_source)
    update_sync_source = _op(ops.update_sync_source)
    delete_sync_source = _op(ops.delete_sync_source)
    find_sync_source = _op(ops.find_sync_source)
    repoint_sync_source = _op(ops.repoint_sync_source)
    clone_sync_source = _op(ops.clone_sync_source)
    start_sync_run = _op(ops.start_sync_run)
    list_sync_runs = _op(ops.list_sync_runs)
    get_sync_run = _op(ops.get_sync_run)
    sync_run_files = _op(ops.sync_run_files)
    retry_failed_sync_files = _op(ops.retry_failed_sync_files)
    upload_chat_file = _op(ops.upload_chat_file)
    presign_chat_file = _op(ops.presign_chat_file)
    get_chat_file = _op(ops.get_chat_file)
    delete_chat_file = _op(ops.delete_chat_file)
    chat_file_pages = _op(ops.chat_file_pages)
    list_conversations = _op(ops.list_conversations)
    create_conversation = _op(ops.create_conversation)
    get_conversation = _op(ops.get_conversation)
    delete_conversation = _op(ops.delete_conversation)
    post_message = _op(ops.post_message)
    list_attachments = _op(ops.list_attachments)
    attach = _op(ops.attach)
    remove_attachment = _op(ops.remove_attachment)
    register_attachment = _op(ops.register_attachment)
    chat_context = _op(ops.chat_context)
    share_document = _op(ops.share_document)
    presign_shared_document = _op(ops.presign_shared_document)
    list_pool_documents = _op(ops.list_pool_documents)
    delete_shared_document = _op(ops.delete_shared_document)
    revoke_pool_recipient = _op(ops.revoke_pool_recipient)
