"""TIFF and PDF pages rendered to PNG in the isolated child: capped, sized, and counted when left out."""

from __future__ import annotations

import pytest

from sluice.errors import ParseError
from sluice.parsing import render_isolated, sniff
from tests.chat_samples import tiff_bytes
from tests.unit.parsing.parsing_samples import budget, pdf_bytes


def test_the_cap_and_the_size_budget_leave_pages_out_and_count_them():
    data = tiff_bytes(6, size=(2400, 1600))
    kind = sniff(data, "scan.tif")
    capped = render_isolated(data, kind, budget(), max_pages=4, max_side=1600, max_bytes=10_000_000)
    assert capped.page_count == 6 and [p.number for p in capped.pages] == [1, 2, 3, 4]
    assert capped.left_out_by_cap == 2 and capped.left_out_by_size == 0
    assert all(max(p.width, p.height) <= 1600 for p in capped.pages)
    two_pages = len(capped.pages[0].png) + len(capped.pages[1].png)
    squeezed = render_isolated(data, kind, budget(), max_pages=4, max_side=1600, max_bytes=two_pages)
    assert len(squeezed.pages) == 2 and squeezed.left_out_by_size == 2 and squeezed.left_out_by_cap == 2


def test_pdf_pages_render_and_other_kinds_are_refused():
    data = pdf_bytes(["first", "second", "third"])
    rendered = render_isolated(data, sniff(data, "a.pdf"), budget(), max_pages=5, max_side=800, max_bytes=10**7)
    assert [p.number for p in rendered.pages] == [1, 2, 3] and rendered.left_out_by_cap == 0
    assert max(rendered.pages[0].width, rendered.pages[0].height) <= 800
    text = b"plain"
    with pytest.raises(ParseError):
        render_isolated(text, sniff(text, "a.txt"), budget(), max_pages=1, max_side=100, max_bytes=10**6)


def test_a_damaged_tiff_is_a_parse_error():
    data = b"II*\x00" + b"\x00" * 64
    with pytest.raises(ParseError):
        render_isolated(data, sniff(data, "bad.tif"), budget(), max_pages=1, max_side=100, max_bytes=10**6)
