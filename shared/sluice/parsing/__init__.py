"""Parsing: type sniffing, budgeted text extraction per format, archive checks, isolation.

Owns R-UP-6 (type by content and name), R-PARSE-1..5 (budgets, NUL removal,
scanned/sparse refusals, preview, crash/timeout/memory isolation) and
R-ARC-1..3 (archive and Office-container safety). Every refusal is a
``DocumentRefused`` subclass whose message is a sentence for the user.
"""

from sluice.parsing.archive_limits import is_safe_member_path
from sluice.parsing.archives import check_archive, iter_archive_members
from sluice.parsing.budget import ParseBudget
from sluice.parsing.document import ArchiveMember, PageText, ParsedDocument
from sluice.parsing.extract import extract
from sluice.parsing.isolation import extract_isolated, render_isolated
from sluice.parsing.kinds import SUPPORTED_EXTENSIONS, FileKind, kind_for
from sluice.parsing.render import RENDERABLE, RenderedPage, RenderedPages
from sluice.parsing.sniff import sniff
from sluice.parsing.sparse import too_sparse

__all__ = [
    "SUPPORTED_EXTENSIONS",
    "ArchiveMember",
    "FileKind",
    "RENDERABLE",
    "PageText",
    "ParseBudget",
    "ParsedDocument",
    "RenderedPage",
    "RenderedPages",
    "check_archive",
    "extract",
    "extract_isolated",
    "is_safe_member_path",
    "iter_archive_members",
    "kind_for",
    "render_isolated",
    "sniff",
    "too_sparse",
]
