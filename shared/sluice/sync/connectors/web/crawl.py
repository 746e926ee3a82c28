"""A crawl: the listing of a web source, breadth-first from its seeds and its sitemaps.

What it costs a second time is the point (issue 38, "never pay twice"). Each page's validators
(``ETag``, ``Last-Modified``), its sitemap ``<lastmod>``, the hash of its extracted text and its
links are kept in the source's connector state. The next crawl:

* skips the request for a page whose sitemap ``<lastmod>`` is not newer than the kept one;
* asks every other known page conditionally (``If-None-Match`` / ``If-Modified-Since``): a ``304``
  transfers no body, and the links the page had last time keep the crawl going;
* hashes the extracted text of a page that did answer with a body, and lists that hash as the page's
  change signal: a page whose markup changed and whose text did not is decided unchanged by the run
  before anything is fetched for it again, parsed or embedded.

A crawl is a listing that knows whether it is whole: cut by ``max_pages``, ``max_depth``, its time
limit, or a page in scope that failed, it says so and the run removes nothing (R-SYNC-2). A page that
answers 404 or 410 is left out of the listing, so a whole crawl removes its document.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import protego
from lxml import etree

from sluice.parsing.sniff import identify
from sluice.sync.connectors.base import ListingJournal, RemoteFile, RemoteListing
from sluice.sync.connectors.web.extract import is_document_link, parse
from sluice.sync.connectors.web.fetcher import Fetcher, Refused, Response, Unreachable
from sluice.sync.connectors.web.urls import Patterns, ScopeRule, canonical, host_of, origin, page_key

log = logging.getLogger("sluice.sync")

STATE_VERSION = 1
MAX_OUTLINKS = 500
MAX_IGNORED_REPORTED = 1000
MAX_SITEMAPS = 50
MAX_SITEMAP_URLS = 50_000
MAX_ROBOTS_BYTES = 512 * 1024  # RFC 9309: a crawler reads at least 500 KiB of it
MAX_SITEMAP_BYTES = 50 * 1024 * 1024  # the sitemaps protocol's own ceiling, uncompressed
DOCUMENT_KINDS = {"pdf": ".pdf", "docx": ".docx", "doc": ".doc", "xlsx": ".xlsx", "xls": ".xls", "pptx": ".pptx",
                  "ppt": ".ppt", "odt": ".odt", "ods": ".ods", "odp": ".odp"}
TEXT_TYPES = {"text/plain": ".txt", "text/markdown": ".md", "text/csv": ".csv"}

UNCHANGED_304 = "Unchanged: the server answered 304 Not Modified to a conditional request; no body was fetched."
UNCHANGED_LASTMOD = "Unchanged: the sitemap's lastmod is not newer than at the last crawl; the page was not requested."
UNCHANGED_TEXT = "Unchanged: the page's text is the same as at the last crawl (only its markup changed)."
ROBOTS = "Ignored: the site's robots.txt disallows this URL for the deployment's user agent."
OUT_OF_SCOPE = "Ignored: out of the source's scope."
NO_DOCUMENTS = "Ignored: a linked document, and the source's follow_documents is off."
NO_TEXT = "Ignored: the page has no text (JavaScript is not executed; a pre-rendered page or a sitemap helps)."


@dataclass
class Known:
    """What the last crawl kept of one page."""

    etag: str | None = None
    modified: str | None = None  # Last-Modified, as the server sent it
    lastmod: str | None = None  # the sitemap's
    signal: str | None = None  # "text:<sha256>" or "bytes:<sha256>"
    size: int = 0
    key: str = ""
    links: list[str] = field(default_factory=list)


def load_state(state: dict[str, Any]) -> dict[str, Known]:
    """The pages a kept state names: ``{"v": 1, "urls": [...], "pages": [[etag, modified, lastmod, signal,
    size, key, [link indices]] | None]}`` (links as indices: a 10,000-page site in a few MB)."""
    if state.get("v") != STATE_VERSION:
        return {}
    urls = [str(u) for u in state.get("urls") or []]
    known: dict[str, Known] = {}
    for url, entry in zip(urls, state.get("pages") or [], strict=False):
        if not isinstance(entry, list) or len(entry) != 7:
            continue
        etag, modified, lastmod, signal, size, key, links = entry
        known[url] = Known(etag, modified, lastmod, signal, int(size or 0), str(key or ""),
                           [urls[i] for i in links if isinstance(i, int) and 0 <= i < len(urls)])
    return known


def dump_state(pages: dict[str, Known], delays: dict[str, float] | None = None) -> dict[str, Any]:
    index: dict[str, int] = {}
    urls: list[str] = []

    def at(url: str) -> int:
        if url not in index:
            index[url] = len(urls)
            urls.append(url)
        return index[url]

    for url in pages:
        at(url)
    entries: list[Any] = [None] * len(urls)
    for url, k in pages.items():
        entries[index[url]] = [k.etag, k.modified, k.lastmod, k.signal, k.size, k.key, [at(u) for u in k.links]]
    entries.extend([None] * (len(urls) - len(entries)))
    # each host's robots.txt Crawl-delay: the fetch steps, which read no robots.txt, keep to it too
    return {"v": STATE_VERSION, "urls": urls, "pages": entries, "delays": dict(delays or {})}


def text_signal(text: str) -> str:
    return "text:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Item:
    url: str
    depth: int
    lastmod: str | None = None


def _file_row(f: RemoteFile) -> list[Any]:
    return [f.key, f.source_path, f.size, f.etag, f.note, f.failure, f.hint]


def _known_row(k: Known) -> list[Any]:
    return [k.etag, k.modified, k.lastmod, k.signal, k.size, k.key, k.links]


def _diff() -> dict[str, Any]:
    return {"v": None, "q": [], "s": [], "f": [], "p": {}, "n": 0, "pr": [], "cut": None}


class Crawl:
    """One crawl of a source, in one call (``run()``) or in bounded steps (``run(journal)``).

    With a journal, everything the crawl does is written to it page by page (what was queued and
    seen, the files listed, each page's kept validators and links): a step that runs out of time
    answers None and the next one replays the journal and goes on; a step killed mid-way loses at
    most the page it was reading.
    """

    def __init__(self, *, seeds: list[str], scope: ScopeRule, patterns: Patterns, sitemap: str,
                 max_pages: int, max_depth: int | None, follow_documents: bool, user_agent: str,
                 fetcher: Fetcher, known: dict[str, Known], seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.seeds, self.scope, self.patterns, self.sitemap = seeds, scope, patterns, sitemap
        self.max_pages, self.max_depth, self.follow_documents = max_pages, max_depth, follow_documents
        self.agent = user_agent.split("/", 1)[0].strip() or user_agent
        self.fetcher, self.known = fetcher, known
        self.clock = clock
        self.until = clock() + seconds
        self.robots: dict[str, protego.Protego | None] = {}
        self.seen: set[str] = set()
        # each URL's number, in the order the crawl first saw it: the journal names a page's links by it
        self.ordinal: dict[str, int] = {}
        self.by_ordinal: list[str] = []
        self.queued: set[str] = set()
        self.frontier: deque[Item] = deque()
        self.files: list[RemoteFile] = []
        self.pages: dict[str, Known] = {}
        self.listed = 0
        self.ignored_reported = 0
        self.problems: list[str] = []
        self.cut: str | None = None
        self._d = _diff()

    # --- what the crawl did, recorded as it does it ---------------------------------------------------

    def _see(self, url: str) -> None:
        self.seen.add(url)
        self._number(url)
        self._d["s"].append(url)

    def _number(self, url: str) -> None:
        if url not in self.ordinal:
            self.ordinal[url] = len(self.by_ordinal)
            self.by_ordinal.append(url)

    def _queue(self, item: Item) -> None:
        self.frontier.append(item)
        self.queued.add(item.url)
        self._d["q"].append([item.url, item.depth, item.lastmod])

    def _file(self, f: RemoteFile) -> None:
        self.files.append(f)
        self._d["f"].append(_file_row(f))

    def _page(self, url: str, k: Known) -> None:
        self.pages[url] = k
        self._d["p"][url] = k  # written at the flush, its links by number (all seen by then)

    def _count(self) -> None:
        self.listed += 1
        self._d["n"] += 1

    def _problem(self, sentence: str) -> None:
        self.problems.append(sentence)
        self._d["pr"].append(sentence)

    def _stop(self, sentence: str) -> None:
        if self.cut is None:
            self.cut = sentence
            self._d["cut"] = sentence

    def _flush(self, journal: ListingJournal | None) -> None:
        d, self._d = self._d, _diff()
        if journal is not None:
            for url in d["p"]:
                k = d["p"][url]
                d["p"][url] = [*_known_row(k)[:6], [self.ordinal[u] for u in k.links if u in self.ordinal]]
            journal.append([{k: v for k, v in d.items() if v}])

    def _replay(self, d: dict[str, Any]) -> None:
        for url in d.get("s", []):  # first, in the order they were seen: the numbers links are named by
            self.seen.add(url)
            self._number(url)
        for url, depth, lastmod in d.get("q", []):
            self.frontier.append(Item(url, depth, lastmod))
            self.queued.add(url)
            self.seen.add(url)
        if d.get("v"):
            item = self.frontier.popleft()
            assert item.url == d["v"], "the journal's visits follow its queue"
        for row in d.get("f", []):
            f = RemoteFile(key=row[0], source_path=row[1], size=row[2], etag=row[3], note=row[4], failure=row[5],
                           hint=row[6])
            self.files.append(f)
            self.ignored_reported += 1 if f.note else 0
        for url, row in d.get("p", {}).items():
            etag, modified, lastmod, signal, size, key, links = row
            self.pages[url] = Known(etag, modified, lastmod, signal, int(size), str(key),
                                    [self.by_ordinal[i] for i in links])
        self.listed += int(d.get("n", 0))
        self.problems.extend(d.get("pr", []))
        self.cut = self.cut or d.get("cut")

    # --- the queue ---------------------------------------------------------------------------

    def _ignore(self, url: str, sentence: str) -> None:
        if self.ignored_reported < MAX_IGNORED_REPORTED:
            self.ignored_reported += 1
            self._file(RemoteFile(key=page_key(url, ""), source_path=url, size=0, etag=None, note=sentence))

    def _fail(self, url: str, sentence: str) -> None:
        self._file(RemoteFile(key=page_key(url, ""), source_path=url, size=0, etag=None, failure=sentence))
        self._problem(sentence)

    def _refusal(self, url: str) -> str | None:
        if not self.scope.allows(url):
            return OUT_OF_SCOPE
        refused = self.patterns.refusal(url)
        if refused is not None:
            return refused
        if not self._allowed_by_robots(url):
            return ROBOTS
        if not self.follow_documents and is_document_link(url):
            return NO_DOCUMENTS
        return None

    def enqueue(self, url: str | None, depth: int, lastmod: str | None = None) -> None:
        if url is None or url in self.seen:
            return
        self._see(url)
        refused = self._refusal(url)
        if refused is not None:
            self._ignore(url, refused)
            return
        if self.max_depth is not None and depth > self.max_depth:
            self._stop(f"The crawl stopped at max_depth {self.max_depth} with pages in scope beyond it: those were "
                       "not listed and nothing was removed.")
            return
        self._queue(Item(url, depth, lastmod))

    # --- robots.txt (RFC 9309) and sitemaps ---------------------------------------------------------

    def _robots(self, site: str) -> protego.Protego | None:
        if site in self.robots:
            return self.robots[site]
        rules: protego.Protego | None = None
        try:
            resp = self.fetcher.get(f"{site}/robots.txt", max_bytes=MAX_ROBOTS_BYTES)
        except (Refused, Unreachable) as exc:
            # RFC 9309 2.3.1.4: an unreachable robots.txt means "complete disallow".
            rules = protego.Protego.parse("User-agent: *\nDisallow: /\n")
            self._problem(f"The site's robots.txt could not be read ({exc}); nothing there was crawled.")
        else:
            if resp.status == 200:
                rules = protego.Protego.parse(resp.body[:MAX_ROBOTS_BYTES].decode("utf-8", errors="replace"))
            elif resp.status >= 500:
                rules = protego.Protego.parse("User-agent: *\nDisallow: /\n")
            # 4xx: RFC 9309 2.3.1.3, "unavailable": anything may be crawled.
        if rules is not None:
            delay = rules.crawl_delay(self.agent)
            if delay:
                self.fetcher.set_delay(host_of(site), min(float(delay), 60.0))
        self.robots[site] = rules
        return rules

    def _allowed_by_robots(self, url: str) -> bool:
        rules = self._robots(origin(url))
        return rules is None or bool(rules.can_fetch(url, self.agent))

    def _sitemap_roots(self) -> list[str]:
        if self.sitemap == "off":
            return []
        if self.sitemap != "auto":
            return [self.sitemap]
        roots: list[str] = []
        for site in dict.fromkeys(origin(s) for s in self.seeds):
            rules = self._robots(site)
            listed = [u for u in (canonical(s) for s in (rules.sitemaps if rules is not None else [])) if u]
            roots.extend(listed or [f"{site}/sitemap.xml"])
        return list(dict.fromkeys(roots))

    def _sitemaps(self) -> Iterable[tuple[str, str | None]]:
        queue = deque(self._sitemap_roots())
        done: set[str] = set()
        urls = 0
        while queue and len(done) < MAX_SITEMAPS:
            where = queue.popleft()
            if where in done:
                continue
            done.add(where)
            try:
                resp = self.fetcher.get(where, max_bytes=MAX_SITEMAP_BYTES)
            except (Refused, Unreachable) as exc:
                self._problem(f"A sitemap could not be read ({exc}).")
                continue
            if resp.status != 200 or resp.too_large:
                continue
            for kind, loc, lastmod in _sitemap_entries(resp.body):
                if kind == "sitemap":
                    target = canonical(loc)
                    if target:
                        queue.append(target)
                elif urls < MAX_SITEMAP_URLS:
                    urls += 1
                    yield loc, lastmod

    # --- the crawl -----------------------------------------------------------------------------

    def _start(self) -> None:
        for seed in self.seeds:
            self.enqueue(canonical(seed), 0)
        for loc, lastmod in self._sitemaps():
            url = canonical(loc)
            if url is not None and url in self.queued:
                for item in self.frontier:  # a seed the sitemap dates
                    if item.url == url:
                        item.lastmod = lastmod
                continue
            self.enqueue(url, 1, lastmod)
        # the queue as it stands (a seed's date included), recorded once
        self._d["q"] = [[i.url, i.depth, i.lastmod] for i in self.frontier]

    def run(self, journal: ListingJournal | None = None) -> RemoteListing | None:
        """The listing; with a journal, None when this step's time ran out and a next step goes on."""
        earlier = journal.entries() if journal is not None else []
        for entry in earlier:
            self._replay(entry)
        if not earlier:
            self._start()
            self._flush(journal)
        visited = 0
        while self.frontier and self.cut is None:
            if self.listed >= self.max_pages:
                self._stop(f"The crawl was cut at max_pages ({self.max_pages}) with pages in scope still to visit: "
                           "those were listed and nothing was removed.")
                break
            if visited and self.clock() >= self.until:
                if journal is not None:
                    return None
                self._stop("The crawl reached its time limit (WEB_STEP_SECONDS) with pages still to visit: those "
                           "were listed and nothing was removed.")
                break
            item = self.frontier.popleft()
            self._d["v"] = item.url
            self._visit(item)
            visited += 1
            self._flush(journal)
        return self._listing()

    def _listing(self) -> RemoteListing:
        problem = self.cut or (self.problems[0] + (f" ({len(self.problems)} problems in all.)"
                                                   if len(self.problems) > 1 else "") if self.problems else None)
        complete = problem is None
        if problem is not None:
            problem = problem if problem.endswith("removed.") else problem + " Nothing was removed."
        # Pages kept from before and not seen this time stay known only if the crawl was cut (they may
        # still be there); after a whole crawl they are gone.
        pages = dict(self.pages)
        if not complete:
            for url, k in self.known.items():
                pages.setdefault(url, k)
        return RemoteListing(self.files, complete, problem, state=dump_state(pages, self.fetcher.delays),
                             keep_state_now=True)

    def _visit(self, item: Item) -> None:
        url, known = item.url, self.known.get(item.url)
        if (known is not None and known.signal and item.lastmod and known.lastmod
                and _not_newer(item.lastmod, known.lastmod)):
            self._count()
            self._unchanged(url, item, known, UNCHANGED_LASTMOD)
            return
        headers: dict[str, str] = {}
        if known is not None and known.signal:
            if known.etag:
                headers["If-None-Match"] = known.etag
            if known.modified:
                headers["If-Modified-Since"] = known.modified
        try:
            resp = self.fetcher.get(url, headers)
        except (Refused, Unreachable) as exc:
            self._count()
            self._fail(url, str(exc))
            return
        if resp.url != url:  # redirected: the page is where it landed
            if resp.url in self.seen:
                return  # reached twice: one document
            self._see(resp.url)
            refused = self._refusal(resp.url)
            if refused is not None:
                self._ignore(url, f"{refused} (where the URL redirects)")
                return
            url, known = resp.url, self.known.get(resp.url) or known
        self._count()
        if resp.status == 304 and known is not None and known.signal:
            self._unchanged(url, item, known, UNCHANGED_304)
            return
        if resp.status in (404, 410):
            if url not in self.known:  # a link to nothing: said; a page that went away: removed
                self._ignore(url, f"Ignored: the server answered {resp.status}; there is no page at this URL.")
            return
        if resp.status != 200:
            self._fail(url, f"The server answered HTTP {resp.status}; the page was not read.")
            return
        if resp.too_large:
            self._fail(url, f"The page is larger than the {self.fetcher.max_bytes // (1024 * 1024)} MB limit for "
                            "knowledge-base documents; it was not read.")
            return
        self._read(url, item, resp)

    def _unchanged(self, url: str, item: Item, known: Known, why: str) -> None:
        self._page(url, Known(known.etag, known.modified, item.lastmod or known.lastmod, known.signal,
                              known.size, known.key, known.links))
        self._file(RemoteFile(key=known.key, source_path=url, size=known.size, etag=known.signal, hint=why))
        for link in known.links:
            self.enqueue(link, item.depth + 1)

    def _read(self, url: str, item: Item, resp: Response) -> None:
        kind = identify(resp.body)
        ctype = resp.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind in DOCUMENT_KINDS or (kind is None and ctype in TEXT_TYPES):
            suffix = DOCUMENT_KINDS.get(kind or "") or TEXT_TYPES[ctype]
            signal = "bytes:" + hashlib.sha256(resp.body).hexdigest()
            self._listed(url, item, resp, page_key(url, suffix), signal, len(resp.body), [])
            remember(url, signal, resp.body)
            return
        if kind != "html" and not (kind is None and ctype in ("text/html", "application/xhtml+xml")):
            self._ignore(url, f"Ignored: not a page or document the base reads ({ctype or 'no content type'}).")
            return
        page = parse(resp.body, url)
        base = canonical(page.base, url) if page.base else url
        links = list(dict.fromkeys(u for u in (canonical(h, base or url) for h in page.links) if u))
        for link in links:
            self.enqueue(link, item.depth + 1)
        if page.canonical:
            target = canonical(page.canonical, url)
            if target and target != url and self._refusal(target) is None:
                if target in self.pages or target in self.queued:
                    return  # the canonical page is listed under its own address: one document
                self._see(target)
                url = target
        if not page.text.strip():
            self._ignore(url, NO_TEXT)
            return
        data = page.text.encode()
        kept = [u for u in links if self.scope.allows(u)][:MAX_OUTLINKS]
        signal = text_signal(page.text)
        self._listed(url, item, resp, page_key(url, ".md"), signal, len(data), kept)
        remember(url, signal, data)

    def _listed(self, url: str, item: Item, resp: Response, key: str, signal: str, size: int,
                links: list[str]) -> None:
        known = self.known.get(url)
        hint = UNCHANGED_TEXT if known is not None and known.signal == signal else None
        self._page(url, Known(resp.headers.get("etag"), resp.headers.get("last-modified"),
                              item.lastmod or (known.lastmod if known else None), signal, size, key, links))
        self._file(RemoteFile(key=key, source_path=url, size=size, etag=signal, hint=hint))


def _not_newer(lastmod: str, kept: str) -> bool:
    a, b = _when(lastmod), _when(kept)
    return a is not None and b is not None and a <= b


def _when(text: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _sitemap_entries(body: bytes) -> Iterable[tuple[str, str, str | None]]:
    """("sitemap" | "url", loc, lastmod) of a sitemap or sitemap index, gzip or not; no entity expanded."""
    if body[:2] == b"\x1f\x8b":
        try:
            body = zlib.decompressobj(31).decompress(body, MAX_SITEMAP_BYTES)
        except (zlib.error, gzip.BadGzipFile):
            return
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                             recover=True)
    try:
        root = etree.fromstring(body, parser=parser)
    except (etree.XMLSyntaxError, ValueError):
        return
    if root is None:
        return
    for el in root:
        if not isinstance(el.tag, str):
            continue
        tag = etree.QName(el).localname
        if tag not in ("sitemap", "url"):
            continue
        loc = lastmod = None
        for child in el:
            if not isinstance(child.tag, str):
                continue
            name = etree.QName(child).localname
            if name == "loc":
                loc = (child.text or "").strip()
            elif name == "lastmod":
                lastmod = (child.text or "").strip() or None
        if loc:
            yield tag, loc, lastmod


# --- bodies the crawl already read ------------------------------------------------------------------
# A page the crawl read is what the fetch step would read again: within one process (the local
# stack, a warm function) the fetch takes it from here instead. Bounded; a miss is a request.
_RECENT: dict[tuple[str, str], bytes] = {}
_RECENT_BYTES = 32 * 1024 * 1024
_held = [0]


def remember(url: str, signal: str, data: bytes) -> None:
    if len(data) > _RECENT_BYTES // 4 or (url, signal) in _RECENT:
        return
    _RECENT[(url, signal)] = data
    _held[0] += len(data)
    while _held[0] > _RECENT_BYTES:
        _held[0] -= len(_RECENT.pop(next(iter(_RECENT))))


def recall(url: str, signal: str | None) -> bytes | None:
    data = _RECENT.pop((url, signal), None) if signal else None
    if data is not None:
        _held[0] -= len(data)
    return data
