"""Plain text, Markdown, CSV, JSON, XML and HTML (SPEC §4, text row).

Decoding, decided once for all text kinds:

* A byte-order mark wins: UTF-8, UTF-16 (LE/BE) and UTF-32 (LE/BE) files are decoded
  by their BOM. Windows writes "Unicode" text as UTF-16 with a BOM, and a BOM cannot
  be mistaken for anything else, so refusing those files would only punish users.
  UTF-16 and UTF-32 without a BOM (what some exporters write) are told by their NUL
  bytes: one lane of every code unit zero, the other never.
* Otherwise the bytes must be UTF-8 — except plain text, Markdown, CSV and HTML, where a
  file in a legacy single-byte or East Asian encoding (Windows-1252, KOI8, Shift-JIS…)
  is recognised by ``charset_normalizer`` and decoded when the guess is confident.
  Those files are common exports and their users cannot tell what encoding they are in.
* JSON is UTF-8 by definition (RFC 8259 §8.1) and must parse; invalid JSON is refused.
* XML is decoded by its BOM or its declared ``encoding``, then parsed with expat with
  every entity that expands refused (unparsed NDATA ones expand nothing) and nothing
  external ever loaded.
* Bytes that fit none of these are refused with a sentence; they are never indexed as
  replacement characters.
"""

from __future__ import annotations

import codecs
import json
import re
from html.parser import HTMLParser
from xml.parsers import expat

from sluice.errors import ParseError
from sluice.parsing.budget import ParseBudget, TextBudget
from sluice.parsing.document import ParsedDocument

_BOMS = [
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
]

_UNDECODABLE = (
    "This file is not UTF-8 text and its encoding could not be recognised. Save it as UTF-8 and upload it again."
)


def bom_encoding(data: bytes) -> tuple[str, int] | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding, len(bom)
    return None


def bomless_unicode(data: bytes) -> str | None:
    """UTF-32 or UTF-16 (LE or BE) written without a byte-order mark, told by where the NULs fall: a
    text's characters share a few high bytes (0x00 for ASCII and Latin-1, 0x03 Greek, 0x04 Cyrillic), so
    the high lane of its code units is often zero and the low lane almost never is. Binary data has NULs
    in every lane alike. None for anything else, or when the bytes do not decode."""
    sample = data[:8192]
    sample = sample[: len(sample) - len(sample) % 4]
    if len(sample) < 8:
        return None
    quads = len(sample) // 4
    lane = [sample[i::4].count(0) / quads for i in range(4)]
    if min(lane[2], lane[3]) > 0.9 and lane[1] > 0.3 and lane[0] < 0.02:
        found = "utf-32-le"
    elif min(lane[0], lane[1]) > 0.9 and lane[2] > 0.3 and lane[3] < 0.02:
        found = "utf-32-be"
    elif min(lane[1], lane[3]) > 0.3 and max(lane[0], lane[2]) < 0.02:
        found = "utf-16-le"
    elif min(lane[0], lane[2]) > 0.3 and max(lane[1], lane[3]) < 0.02:
        found = "utf-16-be"
    else:
        return None
    unit = 4 if found.startswith("utf-32") else 2
    decoded = _decode_with(data[: len(data) - len(data) % unit], found)
    return found if decoded is not None and "\x00" not in decoded else None


def _decode_with(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def _guess_legacy(data: bytes) -> str | None:
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data[: 1 << 20]))
    if not matches or matches[0].chaos > 0.3:
        return None
    best = matches[0]
    # Short texts decode equally well in several Windows code pages (French as Hungarian
    # cp1250: "élèves" as "élčves"); on a tie, Windows-1252 is by far the likelier one.
    for match in matches:
        if match.encoding == "cp1252" and match.chaos <= best.chaos + 0.01 and match.coherence >= best.coherence - 0.01:
            best = match
            break
    return _decode_with(data, best.encoding)


def decode_text(data: bytes, *, allow_legacy: bool, declared: str | None = None, prefer_utf8: bool = False) -> str:
    found = bom_encoding(data)
    if found:
        encoding, skip = found
        text = _decode_with(data[skip:], encoding)
        if text is None:
            name = encoding.upper()
            raise ParseError(f"This file starts with a {name} byte-order mark but is not valid {name}.")
        return text
    bomless = bomless_unicode(data)
    if bomless is not None:
        return data.decode(bomless, errors="replace")
    if prefer_utf8 or not declared:
        # Valid multi-byte UTF-8 is almost never an accident, so it beats a label that
        # an editor copied from a template (pages labelled iso-8859-1 and saved as UTF-8).
        text = _decode_with(data, "utf-8")
        if text is not None:
            return text
    if declared:
        # A label can be wrong the other way too (labelled UTF-8, saved as Windows-1256):
        # only trust it when the bytes decode.
        text = _decode_with(data, declared)
        if text is not None:
            return text
    if allow_legacy:
        text = _guess_legacy(data)
        if text is not None:
            return text
    raise ParseError(_UNDECODABLE)


