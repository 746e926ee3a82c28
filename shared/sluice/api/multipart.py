"""multipart/form-data bodies, counted as they are read (R-UP-1: the bytes received decide)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from python_multipart.multipart import MultipartParser, parse_options_header

from sluice.errors import FileTooLargeError, ValidationError


@dataclass
class FormFile:
    filename: str
    content_type: str
    data: bytes


@dataclass
class Form:
    fields: dict[str, str] = field(default_factory=dict)
    files: dict[str, FormFile] = field(default_factory=dict)


def parse_form(content_type: str | None, body: bytes, *, max_file_bytes: int, too_large: str) -> Form:
    ctype, params = parse_options_header(content_type or "")
    if ctype != b"multipart/form-data" or b"boundary" not in params:
        raise ValidationError("Send the file as multipart/form-data",
                              fields={"file": "Expected a multipart/form-data body with a file part."})
    form = Form()
    headers: dict[bytes, bytes] = {}
    parts: list[bytes] = []
    state: dict[str, bytes] = {}

    def on_part_begin() -> None:
        headers.clear()
        parts.clear()
        state["size"] = b"0"

    def on_header_field(data: bytes, start: int, end: int) -> None:
        state["hf"] = state.get("hf", b"") + data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        state["hv"] = state.get("hv", b"") + data[start:end]

    def on_header_end() -> None:
        headers[state.pop("hf", b"").lower()] = state.pop("hv", b"")

    def on_part_data(data: bytes, start: int, end: int) -> None:
        parts.append(data[start:end])
        size = int(state["size"]) + (end - start)
        if size > max_file_bytes:
            raise FileTooLargeError(too_large, details={"limit_bytes": max_file_bytes})
        state["size"] = str(size).encode()

    def on_part_end() -> None:
        _, disp = parse_options_header(headers.get(b"content-disposition", b""))
        name = disp.get(b"name", b"").decode("utf-8", "replace")
        payload = b"".join(parts)
        if b"filename" in disp:
            form.files[name] = FormFile(
                filename=disp[b"filename"].decode("utf-8", "replace"),
                content_type=headers.get(b"content-type", b"application/octet-stream").decode("latin-1"),
                data=payload,
            )
        else:
            form.fields[name] = payload.decode("utf-8", "replace")

    parser = MultipartParser(
        params[b"boundary"],
        callbacks={
            "on_part_begin": on_part_begin,
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
        },
    )
    try:
        parser.write(body)
        parser.finalize()
    except (FileTooLargeError, ValidationError):
        raise
    except Exception:
        raise ValidationError("The multipart body could not be read",
                              fields={"file": "Malformed multipart/form-data body."}) from None
    return form


def form_fields(raw: dict[str, str]) -> dict[str, Any]:
    """Non-file form fields as a body: empty values dropped, ``ingestion`` read as JSON."""
    from sluice.api.http import check_json_values

    out: dict[str, Any] = {k: v for k, v in raw.items() if v != ""}
    if "ingestion" in out:
        try:
            out["ingestion"] = json.loads(out["ingestion"])
        except (ValueError, RecursionError):
            raise ValidationError("ingestion must be a JSON object",
                                  fields={"ingestion": "Not valid JSON."}) from None
    check_json_values(out)
    return out
