"""Real retrieval corpora in several languages, from Debian's own documentation packages (issue 40).

The bundled model (all-MiniLM-L6-v2) reads English; a collection in German or Spanish is one where its
vector side is weak and the lexical side (with the base's ``text_search_language``) is not. The same
construction in English is the control. Two kinds of real question and answer, written by people:

* **The Debian FAQ** (``debian-faq``, ``debian-faq-de``: the German is a translation of the English,
  so the two are the same questions in two languages): each question ("Wie kann ich ein Paket
  installieren?") asks for its own answer, the text under it (first ``WORDS`` words).
* **Manual pages** (``manpages`` for English, sections 1, 5, 7 and 8 of the Linux man-pages project;
  ``manpages-de``; ``manpages-es``): each page's one-line summary from its NAME section, without the
  command's name ("Verzeichnisinhalte auflisten" for ls), asks for the page's body (the sections after
  NAME and SYNOPSIS, first ``WORDS`` words), in which the summary itself no longer appears. Every page
  is a distractor for every other: they share "Datei", "Verzeichnis", "Option", "Prozess"...

Summaries that more than one page shares (aliases, families of pages) are not asked; a body two pages
share is kept once. Nothing is downloaded: ``corpus(language)`` reads what the packages installed and
returns ``None`` with the reason when they are absent (``apt-get install debian-faq-de manpages-de``).
Deterministic: the same packages give the same corpus.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

FAQ = {"english": "/usr/share/doc/debian/FAQ/debian-faq.en.txt.gz",
       "german": "/usr/share/doc/debian/FAQ/debian-faq.de.txt.gz"}
MAN = {"english": "/usr/share/man", "german": "/usr/share/man/de", "spanish": "/usr/share/man/es"}
PACKAGES = {"english": "debian-faq manpages", "german": "debian-faq-de manpages-de", "spanish": "manpages-es"}
SECTIONS = ("man1", "man5", "man7", "man8")
ENGLISH_PAGES = "manpages"  # the English pages come from one package, whatever else the machine has
WORDS = 200
SKIPPED_SECTIONS = {"SYNOPSIS", "ÜBERSICHT", "SINOPSIS", "SYNTAX", "SINTAXIS"}

_QUESTION = re.compile(r"^(\d+)\.(\d+)\. (.+)$")
_HEADING = re.compile(r"^\d+\. \S")
_GLYPHS = {"em": "—", "en": "–", "aq": "'", "dq": '"', "lq": "“", "rq": "”", "Fo": "«", "Fc": "»",
           "fo": "‹", "fc": "›", "bu": "•", "co": "©", "rg": "®", "tm": "™", "oq": "‘", "cq": "’",
           "hy": "-", "mi": "-", "pl": "+", "mu": "×", "de": "°", "ss": "ß", "-D": "Ð", "a:": "ä",
           "o:": "ö", "u:": "ü", "A:": "Ä", "O:": "Ö", "U:": "Ü", "'a": "á", "'e": "é", "'i": "í",
           "'o": "ó", "'u": "ú", "~n": "ñ", "~N": "Ñ", "ga": "`", "ha": "^", "ti": "~", "rs": "\\",
           "at": "@", "sh": "#", "Do": "$", "lh": "☜", "rh": "☞", "->": "→", "<-": "←", ">=": "≥", "<=": "≤"}
_ESCAPE = re.compile(r"\\(?:f(?:\[[^\]]*\]|\(..|.)|\((..)|\[([^\]]*)\]|\*(?:\[[^\]]*\]|\(..|.)|s[-+]?\d+"
                     r"|[-e&|^/,:c%!]|\s|.)")


def _unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        s = m.group(0)
        glyph = m.group(1) or m.group(2)
        if glyph is not None:
            return _GLYPHS.get(glyph, "")
        if s in ("\\-", "\\e"):
            return "-" if s == "\\-" else "\\"
        if len(s) == 2 and s[1].isspace():
            return " "
        return ""
    return _ESCAPE.sub(one, text)


def _macro_text(line: str) -> str:
    """The words a macro line shows (``.B foo``, ``.BR a b``, ``.IP "x"``), none for layout macros."""
    name, _, rest = line[1:].strip().partition(" ")
    if name in ("B", "I", "SM", "SB", "IP", "TQ"):
        return rest.replace('"', "")
    if len(name) == 2 and set(name) <= set("BIR"):  # alternating fonts: the words run together
        return "".join(p.strip('"') for p in re.findall(r'"[^"]*"|\S+', rest))
    return ""


def man_sections(source: str) -> list[tuple[str, str]]:
    """(section title, text) of one manual page's roff source, in order."""
    sections: list[tuple[str, list[str]]] = []
    for raw in source.splitlines():
        if raw.startswith(('.\\"', "'\\\"", '.\\}')) or raw.strip() in (".", ""):
            continue
        if raw.startswith((".SH", ".Sh")):
            sections.append((_unescape(raw[3:].strip().strip('"')).upper(), []))
            continue
        if not sections:
            continue
        text = _macro_text(raw) if raw.startswith((".", "'")) else raw
        if text:
            sections[-1][1].append(_unescape(text))
    return [(title, " ".join(" ".join(lines).split())) for title, lines in sections]