def read_plain(data: bytes, budget: ParseBudget) -> ParsedDocument:
    text = TextBudget(budget.max_chars)
    text.add(decode_text(data, allow_legacy=True))
    return text.finish()


def read_json(data: bytes, budget: ParseBudget) -> ParsedDocument:
    found = bom_encoding(data)
    if found and found[0] != "utf-8":
        decoded = decode_text(data, allow_legacy=False)
    else:
        try:
            decoded = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ParseError("This JSON file is not valid UTF-8, which JSON requires.") from None
    try:
        _check_json_values(decoded)
    except RecursionError:
        raise ParseError("This JSON file nests its values too deeply to be read.") from None
    except ValueError as exc:
        raise ParseError(f"This file is not valid JSON (line {getattr(exc, 'lineno', '?')}).") from None
    text = TextBudget(budget.max_chars)
    text.add(decoded)
    return text.finish()


def _check_json_values(decoded: str) -> None:
    """One JSON value, or several one after another (JSON Lines, logged objects): both are
    what people save as .json. Anything else — a trailing comma, a bare word — is refused."""
    decoder = json.JSONDecoder()
    at = 0
    end = len(decoded)
    while True:
        while at < end and decoded[at] in " \t\r\n":
            at += 1
        if at == end:
            return
        _, at = decoder.raw_decode(decoded, at)


# --- XML ----------------------------------------------------------------------------------

_XML_DECL = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._\-]+)["']""")


class _Stop(Exception):
    """The budget is spent: stop parsing, keep what was read."""


class _XmlUnsafe(Exception):
    pass


def read_xml(data: bytes, budget: ParseBudget) -> ParsedDocument:
    declared = None
    if not bom_encoding(data):
        match = _XML_DECL.match(data[:1024])
        if match:
            declared = match.group(1).decode("ascii")
            if not _known(declared):
                raise ParseError(f"This XML file declares the encoding {declared!r}, which Sluice cannot decode.")
    decoded = decode_text(data, allow_legacy=False, declared=declared)
    text = TextBudget(budget.max_chars)
    xml_text(decoded, text)
    return text.finish()


def _known(encoding: str) -> bool:
    try:
        codecs.lookup(encoding)
    except LookupError:
        return False
    return True


def xml_text(decoded: str, text: TextBudget) -> None:
    """Element text in document order, one line per element, with entities refused.

    expat is used directly: no DTD is loaded (parameter-entity parsing stays off), an
    entity declaration that could expand into the text stops the parse, and there is no handler that could
    fetch an external reference — the protections defusedxml adds, with nothing else.
    """
    parser = expat.ParserCreate()
    pending: list[str] = []

    def flush() -> None:
        line = " ".join("".join(pending).split())
        pending.clear()
        if line:
            text.separate("\n")
            if not text.add(line):
                raise _Stop

    def refuse_entity(_name: str, _parameter: int, _value: str | None, _base: str | None, _system: str | None,
                      _public: str | None, notation: str | None) -> None:
        # An unparsed (NDATA) entity only names a file for an application: nothing expands into the
        # text, so only the entities that do (internal, external parsed, parameter) are refused.
        if notation is None:
            raise _XmlUnsafe

    parser.EntityDeclHandler = refuse_entity
    parser.StartElementHandler = lambda _name, _attrs: flush()
    parser.EndElementHandler = lambda _name: flush()
    parser.CharacterDataHandler = pending.append
    # The declaration names the encoding of the bytes; these are already decoded text.
    body = re.sub(r"^(\s*<\?xml[^>]*?)\sencoding\s*=\s*[\"'][^\"']*[\"']", r"\1", decoded, count=1)
    try:
        step = 1 << 20
        for start in range(0, len(body), step):
            parser.Parse(body[start : start + step], False)
        parser.Parse("", True)
        flush()
    except _Stop:
        return
    except _XmlUnsafe:
        raise ParseError(
            "This XML file declares entities. Sluice does not expand XML entities, because they "
            "are how entity-expansion bombs and external-file reads are built; remove the "
            "DOCTYPE entity declarations and upload it again."
        ) from None
    except expat.ExpatError as exc:
        raise ParseError(f"This XML file is not well-formed (line {exc.lineno}): it cannot be read.") from None


