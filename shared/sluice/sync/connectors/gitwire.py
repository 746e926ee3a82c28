"""Git's smart-HTTP protocol, version 2, over the guarded HTTP client: the three requests a sync makes.

* ``ls_refs``: one POST of ``command=ls-refs`` answers what a ref points at. It is the whole cost
  of a run whose ref did not move (no ``info/refs`` discovery first: a version-2 request is
  stateless, so the capability advertisement is asked only when there is something to fetch).
* ``fetch_trees``: the commit and its trees, no file contents (``deepen 1`` with ``filter
  blob:none``, the partial-clone request GitHub, GitLab, Bitbucket and git's own ``http-backend``
  with ``uploadpack.allowFilter`` answer). A server without the filter is refused in words: a
  sync never clones a repository's every file to read its tree.
* ``fetch_blob``: one file's bytes by blob id (version 2 lets a client want any object), streamed
  and inflated as they arrive, at most the caller's ceiling: the pack's object header gives the
  size before any content, so a file too large is refused without its bytes.

Every request goes through :func:`sluice.sync.outbound.guarded_client` (the caller's client), so
each connection is checked against the operator's policy where it is made. dulwich parses the
trees' pack; the framing here is pkt-lines and side-band-64k, a few dozen lines of the protocol.
"""

from __future__ import annotations

import hashlib
import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, NoReturn

import httpx

from sluice.retry import Failure, RetryPolicy
from sluice.sync.outbound import send_retried

FLUSH, DELIM = b"0000", b"0001"
# A tree listing's pack (commit and trees, no blobs): past this the repository is not a documentation
# source a run reads whole; the run says so.
MAX_TREE_PACK = 128 * 1024 * 1024
BLOB, TREE, COMMIT = 3, 2, 1


class GitProtocolError(Exception):
    """The server answered something that is not git's protocol, or refused; ``code`` names it."""

    def __init__(self, message: str, code: str = "GitProtocolError") -> None:
        super().__init__(message)
        self.code = code


def pkt(line: str | bytes) -> bytes:
    data = line.encode() if isinstance(line, str) else line
    return f"{len(data) + 4:04x}".encode() + data


@dataclass
class Transfer:
    """What this connection sent and received: requests and response bytes (the bench's figures)."""

    requests: int = 0
    received: int = 0
    kinds: list[str] = field(default_factory=list)


class _Pkts:
    """pkt-lines read from a streamed response, counting the bytes as they arrive."""

    def __init__(self, chunks: Iterator[bytes], transfer: Transfer) -> None:
        self._chunks = chunks
        self._buf = bytearray()
        self._transfer = transfer

    def _need(self, n: int) -> bool:
        while len(self._buf) < n:
            chunk = next(self._chunks, None)
            if chunk is None:
                return False
            self._transfer.received += len(chunk)
            self._buf += chunk
        return True

    def read(self) -> bytes | None:
        """The next packet's payload; ``b""`` for a flush or delimiter, None at the end of the stream."""
        if not self._need(4):
            if self._buf:
                raise GitProtocolError("a truncated pkt-line", "TruncatedResponse")
            return None
        try:
            size = int(bytes(self._buf[:4]), 16)
        except ValueError:
            raise GitProtocolError("not a pkt-line (the server does not speak git protocol version 2)",
                                   "NotGitProtocol") from None
        if size < 4:
            del self._buf[:4]
            return b""
        if not self._need(size):
            raise GitProtocolError("a truncated pkt-line", "TruncatedResponse")
        payload = bytes(self._buf[4:size])
        del self._buf[:size]
        if payload.startswith(b"ERR "):
            raise GitProtocolError(payload[4:].decode(errors="replace").strip(), "ServerError")
        return payload


# Throttling and a server's bad moment, through the one retry loop (sluice.retry); a run's request
# gives up within a minute, well inside the sync function's time.
POLICY = RetryPolicy(max_attempts=4, base_delay=1.0, max_delay=15.0, total_seconds=60.0)


