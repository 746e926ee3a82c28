"""A zip's central directory, read without building it whole.

``zipfile.ZipFile`` turns every directory record into an object before anyone can
count them, so a 50 MB upload holding a million tiny entries costs hundreds of
megabytes before the entry limit can refuse it. This reader walks the records
with ``struct`` and stops at the limit; it also finds one named entry (a
``[Content_Types].xml`` or ``mimetype``) and reads its first bytes for sniffing.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_EOCD64 = b"PK\x06\x06"
_CENTRAL = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"
_EOCD_SIZE = 22
_MAX_COMMENT = 0xFFFF


class ZipDirectoryError(ValueError):
    """The bytes carry no readable zip directory."""


@dataclass(frozen=True)
class ZipEntry:
    raw_name: bytes
    flags: int
    method: int
    compressed_size: int
    size: int
    local_offset: int


@dataclass(frozen=True)
class ZipDirectory:
    entries: list[ZipEntry]
    more: bool  # stopped at the limit with records left
    concat: int  # bytes prepended before the archive proper (self-extractors, split markers)


def read_zip_directory(data: bytes, max_entries: int) -> ZipDirectory:
    eocd_at = data.rfind(_EOCD, max(0, len(data) - _EOCD_SIZE - _MAX_COMMENT))
    if eocd_at < 0 or len(data) - eocd_at < _EOCD_SIZE:
        raise ZipDirectoryError("no end-of-central-directory record")
    (_, _, _, _, count, cd_size, cd_offset, _) = struct.unpack_from("<4s4H2LH", data, eocd_at)
    directory_end = eocd_at
    locator_at = eocd_at - 20
    if locator_at >= 0 and data[locator_at : locator_at + 4] == _EOCD64_LOCATOR:
        eocd64_at = locator_at - 56
        if eocd64_at < 0 or data[eocd64_at : eocd64_at + 4] != _EOCD64:
            raise ZipDirectoryError("zip64 end record missing")
        (count, cd_size, cd_offset) = struct.unpack_from("<QQQ", data, eocd64_at + 32)
        directory_end = eocd64_at
    cd_start = directory_end - cd_size
    concat = cd_start - cd_offset
    if cd_start < 0 or concat < 0:
        raise ZipDirectoryError("central directory outside the file")
    entries: list[ZipEntry] = []
    at = cd_start
    while at < directory_end:
        if len(entries) >= max_entries:
            return ZipDirectory(entries=entries, more=True, concat=concat)
        if data[at : at + 4] != _CENTRAL or at + 46 > len(data):
            raise ZipDirectoryError("bad central directory record")
        (flags, method) = struct.unpack_from("<HH", data, at + 8)
        (csize, usize, name_len, extra_len, comment_len) = struct.unpack_from("<LLHHH", data, at + 20)
        (local_offset,) = struct.unpack_from("<L", data, at + 42)
        name = data[at + 46 : at + 46 + name_len]
        extra = data[at + 46 + name_len : at + 46 + name_len + extra_len]
        usize, csize, local_offset = _zip64_values(extra, usize, csize, local_offset)
        entries.append(
            ZipEntry(
                raw_name=name,
                flags=flags,
                method=method,
                compressed_size=csize,
                size=usize,
                local_offset=local_offset,
            )
        )
        at += 46 + name_len + extra_len + comment_len
    return ZipDirectory(entries=entries, more=False, concat=concat)


def _zip64_values(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int, int]:
    at = 0
    while at + 4 <= len(extra):
        (tag, size) = struct.unpack_from("<HH", extra, at)
        if tag == 0x0001:
            body = extra[at + 4 : at + 4 + size]
            pos = 0
            values = []
            for current in (usize, csize, offset):
                if current == 0xFFFFFFFF and pos + 8 <= len(body):
                    (value,) = struct.unpack_from("<Q", body, pos)
                    pos += 8
                    values.append(value)
                else:
                    values.append(current)
            return values[0], values[1], values[2]
        at += 4 + size
    return usize, csize, offset


def entry_name(entry: ZipEntry) -> str:
    if entry.flags & 0x800:
        return entry.raw_name.decode("utf-8", "replace")
    return entry.raw_name.decode("cp437")


def find_entry(directory: ZipDirectory, name: str) -> ZipEntry | None:
    wanted = name.encode()
    for entry in directory.entries:
        if entry.raw_name == wanted:
            return entry
    return None


def read_entry_head(data: bytes, directory: ZipDirectory, entry: ZipEntry, max_bytes: int) -> bytes:
    """The first ``max_bytes`` of a stored or deflated entry (enough to sniff; never the whole)."""
    at = entry.local_offset + directory.concat
    if data[at : at + 4] != _LOCAL:
        raise ZipDirectoryError("bad local header")
    (name_len, extra_len) = struct.unpack_from("<HH", data, at + 26)
    start = at + 30 + name_len + extra_len
    raw = data[start : start + entry.compressed_size]
    if entry.flags & 0x1:
        raise ZipDirectoryError("entry is encrypted")
    if entry.method == 0:
        return raw[:max_bytes]
    if entry.method == 8:
        try:
            return zlib.decompressobj(-15).decompress(raw, max_bytes)
        except zlib.error as exc:
            raise ZipDirectoryError("entry does not inflate") from exc
    raise ZipDirectoryError(f"compression method {entry.method}")