def _first_words(text: str, n: int = WORDS) -> str:
    return " ".join(text.split()[:n])


def man_pages(language: str) -> list[tuple[str, str, str]]:
    """(page id, summary, body) of every page of the language's sections that has both."""
    root = Path(MAN[language])
    out = []
    for section in SECTIONS:
        folder = root / section
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.gz")):
            if language == "english" and not _from_package(path):
                continue
            try:
                source = gzip.decompress(path.read_bytes()).decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if source.lstrip().startswith(".so "):  # an alias of another page
                continue
            sections = man_sections(source)
            if len(sections) < 2:
                continue
            name = sections[0][1]
            summary = re.split(r"\s[-–—]+\s", name, maxsplit=1)
            if len(summary) != 2 or len(summary[1].split()) < 2:
                continue
            body = " ".join(text for title, text in sections[1:] if title not in SKIPPED_SECTIONS)
            if len(body.split()) >= 20:
                out.append((f"{section}/{path.name.removesuffix('.gz')}", summary[1].strip(), _first_words(body)))
    return out


_OWNED: set[str] | None = None


def _from_package(path: Path) -> bool:
    """Whether the English page belongs to Debian's ``manpages`` package (its file list), so the corpus
    does not depend on which other programs the machine has installed."""
    global _OWNED
    if _OWNED is None:
        listing = Path(f"/var/lib/dpkg/info/{ENGLISH_PAGES}.list")
        _OWNED = set(listing.read_text().split()) if listing.is_file() else set()
    return str(path) in _OWNED


def faq(language: str) -> list[tuple[str, str, str]]:
    """(question id, question, answer) of the Debian FAQ in ``language``."""
    path = Path(FAQ[language])
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").replace("\u00a0", " ").splitlines()
    out: list[tuple[str, str, list[str]]] = []
    i = 0
    while i < len(lines):
        m = _QUESTION.match(lines[i])
        if m:  # a question at the margin (the table of contents is indented); it may wrap
            question = [m.group(3)]
            i += 1
            while i < len(lines) and lines[i].strip() and not lines[i].startswith("  "):
                question.append(lines[i].strip())
                i += 1
            out.append((f"faq{m.group(1)}.{m.group(2)}", " ".join(question), []))
            continue
        if _HEADING.match(lines[i]):
            out.append(("", "", []))  # a chapter title ends the answer before it
        elif out and out[-1][0]:
            out[-1][2].append(lines[i])
        i += 1
    return [(qid, q, _first_words(" ".join(a))) for qid, q, a in out
            if qid and len(" ".join(a).split()) >= 10]


def missing(language: str) -> str | None:
    """Why the corpus cannot be built here, or None."""
    if not Path(MAN[language], "man1").is_dir() or (language == "english" and not _from_package(
            Path(MAN[language], "man7", "man.7.gz"))):
        return f"the manual pages are not installed (apt-get install {PACKAGES[language]})"
    if language in FAQ and not Path(FAQ[language]).is_file():
        return f"the Debian FAQ is not installed (apt-get install {PACKAGES[language]})"
    return None


def corpus(language: str) -> tuple[list[dict], list[dict], dict[str, set[str]]]:
    """(documents, queries, relevant documents per query) in SciFact's shapes."""
    docs: list[dict] = []
    queries: list[dict] = []
    qrels: dict[str, set[str]] = {}
    items = (faq(language) if language in FAQ else []) + man_pages(language)
    asked: dict[str, int] = {}
    for _, question, _ in items:
        key = " ".join(question.lower().split())
        asked[key] = asked.get(key, 0) + 1
    bodies: set[str] = set()
    for item_id, question, body in items:
        if body in bodies:
            continue
        bodies.add(body)
        docs.append({"_id": item_id, "title": "", "text": body})
        if asked[" ".join(question.lower().split())] == 1:
            queries.append({"_id": f"q:{item_id}", "text": question})
            qrels[f"q:{item_id}"] = {item_id}
    return docs, queries, qrels
