"""A web page as readable text: its main content as markdown, its links and its canonical address.

lxml (libxml2's HTML parser, BSD) reads the page as a browser would recover it; rules of Sluice's own
then keep what a reader came for and drop what every page of the site repeats:

* the title (``<title>``, else the first ``<h1>``) opens the text as ``# Title``;
* the content is ``<main>`` (or ``role=main``), else the page's one ``<article>``, else ``<body>``;
* inside it, headings become markdown headings (so ``chunking_strategy: markdown`` splits at them),
  lists ``-`` / ``1.`` items, tables ``|`` rows, ``<pre>`` a fenced block;
* left out: scripts, styles, forms and their controls, navigation (``<nav>``, ``role=navigation``),
  asides, iframes, and elements whose id or class names a cookie banner, a consent dialog, a menu,
  breadcrumbs, a sidebar, sharing buttons or ads; the page's own ``<header>`` and ``<footer>`` when
  the content is the whole body (an article's header keeps its title).

JavaScript is not executed: what a script would write into the page is not there. The text is what
the change signal hashes, so it holds nothing that changes on every request (no dates of the fetch,
no attributes, no link targets).

Why rules of our own over an extractor's heuristics (trafilatura, readability): those score blocks
by text density and drop a short page whole (a glossary entry, a one-paragraph policy), and their
output can change with a version; here every page keeps its text, and the same page always gives
the same text (the change signal depends on it). bench/web_crawl.py measures the rules against the
plain HTML reader (precision and recall of main-text words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lxml import etree
from lxml import html as lxml_html

DROP_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "form", "input", "button", "select",
                       "textarea", "nav", "aside", "iframe", "object", "embed", "canvas", "dialog", "menu"})
DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary", "dialog", "alertdialog",
                        "menu", "menubar"})
# id/class words (split at - _ and spaces) that name chrome rather than content.
DROP_WORDS = frozenset({"cookie", "cookies", "consent", "gdpr", "navbar", "nav", "navigation", "menu", "breadcrumb",
                        "breadcrumbs", "sidebar", "share", "sharing", "social", "advert", "advertisement", "ads",
                        "skip", "popup", "modal", "newsletter", "toc"})
BLOCKS = frozenset({"p", "div", "section", "article", "main", "header", "footer", "blockquote", "figure",
                    "figcaption", "address", "details", "summary", "dl", "dt", "dd", "body", "center", "hr"})
HEADINGS = {f"h{i}": i for i in range(1, 7)}
MAX_DEPTH = 120
DOCUMENT_EXTENSIONS = (".pdf", ".docx", ".doc", ".xlsx", ".xls", ".pptx", ".ppt", ".odt", ".ods", ".odp", ".rtf",
                       ".txt", ".md", ".csv", ".epub")
_WORDS = re.compile(r"[\s_\-]+")
_SPACE = re.compile(r"\s+")


@dataclass
class Page:
    """What one HTML page says: ``text`` (markdown), its links (absolute, as written) and ``canonical``."""

    title: str
    text: str
    links: list[str] = field(default_factory=list)
    canonical: str | None = None
    base: str | None = None


def parse(data: bytes, url: str) -> Page:
    """The page at ``url`` (its bytes, whatever their encoding: lxml reads the meta charset)."""
    from sluice.parsing.text import bom_encoding, decode_text, html_encoding

    parser = lxml_html.HTMLParser(remove_comments=True, remove_pis=True, no_network=True, recover=True)
    # Decoded as an uploaded .html file is (BOM, then a declared charset that decodes, then a confident
    # guess): a page whose meta charset lies is read in its real encoding, not as U+FFFD.
    declared = None if bom_encoding(data) else html_encoding(data)
    try:
        root = lxml_html.document_fromstring(decode_text(data, allow_legacy=True, declared=declared,
                                                         prefer_utf8=True), parser=parser)
    except (etree.ParserError, ValueError):
        try:
            root = lxml_html.document_fromstring(data, parser=parser)
        except (etree.ParserError, ValueError):
            return Page("", "")
    base = next((b.get("href") for b in root.iter("base") if b.get("href")), None)
    links = [a.get("href", "").strip() for a in root.iter("a", "area") if a.get("href")]
    canonical = next((link.get("href") for link in root.iter("link")
                      if "canonical" in (link.get("rel") or "").lower().split() and link.get("href")), None)
    title = _text(next(iter(root.iter("title")), None))
    content = _content(root)
    if not title:
        title = _text(next(content.iter("h1"), None)) if content is not None else ""
    lines: list[str] = [f"# {title}", ""] if title else []
    if content is not None:
        _drop_chrome(content, whole_body=content.tag == "body")
        out: list[str] = []
        _render(content, out, 0, 0)
        body = _tidy(out)
        if title and body.startswith(f"# {title}\n") or body == f"# {title}":
            body = body[len(f"# {title}"):].lstrip("\n")
        lines.append(body)
    return Page(title, "\n".join(lines).strip() + "\n" if any(lines) else "", links, canonical, base)


def _text(el: Any) -> str:
    return _SPACE.sub(" ", el.text_content()).strip() if el is not None else ""


def _content(root: Any) -> Any:
    main = next(iter(root.iter("main")), None)
    if main is None:
        main = next((el for el in root.iter() if isinstance(el.tag, str) and el.get("role") == "main"), None)
    if main is not None:
        return main
    articles = list(root.iter("article"))
    if len(articles) == 1:
        return articles[0]
    return next(iter(root.iter("body")), None)


def _chrome(el: Any) -> bool:
    if el.tag in DROP_TAGS or (el.get("role") or "").lower() in DROP_ROLES:
        return True
    if el.get("hidden") is not None or (el.get("aria-hidden") or "").lower() == "true":
        return True
    words = {w for w in _WORDS.split(f"{el.get('id') or ''} {el.get('class') or ''}".lower()) if w}
    return bool(words & DROP_WORDS)


def _drop_chrome(content: Any, *, whole_body: bool) -> None:
    doomed = [el for el in content.iter() if isinstance(el.tag, str) and el is not content
              and (_chrome(el) or (whole_body and el.tag in ("header", "footer")))]
    for el in doomed:
        parent = el.getparent()
        if parent is not None:
            tail = el.tail
            parent.remove(el)
            if tail and tail.strip():  # the text after a dropped element belongs to its parent
                prev = parent[-1] if len(parent) else None
                if prev is not None:
                    prev.tail = (prev.tail or "") + tail
                else:
                    parent.text = (parent.text or "") + tail


def _inline(el: Any) -> str:
    return _SPACE.sub(" ", el.text_content()).strip()


def _render(el: Any, out: list[str], depth: int, list_depth: int) -> None:
    """Append ``el``'s blocks to ``out`` ("" between blocks); inline runs are collected per block."""
    run: list[str] = [el.text or ""] if el.text else []

    def flush() -> None:
        text = _SPACE.sub(" ", "".join(run)).strip()
        run.clear()
        if text:
            out.extend([text, ""])

    for child in el:
        if not isinstance(child.tag, str):
            run.append(child.tail or "")
            continue
        tag = child.tag
        if tag in HEADINGS or tag in ("ul", "ol", "table", "pre", "br") or tag in BLOCKS or tag == "li":
            flush()
            if tag == "br":
                pass
            elif tag in HEADINGS:
                text = _inline(child)
                if text:
                    out.extend([f"{'#' * HEADINGS[tag]} {text}", ""])
            elif tag in ("ul", "ol"):
                _list(child, out, list_depth, depth)
                out.append("")
            elif tag == "table":
                _table(child, out, depth)
            elif tag == "pre":
                code = child.text_content().strip("\n")
                if code.strip():
                    out.extend(["```", code, "```", ""])
            elif depth < MAX_DEPTH:
                _render(child, out, depth + 1, list_depth)
            else:
                run.append(" " + child.text_content())
                flush()
        else:
            run.append(" " + _inline(child) + " " if tag not in ("span", "a", "b", "i", "em", "strong", "code")
                       else child.text_content())
        if child.tail:
            run.append(child.tail)
    flush()


