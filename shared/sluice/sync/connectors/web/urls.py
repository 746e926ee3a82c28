"""A page's one address, and whether a crawl may go there: canonical URLs, scope and the writer's patterns.

A page is ``source_path`` = its canonical URL (R-SYNC-6): the fragment dropped, scheme and host in
lower case, the default port dropped, an empty path made ``/``, percent-escapes normalised to upper
case; the query is kept as written (``?page=2`` is another page). Two URLs of one page are one document.

The writer's ``include`` / ``exclude`` patterns are regular expressions matched by RE2 (google-re2,
Google's own bindings): RE2 runs in time linear in the URL whatever the pattern, so a pattern built
to backtrack catastrophically (``(a+)+$``) is answered as fast as any other. A restricted glob would
be linear too, but a URL is not a file path (queries, encoded characters, alternation such as
``/(docs|guide)/``), and writers of crawler configs expect regular expressions (Bedrock's crawler takes
them). What RE2 does not support (back-references, look-around: the features that make matching
exponential) is refused where the config is written, naming the pattern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, unquote, urljoin, urlsplit, urlunsplit

import re2

Scope = Literal["path", "host", "domain"]
DEFAULT_PORTS = {"http": 80, "https": 443}
_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")
# Characters a path or query keeps as they are; anything else is percent-encoded once.
_SAFE_PATH = "/:@!$&'()*+,;=-._~%"
_SAFE_QUERY = _SAFE_PATH + "?"
MAX_URL = 2048


def canonical(url: str, base: str | None = None) -> str | None:
    """The canonical form of ``url`` (resolved against ``base``), or None when it is not an http(s) page."""
    try:
        joined = urljoin(base, url.strip()) if base else url.strip()
        parts = urlsplit(joined)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.username or parts.password:
        return None
    host = parts.hostname.lower().rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"
    path = _escapes(quote(parts.path or "/", safe=_SAFE_PATH))
    query = _escapes(quote(parts.query, safe=_SAFE_QUERY))
    out = urlunsplit((scheme, netloc, path, query, ""))
    return out if len(out) <= MAX_URL else None


def _escapes(text: str) -> str:
    return _ESCAPE.sub(lambda m: m.group(0).upper(), text)


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True)
class ScopeRule:
    """Where a crawl from its seeds may go: ``path`` (a seed's host and its path's folder), ``host``
    (a seed's host) or ``domain`` (a seed's host and its subdomains)."""

    scope: Scope
    seeds: tuple[str, ...]

    def allows(self, url: str) -> bool:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        for seed in self.seeds:
            s = urlsplit(seed)
            seed_host = (s.hostname or "").lower()
            if self.scope == "domain":
                if host == seed_host or host.endswith("." + seed_host.removeprefix("www.")) \
                        or host == seed_host.removeprefix("www."):
                    return True
                continue
            if parts.scheme != s.scheme or parts.netloc != s.netloc:
                continue
            if self.scope == "host":
                return True
            # The seed's folder: https://h/docs/guide/intro.html reaches https://h/docs/guide/...; a seed
            # of https://h/docs reaches https://h/docs and https://h/docs/... but not https://h/docs-old.
            folder = s.path if s.path.endswith("/") else s.path.rsplit("/", 1)[0] + "/"
            if parts.path.startswith(folder) or parts.path == s.path:
                return True
        return False

    def narrowing(self) -> str | None:
        """What a seed's path does to a ``path`` scope, said in the docs and the report (onyx#4774)."""
        if self.scope != "path":
            return None
        paths = sorted({urlsplit(s).path for s in self.seeds if urlsplit(s).path not in ("", "/")})
        return ", ".join(paths) or None


class PatternError(ValueError):
    """A pattern RE2 cannot compile (or one Sluice refuses): the sentence says which and why."""


MAX_PATTERN = 512


def compile_pattern(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (linear-time matching), or a PatternError saying why not."""
    if not pattern or len(pattern) > MAX_PATTERN or any(ord(ch) < 32 for ch in pattern):
        raise PatternError(f"A pattern is 1-{MAX_PATTERN} printable characters")
    options = re2.Options()
    options.max_mem = 8 << 20  # a pattern whose automaton needs more is refused, not run slowly
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        raise PatternError(f"Not a pattern RE2 accepts ({_why(exc)}); back-references and look-around are not "
                           "supported, so that every pattern is matched in time linear in the URL") from None


def _why(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else ""
    text = (arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)).strip().rstrip(".")
    return text[:120] or "invalid"


@dataclass(frozen=True)
class Patterns:
    """A URL is crawled when it matches an ``include`` pattern (or there is none) and no ``exclude``.
    A pattern matches anywhere in the URL (``search``); anchor it with ``^`` and ``$`` to mean the whole."""

    include: tuple[Any, ...]
    exclude: tuple[Any, ...]

    @classmethod
    def of(cls, include: list[str], exclude: list[str]) -> Patterns:
        return cls(tuple(compile_pattern(p) for p in include), tuple(compile_pattern(p) for p in exclude))

    def refusal(self, url: str) -> str | None:
        """None when ``url`` passes, else the report's sentence."""
        if self.include and not any(p.search(url) for p in self.include):
            return "Ignored: the URL matches none of the source's include patterns."
        hit = next((i for i, p in enumerate(self.exclude) if p.search(url)), None)
        if hit is not None:
            return f"Ignored: the URL matches the source's exclude pattern {hit + 1}."
        return None


def page_key(url: str, suffix: str) -> str:
    """The listing key of a page: ``<host>/<name><suffix>``, the name its path's segments joined with ``-``
    (the document's name in the base: ``guide-install.md`` for https://h/guide/install.html, the host's
    name for its home page), so pages of one site do not all share a name such as ``index.md``."""
    parts = urlsplit(url)
    segments = [s for s in unquote(parts.path).split("/") if s]
    if segments and "." in segments[-1]:
        segments[-1] = segments[-1].rsplit(".", 1)[0]
    if segments and segments[-1] in ("index", "default"):
        segments.pop()
    host = re.sub(r"[^\w.\-]+", "-", parts.hostname or "site")
    stem = "-".join(segments) or host
    if parts.query:
        stem = f"{stem}-{unquote(parts.query)}"
    stem = re.sub(r"[^\w.\-]+", "-", stem).strip("-.")[:150] or "page"
    netloc = re.sub(r"[^\w.\-]+", "-", parts.netloc)
    return f"{netloc}/{stem}{suffix}"
