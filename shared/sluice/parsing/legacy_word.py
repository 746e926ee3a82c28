"""Legacy Word documents (.doc) through LibreOffice, when it is installed (SPEC §4, doc row).

No pure-Python reader gets text out of the Word 97 binary format reliably, so
.doc goes through ``soffice --headless --convert-to txt``. Without LibreOffice
the document fails with a sentence saying so — except a password-protected
file, which the Word header itself declares, and which would fail anyway.

A conversion never hangs the parse child: each has its own profile folder (two
conversions at once never meet on a profile lock, nor on a running office
instance they would otherwise hand the file to), and past its time limit the
launcher and every process it started are killed — ``soffice.bin`` outlives a
killed launcher (``oosplash``) otherwise.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import struct
import subprocess
import tempfile
from pathlib import Path

from sluice.errors import EncryptedDocumentError, ParseError, ParseTimeoutError
from sluice.parsing.budget import ParseBudget, TextBudget
from sluice.parsing.document import ParsedDocument

_UNAVAILABLE = (
    "The text of this .doc file is unavailable: reading legacy Word documents needs LibreOffice, "
    "which is not installed on this server. Save it as .docx and upload it again."
)
_F_ENCRYPTED = 0x0100  # FibBase.fEncrypted


def word_binary_is_encrypted(data: bytes) -> bool:
    import olefile

    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            fib = ole.openstream("WordDocument").read(12)
    except Exception:
        return False
    if len(fib) < 12:
        return False
    (flags,) = struct.unpack_from("<H", fib, 10)
    return bool(flags & _F_ENCRYPTED)


def soffice_path() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def read_doc(data: bytes, budget: ParseBudget) -> ParsedDocument:
    if word_binary_is_encrypted(data):
        raise EncryptedDocumentError(
            "This Word document is password-protected. Remove the password and upload it again."
        )
    soffice = soffice_path()
    if soffice is None:
        raise ParseError(_UNAVAILABLE)
    # A killed office process may still hold files in the folder as it is removed.
    with tempfile.TemporaryDirectory(prefix="sluice-doc-", ignore_cleanup_errors=True) as work:
        source = Path(work) / "document.doc"
        source.write_bytes(data)
        profile = Path(work) / "profile"
        command = [
            soffice,
            f"-env:UserInstallation={profile.as_uri()}",  # a private profile: runs never share a lock
            "--headless",
            "--norestore",
            "--convert-to",
            "txt:Text (encoded):UTF8",
            "--outdir",
            work,
            str(source),
        ]
        # Leave a little of the parse budget for reading the result.
        timeout = max(budget.timeout_seconds - 5, 5)
        # In the parse child's own process group, never one of its own: whoever kills the child's
        # group (its parent, at the parse timeout) kills LibreOffice with it.
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "HOME": work},
        )
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(process.pid)
            process.wait()
            raise ParseTimeoutError(
                f"Converting this .doc file took longer than {timeout} seconds, the limit for one file."
            ) from None
        result = Path(work) / "document.txt"
        if process.returncode != 0 or not result.exists():
            raise ParseError("This .doc file could not be read: LibreOffice could not convert it.")
        text = TextBudget(budget.max_chars)
        text.add(result.read_bytes().decode("utf-8-sig", "replace"))
        return text.finish()


def kill_tree(root: int) -> None:
    """SIGKILL ``root`` and every process it started, however deep.

    The tree is frozen first (SIGSTOP, until a scan finds nothing new), so no
    process can start another or be orphaned away from the tree between the
    scan and the kill. Without ``/proc`` (macOS) only ``root`` is killed; the
    parse child's process group, which its parent kills, still holds the rest.
    """
    seen: set[int] = set()
    while True:
        tree = {root} | _descendants(root)
        fresh = tree - seen
        if not fresh:
            break
        for pid in fresh:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
        seen |= fresh
    for pid in seen:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return set()
    for name in entries:
        try:
            stat = Path("/proc", name, "stat").read_text()
        except OSError:
            continue  # exited meanwhile
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
        fields = stat.rpartition(")")[2].split()
        if len(fields) >= 2:
            children.setdefault(int(fields[1]), []).append(int(name))
    found: set[int] = set()
    pending = [root]
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found