class GitRemote:
    """One repository's upload-pack service at ``url`` (``https://host/owner/repo.git``)."""

    def __init__(self, url: str, client: httpx.Client, auth: tuple[str, str] | None = None,
                 policy: RetryPolicy = POLICY) -> None:
        self.url = url.rstrip("/")
        self._client = client
        self._auth = httpx.BasicAuth(*auth) if auth else None
        self._policy = policy
        self.transfer = Transfer()

    def _send(self, kind: str, request: httpx.Request) -> httpx.Response:
        """``request`` sent (its body streamed) until it is answered 200, or refused in words."""
        def send() -> httpx.Response:
            self.transfer.requests += 1
            self.transfer.kinds.append(kind)
            return self._client.send(request, auth=self._auth, stream=True) if self._auth else \
                self._client.send(request, stream=True)

        def give_up(failure: Failure, attempts: int, detail: str) -> NoReturn:
            raise GitProtocolError(f"the server kept failing ({detail}; {attempts} tries)",
                                   str(failure.kind)) from failure.cause

        resp = send_retried(self._policy, send, give_up)
        self._check(resp)
        return resp

    def _post(self, kind: str, body: bytes) -> httpx.Response:
        return self._send(kind, self._client.build_request(
            "POST", f"{self.url}/git-upload-pack", content=body,
            headers={"Content-Type": "application/x-git-upload-pack-request",
                     "Accept": "application/x-git-upload-pack-result", "Git-Protocol": "version=2"}))

    def _check(self, resp: httpx.Response) -> None:
        if resp.status_code == 200:
            return
        resp.close()
        if resp.status_code in (401, 403):
            raise GitProtocolError("the repository refused the credential", f"HTTP{resp.status_code}")
        if resp.status_code == 404:
            raise GitProtocolError("no repository at that URL (or not visible to the credential)", "HTTP404")
        if 300 <= resp.status_code < 400:
            raise GitProtocolError("the server answered with a redirect; name the URL it redirects to",
                                   f"HTTP{resp.status_code}")
        raise GitProtocolError(f"the server answered HTTP {resp.status_code}", f"HTTP{resp.status_code}")

    def ls_refs(self, prefixes: list[str]) -> dict[str, tuple[str, str | None]]:
        """ref name -> (object id, peeled commit id of an annotated tag, or None): one round trip."""
        body = pkt("command=ls-refs\n") + DELIM + pkt("symrefs\n") + pkt("peel\n")
        body += b"".join(pkt(f"ref-prefix {p}\n") for p in prefixes) + FLUSH
        resp = self._post("ls-refs", body)
        refs: dict[str, tuple[str, str | None]] = {}
        try:
            pkts = _Pkts(resp.iter_bytes(), self.transfer)
            while (line := pkts.read()) is not None:
                if line == b"":
                    break
                parts = line.decode(errors="replace").rstrip("\n").split(" ")
                if len(parts) < 2 or not _is_oid(parts[0]):
                    raise GitProtocolError("an ls-refs line that is not '<id> <ref>'", "NotGitProtocol")
                peeled = next((p.removeprefix("peeled:") for p in parts[2:] if p.startswith("peeled:")), None)
                refs[parts[1]] = (parts[0], peeled)
        finally:
            resp.close()
        return refs

    def capabilities(self) -> set[str]:
        """The version-2 capability advertisement (``fetch=shallow filter`` is split into its words)."""
        resp = self._send("capabilities", self._client.build_request(
            "GET", f"{self.url}/info/refs", params={"service": "git-upload-pack"},
            headers={"Git-Protocol": "version=2"}))
        try:
            content = resp.read()
        finally:
            resp.close()
        self.transfer.received += len(content)
        pkts = _Pkts(iter([content]), Transfer())
        caps: set[str] = set()
        version2 = False
        while (line := pkts.read()) is not None:
            text = line.decode(errors="replace").strip()
            if text == "version 2":
                version2 = True
            elif version2 and text:
                name, _, value = text.partition("=")
                caps.add(name)
                caps.update(f"{name}.{v}" for v in value.split())
        if not version2:
            raise GitProtocolError("the server does not speak git protocol version 2", "NoProtocolV2")
        return caps

    def _fetch(self, kind: str, args: list[str]) -> tuple[httpx.Response, Iterator[bytes]]:
        """A fetch request; answers the response and an iterator over its pack's bytes (band 1)."""
        body = pkt("command=fetch\n") + DELIM + b"".join(pkt(a + "\n") for a in args) + FLUSH
        resp = self._post(kind, body)
        pkts = _Pkts(resp.iter_bytes(), self.transfer)

        def pack_bytes() -> Iterator[bytes]:
            in_pack = False
            while (line := pkts.read()) is not None:
                if not in_pack:
                    in_pack = line == b"packfile\n"
                    continue
                if line == b"":
                    return
                band, data = line[0], line[1:]
                if band == 1:
                    yield data
                elif band == 3:
                    raise GitProtocolError(data.decode(errors="replace").strip(), "ServerError")
            raise GitProtocolError("the pack ended early", "TruncatedResponse")

        return resp, pack_bytes()

    def fetch_trees(self, commit: str) -> dict[str, tuple[int, bytes]]:
        """The commit and every tree it reaches, no blob: object id -> (type number, raw bytes)."""
        from dulwich.object_store import MemoryObjectStore

        caps = self.capabilities()
        if "fetch.filter" not in caps:
            raise GitProtocolError("the server does not offer partial clone (filter): Sluice lists a repository "
                                   "without downloading its files, which needs it", "NoPartialClone")
        resp, stream = self._fetch("fetch-trees", [f"want {commit}", "deepen 1", "filter blob:none",
                                                   "no-progress", "ofs-delta", "done"])
        buf = io.BytesIO()
        try:
            for chunk in stream:
                buf.write(chunk)
                if buf.tell() > MAX_TREE_PACK:
                    raise GitProtocolError("the repository's trees alone are larger than a run reads",
                                           "TreesTooLarge")
        finally:
            resp.close()
        store = MemoryObjectStore()
        incoming, commit_pack, abort = store.add_pack()
        try:
            incoming.write(buf.getvalue())
            commit_pack()  # checks the pack's checksum, then resolves its deltas
        except BaseException:
            abort()
            raise
        out: dict[str, tuple[int, bytes]] = {}
        for oid in store:
            obj = store[oid]
            out[oid.decode()] = (obj.type_num, obj.as_raw_string())
        return out

    def fetch_blob(self, blob_id: str, out: BinaryIO, max_bytes: int) -> int:
        """Write blob ``blob_id`` to ``out``, at most ``max_bytes`` of it; answers its full size.

        When the size the pack announces is over ``max_bytes``, nothing is inflated and the stream
        is closed: the caller is told the size and nothing is written.
        """
        resp, stream = self._fetch("fetch-blob", [f"want {blob_id}", "no-progress", "done"])
        try:
            reader = _StreamReader(stream)
            header = reader.take(12)
            if header[:4] != b"PACK" or int.from_bytes(header[8:12], "big") < 1:
                raise GitProtocolError("the server's answer is not a pack holding the file", "NotGitProtocol")
            kind, size = _object_header(reader)
            if kind != BLOB:
                raise GitProtocolError("the server sent something other than the file's blob", "NotABlob")
            if size > max_bytes:
                return size
            inflate = zlib.decompressobj()
            digest = hashlib.sha1(b"blob %d\x00" % size, usedforsecurity=False)
            written = 0
            while written < size:
                data = inflate.decompress(inflate.unconsumed_tail or reader.some(), size - written + 1)
                if not data and inflate.eof:
                    break
                written += len(data)
                if written > size:
                    raise GitProtocolError("the blob is longer than its header says", "CorruptPack")
                digest.update(data)
                out.write(data)
            if written != size or digest.hexdigest() != blob_id:
                raise GitProtocolError("the bytes received are not the blob that was asked for", "CorruptPack")
            return size
        finally:
            resp.close()


class _StreamReader:
    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""

    def take(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = next(self._chunks, None)
            if chunk is None:
                raise GitProtocolError("the pack ended early", "TruncatedResponse")
            self._buf += chunk
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def some(self) -> bytes:
        if self._buf:
            out, self._buf = self._buf, b""
            return out
        chunk = next(self._chunks, None)
        if chunk is None:
            raise GitProtocolError("the pack ended early", "TruncatedResponse")
        return chunk


def _object_header(reader: _StreamReader) -> tuple[int, int]:
    byte = reader.take(1)[0]
    kind, size, shift = (byte >> 4) & 7, byte & 15, 4
    while byte & 0x80:
        byte = reader.take(1)[0]
        size |= (byte & 0x7F) << shift
        shift += 7
        if shift > 70:
            raise GitProtocolError("a pack object header that does not end", "CorruptPack")
    return kind, size


def _is_oid(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)