# --- HTML ---------------------------------------------------------------------------------

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._\-]+)""", re.IGNORECASE)
# Content a reader never sees. <head> itself is not skipped: its <title> is worth keeping.
_SKIP_TAGS = {"script", "style", "noscript", "template", "svg"}
_BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "fieldset",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "hr", "li", "main", "nav", "ol", "p", "pre", "section", "table", "tbody", "thead", "tfoot",
    "title", "tr", "ul", "body", "html",
}  # fmt: skip
_CELL_TAGS = {"td", "th"}


class _HtmlText(HTMLParser):
    def __init__(self, text: TextBudget) -> None:
        super().__init__(convert_charrefs=True)
        self.out = text
        self.skip_depth = 0
        self.skipping: list[str] = []
        self.line: list[str] = []
        self.in_pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS:
            self.skipping.append(tag)
            return
        if tag in _BLOCK_TAGS:
            self.flush()
        elif tag in _CELL_TAGS and self.line:
            self.line.append("\t")
        if tag == "pre":
            self.in_pre += 1

    def handle_endtag(self, tag: str) -> None:
        if self.skipping and tag == self.skipping[-1]:
            self.skipping.pop()
            return
        if tag in _BLOCK_TAGS:
            self.flush()
        if tag == "pre" and self.in_pre:
            self.in_pre -= 1

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        self.line.append(data)

    def flush(self) -> None:
        raw = "".join(self.line)
        self.line.clear()
        lines = raw.splitlines() if self.in_pre else [raw]
        for piece in lines:
            cleaned = "\t".join(" ".join(cell.split()) for cell in piece.split("\t")).strip()
            if cleaned:
                self.out.separate("\n")
                if not self.out.add(cleaned):
                    raise _Stop


def html_encoding(data: bytes) -> str | None:
    match = _META_CHARSET.search(data[:65536])
    if not match:
        return None
    label = match.group(1).decode("ascii", "ignore")
    return label if _known(label) else None


# Browsers end a script at "</script" followed by a space, "/" or ">"; html.parser (3.11)
# waits for an exact "</script>", and would swallow the rest of the page as script.
_RAW_END_START = re.compile(r"</(script|style)\b", re.IGNORECASE)


def close_raw_ends(decoded: str) -> str:
    """Each ``</script …>`` (or ``</style …>``) as the exact end tag html.parser waits for.

    One pass: a regex with ``[^>]*>`` retried from every ``</script`` of a page
    that has no ``>`` after them scans to the end each time, which for a
    megabyte of such fragments held a parse worker until its timeout.
    """
    out: list[str] = []
    pos = 0
    for match in _RAW_END_START.finditer(decoded):
        if match.start() < pos:
            continue  # inside a tag already rewritten
        close = decoded.find(">", match.end())
        if close < 0:
            break  # no ">" after this one, so none after any later one either
        out += (decoded[pos:match.start()], f"</{match.group(1)}>")
        pos = close + 1
    out.append(decoded[pos:])
    return "".join(out)


def escape_unclosed_tail(decoded: str) -> str:
    """The text after the last ``>`` with its ``<`` escaped: no markup can end there.

    html.parser, at the end of input, retries every ``<`` it could not close by
    searching the rest of the input for a ``>`` (a comment, an end tag, a
    declaration), so a tail of many such openings costs time quadratic in its
    length. A browser shows that tail as text; so does this, in one pass.
    """
    last = decoded.rfind(">")
    tail = decoded[last + 1:]
    return decoded if "<" not in tail else decoded[:last + 1] + tail.replace("<", "&lt;")


def html_text(decoded: str, text: TextBudget) -> None:
    decoded = escape_unclosed_tail(close_raw_ends(decoded))
    parser = _HtmlText(text)
    try:
        # One feed: html.parser re-scans an unfinished tag from its start on every feed, so a
        # page of one huge tag fed in pieces costs its length times the number of pieces.
        parser.feed(decoded)
        parser.close()
        parser.flush()
    except _Stop:
        return


def read_html(data: bytes, budget: ParseBudget) -> ParsedDocument:
    declared = None if bom_encoding(data) else html_encoding(data)
    decoded = decode_text(data, allow_legacy=True, declared=declared, prefer_utf8=True)
    text = TextBudget(budget.max_chars)
    html_text(decoded, text)
    return text.finish()
