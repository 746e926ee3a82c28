"""``Sluice``: the synchronous client (httpx). ``AsyncSluice`` (sluice_client.aio) is the same, awaited."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
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


def _op(build: Callable[P, Op[T]]) -> Callable[Concatenate[Sluice, P], T]:
    @functools.wraps(build)
    def method(self: Sluice, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.send(build(*args, **kwargs))

    return method


class Sluice:
    """A Sluice API, as one caller.

    ``token`` is a bearer token, or a callable that returns one (called for every request,
    and once more after a 401, so a refreshing provider refreshes); default ``SLUICE_TOKEN``.
    ``base_url`` defaults to ``SLUICE_API_URL``. Refusals raise ``sluice_client.errors``
    classes by ``error.code``; a 429 (or a 503 with Retry-After) is waited out and retried
    where the operation is safe to send again (``retry``).
    """

    def __init__(self, base_url: str | None = None, *, token: Token = None, timeout: float = DEFAULT_TIMEOUT,
                 retry: RetryPolicy | None = None, direct_limit: int = DEFAULT_DIRECT_LIMIT,
                 transport: httpx.BaseTransport | None = None, headers: dict[str, str] | None = None,
                 sleep: Callable[[float], None] = time.sleep, http_client: httpx.Client | None = None) -> None:
        """``http_client``: an httpx.Client of your own (proxies, certificates, hooks); its base_url is
        the API's when ``base_url`` is not given, and closing the Sluice closes it."""
        self.base_url = env_base_url(base_url or (str(http_client.base_url) if http_client else None))
        self.token = env_token(token)
        self.retry = retry or RetryPolicy()
        self.direct_limit = direct_limit
        self._sleep = sleep
        self._http = http_client or httpx.Client(base_url=self.base_url, timeout=timeout, headers=headers,
                                                 transport=transport or httpx.HTTPTransport(retries=2))
        # Presigned uploads go to storage with the form the API signed, never with the bearer token.
        self._storage = httpx.Client(timeout=timeout)

    def __enter__(self) -> Sluice:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()
        self._storage.close()

    # --- sending ------------------------------------------------------------------------------

    def _bearer(self) -> dict[str, str]:
        token = self.token() if callable(self.token) else self.token
        if token is not None and not isinstance(token, str):
            raise errors.SluiceError("The token provider of a Sluice client must return a str (AsyncSluice awaits)")
        return {"Authorization": f"Bearer {token}"} if token else {}

    def send(self, op: Op[T]) -> T:
        """Send one operation: retried as ``retry`` says, its answer parsed, a refusal raised."""
        attempt, refreshed = 0, False
        while True:
            try:
                response = self._http.request(op.method, op.path, headers=self._bearer(), **op.request_kwargs())
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
            self._sleep(wait)
            attempt += 1

    # --- uploads and waits --------------------------------------------------------------------

    def upload(self, kb_id: str, source: Source, *, filename: str | None = None, presigned: bool | None = None,
               organizational_unit: str | None = None, document_type: str | None = None,
               document_date: str | None = None, ingestion: dict[str, Any] | None = None) -> m.AcceptedOut:
        """Upload a file (a path, or bytes with ``filename``) to a knowledge base: in the request up to
        ``direct_limit``, through a presigned POST straight to storage above it (or as ``presigned`` says).
        Returns the accepted document; ``wait`` follows it to done."""
        upload = plan(source, filename)
        meta: dict[str, Any] = {"organizational_unit": organizational_unit, "document_type": document_type,
                                "document_date": document_date, "ingestion": ingestion}
        if not (presigned if presigned is not None else upload.size > self.direct_limit):
            try:
                return self.send(ops.upload_document(kb_id, upload.filename, upload.read(), **meta))
            except errors.ApiError as exc:
                if not presigned_fallback(exc, upload.size):
                    raise
        accepted = self.send(ops.presign_upload(kb_id, upload.filename, upload.size, **meta))
        self._to_storage(accepted.upload, upload.filename, upload.content, upload.path, accepted.id)
        return m.AcceptedOut.model_validate(accepted.model_dump(exclude={"upload"}))

    def _to_storage(self, post: m.PresignedPostOut, filename: str, content: bytes | None, path: Any,
                    doc_id: str) -> None:
        failed: str | None
        try:
            with contextlib.ExitStack() as stack:
                data: Any = content if content is not None else stack.enter_context(open(path, "rb"))  # noqa: SIM115
                response = self._storage.post(post.url, data=post.fields, files={"file": (filename, data)})
            failed = storage_failure(response)
        except (httpx.HTTPError, OSError) as exc:
            failed = storage_failure(None, exc)
        if failed is not None:
            # Nothing half-done stays behind: the row whose object never came is removed.
            with contextlib.suppress(errors.SluiceError, httpx.HTTPError):
                self.send(ops.delete_document(doc_id))
            raise errors.StorageRefused(failed)

    def _wait(self, waiting: Waiting, get: Callable[[], Any], timeout: float, poll: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            state = get()
            if waiting.check(state):
                return state
            if time.monotonic() + poll > deadline:
                raise waiting.timeout(timeout)
            self._sleep(poll)

    def wait(self, document: str | m.AcceptedOut | m.DocumentOut, *, timeout: float = 600,
             poll: float = 1.0) -> m.DocumentOut:
        """Follow a document to ``done``; raises ``Failed`` with the service's sentence when it ends in
        error, ``WaitTimeout`` (with the last state) when ``timeout`` seconds pass first."""
        doc_id = document if isinstance(document, str) else document.id
        found: m.DocumentOut = self._wait(document_waiting(doc_id), lambda: self.get_document(doc_id), timeout, poll)
        return found

    def wait_run(self, run: str | m.SyncRunOut, *, timeout: float = 600, poll: float = 1.0) -> m.SyncRunOut:
        """Follow a sync run to ``succeeded``; ``Failed`` carries its error, ``WaitTimeout`` its last state."""
        run_id = run if isinstance(run, str) else run.id
        found: m.SyncRunOut = self._wait(run_waiting(run_id), lambda: self.get_sync_run(run_id), timeout, poll)
        return found

    def wait_teardown(self, teardown: str | m.TeardownOut, *, timeout: float = 600,
                      poll: float = 1.0) -> m.TeardownOut:
        """Follow a teardown to ``done``; ``Failed`` names the step and the reason."""
        td_id = teardown if isinstance(teardown, str) else teardown.id
        found: m.TeardownOut = self._wait(teardown_waiting(td_id), lambda: self.get_teardown(td_id), timeout, poll)
        return found

    def iter_documents(self, kb_id: str, *, page: int = 200) -> Iterator[m.DocumentOut]:
        """Every document of a base, page by page."""
        offset: int | None = 0
        while offset is not None:
            listed = self.list_documents(kb_id, limit=page, offset=offset)
            yield from listed.documents
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
