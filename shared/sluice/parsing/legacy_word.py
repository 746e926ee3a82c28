"""Legacy Word documents (.doc) through LibreOffice, when it is installed (SPEC §4, doc row).

No pure-Python reader gets text out of the Word 97 binary format reliably, so
.doc goes through ``soffice --headless --convert-to txt``. Without LibreOffice
the document fails with a sentence saying so — except a password-protected
file, which the Word header itself declares, and which would fail anyway.
"""

from __future__ import annotations

import io
import os
import shutil
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
    with tempfile.TemporaryDirectory(prefix="sluice-doc-") as work:
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
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "HOME": work},
        )
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
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
