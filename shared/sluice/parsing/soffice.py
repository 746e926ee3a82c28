"""Where LibreOffice's ``soffice`` is: on a laptop, in CI, and in a Lambda layer (the .doc row of SPEC §4).

Looked for in this order, the first found wins:

1. ``$SOFFICE_PATH``: the program itself, or a LibreOffice archive (``.tar.br``, ``.tar.gz``/``.tgz``,
   ``.tar.xz``/``.txz``, ``.tar``) that is unpacked once into the temporary directory. A path that
   names neither fails the document with a sentence naming the setting, never falls back silently.
2. ``soffice`` or ``libreoffice`` on ``PATH`` (Debian's package; a layer's ``/opt/bin``).
3. Where LibreOffice layers for Lambda put it under ``/opt``: an unpacked ``libreoffice*/program/soffice``
   or ``instdir/program/soffice``, else the archive ``lo.tar.br`` / ``lo.tar.gz`` / ``lo.tar.xz`` that
   the widely used layers ship (LibreOffice unpacked is larger than a layer may be), unpacked into
   ``/tmp`` on the first .doc of an execution environment (a few seconds) and reused afterwards.

The parse template attaches such a layer with the stack parameter ``LibreOfficeLayerArn``
(docs/operations/deploying.md); without one a .doc fails with a sentence naming that parameter.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from sluice.config import AssetSettings, read
from sluice.errors import ParseError

SOFFICE_PATH_ENV = AssetSettings.model_fields["soffice_path"].alias
# Where Lambda mounts a function's layers; tests point it elsewhere.
LAYER_ROOT = Path("/opt")
LAYER_ARCHIVES = ("lo.tar.br", "lo.tar.gz", "lo.tar.xz")
ARCHIVE_SUFFIXES = (".tar.br", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar")
_PROGRAMS = ("soffice", "soffice.bin")
_UNPACKED_PREFIX = "sluice-libreoffice-"

_MISCONFIGURED = (
    "The text of this .doc file is unavailable: reading legacy Word documents needs LibreOffice, and the "
    f"program or archive this deployment names in {SOFFICE_PATH_ENV} could not be used. "
    "Save it as .docx and upload it again."
)
_UNUSABLE = (
    "The text of this .doc file is unavailable: reading legacy Word documents needs LibreOffice, and the "
    "LibreOffice archive this deployment has could not be unpacked into a program. "
    "Save it as .docx and upload it again."
)

log = logging.getLogger(__name__)


def find_soffice() -> str | None:
    """The LibreOffice program to run, or None where there is none; raises ``ParseError`` when
    ``$SOFFICE_PATH`` names something that is not one."""
    configured = read(AssetSettings).soffice_path.strip()
    if configured:
        program = _program_from(Path(configured))
        if program is None:
            raise ParseError(_MISCONFIGURED)
        return program
    on_path = shutil.which("soffice") or shutil.which("libreoffice")
    if on_path:
        return on_path
    program = _program_in(LAYER_ROOT)
    if program is not None:
        return program
    for name in LAYER_ARCHIVES:
        archive = LAYER_ROOT / name
        if archive.is_file():
            program = _program_from(archive)
            if program is None:
                raise ParseError(_UNUSABLE)
            return program
    return None


def _program_from(path: Path) -> str | None:
    if path.is_dir():
        return _program_in(path)
    if path.name.endswith(ARCHIVE_SUFFIXES) and path.is_file():
        try:
            folder = unpacked(path)
        except Exception as exc:  # a truncated archive, a full /tmp, a Brotli stream that is not one
            log.warning("could not unpack LibreOffice from %s: %s", path, exc)
            raise ParseError(_UNUSABLE) from exc
        return _program_in(folder)
    if path.is_file() and os.access(path, os.X_OK):
        return str(path)
    return None


def _program_in(folder: Path) -> str | None:
    """``program/soffice`` of an installation at ``folder`` or up to two levels below it
    (``/opt/instdir/program``, ``/opt/libreoffice24.8/program``)."""
    for depth in ("", "*/", "*/*/"):
        for program in _PROGRAMS:
            for found in sorted(folder.glob(f"{depth}program/{program}")):
                if found.is_file() and os.access(found, os.X_OK):
                    return str(found)
    return None


def unpacked(archive: Path) -> Path:
    """The folder ``archive`` unpacks to under the temporary directory, unpacking it the first time.

    Named after the archive's path, size and time, so a new layer version unpacks anew. Unpacked
    beside its final name and renamed into place, so a process never sees half an installation;
    of two processes unpacking at once, one rename wins and the other's copy is removed.
    """
    stat = archive.stat()
    key = hashlib.sha256(f"{archive.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"{_UNPACKED_PREFIX}{key}"
    if target.is_dir():
        return target
    work = Path(tempfile.mkdtemp(prefix=f"{_UNPACKED_PREFIX}{key}.", dir=target.parent))
    try:
        with _decompressed(archive) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            # "tar": no absolute names, nothing outside the folder, no setuid bits; executables stay executable.
            tar.extractall(work, filter="tar")
        try:
            work.rename(target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


@contextlib.contextmanager
def _decompressed(archive: Path) -> Iterator[Any]:
    name = archive.name
    if name.endswith(".tar.br"):
        try:
            import brotli
        except ImportError as exc:  # the parse layer and the project both require it
            raise OSError("the brotli package is not installed") from exc
        with archive.open("rb") as raw:
            yield io.BufferedReader(_BrotliReader(raw, brotli.Decompressor()), buffer_size=1 << 20)
        return
    if name.endswith((".tar.gz", ".tgz")):
        import gzip

        with gzip.open(archive, "rb") as stream:
            yield stream
        return
    if name.endswith((".tar.xz", ".txz")):
        import lzma

        with lzma.open(archive, "rb") as stream:
            yield stream
        return
    with archive.open("rb") as stream:
        yield stream


class _BrotliReader(io.RawIOBase):
    """A Brotli stream read as a file: tarfile's streaming mode reads it front to back."""

    def __init__(self, raw: IO[bytes], decompressor: Any) -> None:
        self._raw = raw
        self._decompressor = decompressor
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while not self._pending:
            chunk = self._raw.read(1 << 20)
            if not chunk:
                return 0
            self._pending = memoryview(self._decompressor.process(chunk))
        size = min(len(view), len(self._pending))
        view[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size
