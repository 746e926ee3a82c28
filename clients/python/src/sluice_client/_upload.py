"""What ``upload`` sends: a path or bytes, direct or presigned by size (shared by both clients)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from sluice_client import errors

Source = str | os.PathLike[str] | bytes


@dataclass(frozen=True)
class UploadPlan:
    filename: str
    size: int
    content: bytes | None  # in memory when sent direct (a 429's retry sends it again whole) or given as bytes
    path: Path | None

    def read(self) -> bytes:
        if self.content is not None:
            return self.content
        assert self.path is not None
        return self.path.read_bytes()


def plan(source: Source, filename: str | None) -> UploadPlan:
    if isinstance(source, bytes | bytearray | memoryview):
        if not filename:
            raise errors.SluiceError("upload(bytes) needs filename=: the service types a file by its name")
        data = bytes(source)
        return UploadPlan(filename, len(data), data, None)
    path = Path(source)
    if not path.is_file():
        raise errors.SluiceError(f"{path}: no such file")
    return UploadPlan(filename or path.name, path.stat().st_size, None, path)


def presigned_fallback(exc: errors.ApiError, size: int) -> bool:
    """A direct upload refused as larger than the service's own direct limit goes presigned instead."""
    return isinstance(exc, errors.FileTooLarge) and exc.limit_bytes is not None and size > exc.limit_bytes


def storage_failure(response: httpx.Response | None, exc: Exception | None = None) -> str | None:
    if exc is not None:
        return f"Storage did not take the file: {exc}"
    assert response is not None
    if response.status_code in (200, 201, 204):
        return None
    found = re.search(r"<Message>(.*?)</Message>", response.text, re.S)
    said = found.group(1) if found else response.text[:200]
    return f"Storage refused the file (HTTP {response.status_code}): {said}"


def metadata(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