def _list(el: Any, out: list[str], list_depth: int, depth: int) -> None:
    n = 0
    for li in el:
        if not isinstance(li.tag, str) or li.tag != "li":
            continue
        n += 1
        marker = f"{n}." if el.tag == "ol" else "-"
        nested = [c for c in li if isinstance(c.tag, str) and c.tag in ("ul", "ol")]
        for c in nested:
            li.remove(c)
        text = _inline(li)
        if text:
            out.append(f"{'  ' * list_depth}{marker} {text}")
        for c in nested:
            if depth < MAX_DEPTH:
                _list(c, out, list_depth + 1, depth + 1)


def _table(el: Any, out: list[str], depth: int = 0) -> None:
    """A data table as markdown rows; a layout table (one holding tables) as the blocks of its cells."""
    if any(True for _ in el.iterdescendants("table")):
        for tr in _rows(el):
            for cell in tr:
                if isinstance(cell.tag, str) and cell.tag in ("td", "th") and depth < MAX_DEPTH:
                    _render(cell, out, depth + 1, 0)
        return
    rows = []
    for tr in _rows(el):
        cells = [_inline(c).replace("|", "\\|") for c in tr if isinstance(c.tag, str) and c.tag in ("td", "th")]
        if any(cells):
            rows.append(cells)
    if not rows:
        return
    width = max(len(r) for r in rows)
    for i, r in enumerate(rows):
        out.append("| " + " | ".join(r + [""] * (width - len(r))) + " |")
        if i == 0:
            out.append("|" + " --- |" * width)
    out.append("")


def _rows(table: Any) -> list[Any]:
    """The table's own rows (not those of a table inside one of its cells)."""
    return [tr for tr in table.iter("tr") if next(tr.iterancestors("table"), None) is table]


def _tidy(lines: list[str]) -> str:
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def is_document_link(url: str) -> bool:
    """A link to a file the base reads as a document of its own (follow_documents)."""
    path = url.split("?", 1)[0].lower()
    return path.endswith(DOCUMENT_EXTENSIONS)
