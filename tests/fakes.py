"""Fakes for what Sluice calls out to: embedding providers and the presigning store. Never a
mocked database: the tests run against the real embedded PostgreSQL.

``FakeOpenAI`` is a real server on loopback speaking the OpenAI-compatible
embeddings route; it records every request (headers included), so a test can
prove what a worker sent and where.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import numpy as np

from sluice.embedding import EmbeddingSpec

S = TypeVar("S", bound=ThreadingHTTPServer)
DIM = 384


def vector_for(text: str, dim: int) -> list[float]:
    """A deterministic vector per text, so a test can tell which input a vector belongs to."""
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    return [float(seed % 1000)] + [float(i) / dim for i in range(1, dim)]


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # None: answer the embeddings for the request
    headers: dict[str, str] = field(default_factory=dict)
    sleep: float = 0.0


class FakeOpenAI(ThreadingHTTPServer):
    """The embeddings route: scripted replies first, then honest answers (optionally out of order)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.reverse_order = False
        self.width: int | None = None  # answer this width instead of the one asked for
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _JsonHandler(BaseHTTPRequestHandler):
    """A fake server's handler: HTTP/1.1 keep-alive, JSON answers, no log lines."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no delayed-ACK wait between the headers and the body

    def answer(self, reply: Reply, payload: Any) -> None:
        raw = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting, which is what a timeout test wants

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Handler(_JsonHandler):
    server: FakeOpenAI

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            reply = self.server.script.pop(0) if self.server.script else Reply()
        time.sleep(reply.sleep)
        if reply.body is None and reply.status == 200:
            dim = self.server.width or body.get("dimensions") or 768
            data = [
                {"object": "embedding", "index": i, "embedding": vector_for(text, dim)}
                for i, text in enumerate(body["input"])
            ]
            if self.server.reverse_order:
                data.reverse()
            payload: Any = {"object": "list", "data": data, "model": body["model"]}
        else:
            payload = reply.body
        self.answer(reply, payload)


@contextmanager
def serving(server: S) -> Iterator[S]:
    """Serve ``server`` on a thread until the block ends."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


class FakeEmbedder:
    """Deterministic unit vectors from the text; ``before_batch`` lets a test fail or block a batch."""

    max_input_tokens = 256

    def __init__(self) -> None:
        self.spec = None
        self.calls = 0
        self.before_batch: Callable[[int], None] | None = None

    def _vector(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.before_batch is not None:
            self.before_batch(self.calls)
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


class FixedEmbedder:
    """Answers one query vector whatever the text: the tests choose geometry, not language."""

    def __init__(self, vector: Sequence[float]) -> None:
        self.vector = list(vector)

    def embed_query(self, text: str) -> list[float]:
        return self.vector


def embedder_returning(vector: Sequence[float]):
    embedder = FixedEmbedder(vector)

    def embedder_for(spec: EmbeddingSpec) -> FixedEmbedder:
        return embedder

    return embedder_for


class FakeStore:
    """Answers a presigned POST without S3: these tests are about the rows and the counts."""

    def presigned_post(self, key: str, *, max_bytes: int, expires_in: int, metadata: dict[str, str]) -> dict:
        return {"url": "http://store.invalid/", "fields": {"key": key}, "expires_in": expires_in}


class FakeChatServer(ThreadingHTTPServer):
    """An OpenAI-compatible ``POST /v1/chat/completions`` on loopback that counts its calls by kind.

    A call is told apart by what its system instruction asks for, as a reader of the prompt would:
    summarising one part of a document (a map call), combining part summaries (a reduce call), or
    writing the overview of the whole document (the final reduce). ``script`` replies come first;
    ``hold`` blocks every call until it is set (a test stops a worker mid-summary with it).
    """

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ChatHandler)
        self.script: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.calls: dict[str, int] = {"map": 0, "reduce": 0, "final": 0}
        self.hold = threading.Event()
        self.hold.set()
        self.arrived = 0  # calls received, held or not
        self.lock = threading.Lock()
        # Image description (R-PARSE-6): a vision call's answer by the sent image's size (PNG or JPEG
        # header), a status to answer instead for some sizes, and the sizes received, in order.
        self.descriptions: dict[tuple[int, int], str] = {}
        self.fail_sizes: dict[tuple[int, int], int] = {}
        self.image_sizes: list[tuple[int, int]] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    @staticmethod
    def kind_of(system: str) -> str:
        lowered = system.lower()
        if "one part of a document" in lowered:
            return "map"
        if "overview of a whole document" in lowered:
            return "final"
        if "combine summaries" in lowered:
            return "reduce"
        if "describe images" in lowered:
            return "describe"
        return "other"


class _ChatHandler(_JsonHandler):
    server: FakeChatServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.arrived += 1
        self.server.hold.wait()
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        user = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
        size: tuple[int, int] | None = None
        if isinstance(user, list):  # a vision call: text parts and image parts
            urls = [part["image_url"]["url"] for part in user if part.get("type") == "image_url"]
            size = image_size(base64.b64decode(urls[0].split(",", 1)[1])) if urls else None
            user = " ".join(part.get("text", "") for part in user if part.get("type") == "text")
        kind = FakeChatServer.kind_of(system)
        with self.server.lock:
            self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body,
                                         "kind": kind})
            reply = self.server.script.pop(0) if self.server.script else Reply()
            if size is not None:
                self.server.image_sizes.append(size)
                if reply.status == 200 and reply.body is None and size in self.server.fail_sizes:
                    reply = Reply(status=self.server.fail_sizes[size], headers={"Retry-After": "0"})
            if reply.status == 200 and reply.body is None:
                self.server.calls[kind] = self.server.calls.get(kind, 0) + 1
                number = self.server.calls[kind]
        time.sleep(reply.sleep)
        if reply.status == 200 and reply.body is None:
            words = " ".join(re.split(r"<<<(?:BEGIN UNTRUSTED DATA [0-9a-f]+>>>)?", user, maxsplit=1)[-1].split()[:12])
            content = f"{kind} summary {number}: {words}"
            if kind == "describe" and size is not None:
                content = self.server.descriptions.get(size, f"An image of {size[0]} by {size[1]} pixels.")
            payload: Any = {"id": "chatcmpl-fake", "object": "chat.completion", "model": body["model"],
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": content}}]}
        else:
            payload = reply.body if reply.body is not None else {"error": {"message": "scripted failure"}}
        self.answer(reply, payload)


def image_size(data: bytes) -> tuple[int, int] | None:
    """A PNG's or a JPEG's width and height, from its header (what a vision call sent)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    at = 2
    while data.startswith(b"\xff\xd8") and at + 9 <= len(data):
        marker, length = data[at + 1], struct.unpack(">H", data[at + 2:at + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return int(width), int(height)
        at += 2 + length
    return None
