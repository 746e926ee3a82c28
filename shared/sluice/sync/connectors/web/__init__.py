"""The web as a source (R-SYNC-6): a site crawled once, and afterwards only what changed fetched and embedded.

``urls`` (canonical addresses, scope, the writer's patterns matched by RE2), ``extract`` (a page as
markdown text, its links), ``fetcher`` (every request guarded, paced, bounded and retried) and
``crawl`` (robots.txt, sitemaps, breadth-first discovery, the kept validators) make the listing; this
module is the connector: its config, its rules in a deployment, and the fetch of one listed page.

A page's document is its extracted text as markdown (``<name>.md``), so its content hash is the hash
of its main text: the run's own comparison (R-SYNC-2) then finds a page whose markup alone changed
unchanged, before the embedding. A linked document (PDF, Office, text) is fetched as it is, and
the pipeline sniffs what it is (R-UP-6). A source needs no secret and reads only what is public (or
what the operator lists in SyncAllowedHosts).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sluice.config import SyncContextSettings
from sluice.outbound import Resolver, resolve_host
from sluice.sync.connectors.base import (
    ConfigRefusal,
    Connector,
    ListingJournal,
    RemoteFile,
    RemoteListing,
    SourceRefused,
)
from sluice.sync.connectors.web.urls import PatternError, Patterns, ScopeRule, canonical, compile_pattern
from sluice.sync.outbound import sync_policy, url_problem_for_source

if TYPE_CHECKING:  # the crawl's libraries (protego, lxml) are the sync function's alone (ConnectorsLayer)
    from sluice.sync.connectors.web.crawl import Crawl
    from sluice.sync.connectors.web.fetcher import Fetcher

__all__ = ["WebConfig", "WebConnector"]

MAX_PATTERNS = 25
# The sync state machine's Map runs this many batches at once (infra/statemachines/sync.asl.json,
# MaxConcurrency): each batch's fetches take that share of the source's rate, so together they hold it.
BATCHES_AT_ONCE = 4


class WebConfig(BaseModel):
    """Where a crawl starts, where it may go and how fast. Never a credential: a web source takes none."""

    model_config = ConfigDict(extra="forbid", title="Web site")

    seed_urls: list[str] = Field(min_length=1, max_length=10, description="1-10 http(s) URLs the crawl starts from.")
    scope: Literal["path", "host", "domain"] = Field(
        "path", description="path: a seed's host and the folder of its path (https://h/docs/ reaches "
                            "https://h/docs/...; say host to crawl the whole host); host: a seed's host; "
                            "domain: a seed's host and its subdomains.")
    include: list[str] = Field(default_factory=list, max_length=MAX_PATTERNS,
                               description="Regular expressions (RE2 syntax, matched anywhere in the URL): when "
                                           "given, only URLs matching one are crawled.")
    exclude: list[str] = Field(default_factory=list, max_length=MAX_PATTERNS,
                               description="Regular expressions (RE2 syntax): URLs matching one are not crawled.")
    sitemap: str = Field("auto", max_length=2048,
                         description="auto: robots.txt's Sitemap lines, else /sitemap.xml (indexes followed); "
                                     "off; or a sitemap's URL.")
    max_pages: int = Field(500, ge=1, description="The most pages one crawl lists (at most WEB_MAX_PAGES_PER_RUN).")
    max_depth: int | None = Field(None, ge=0, le=100, description="The most links from a seed (none: no limit).")
    rate_limit: int = Field(60, ge=1, description="Requests a minute to one host (at most the operator's ceiling, "
                                                  "WEB_MAX_RATE_PER_MINUTE); a slower robots.txt Crawl-delay wins.")
    follow_documents: bool = Field(True, description="Fetch the PDF, Office and text files pages link to, in "
                                                     "scope, as documents of their own.")

    @field_validator("seed_urls")
    @classmethod
    def _seeds(cls, value: list[str]) -> list[str]:
        out = []
        for i, url in enumerate(value):
            c = canonical(url)
            if c is None or not url.strip().lower().startswith(("http://", "https://")):
                raise ValueError(f"seed_urls[{i}] must be an http(s) URL without a user name or password")
            out.append(c)
        return out

    @field_validator("include", "exclude")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        for i, pattern in enumerate(value):
            try:
                compile_pattern(pattern)
            except PatternError as exc:
                raise ValueError(f"pattern {i + 1}: {exc}") from None
        return value

    @field_validator("sitemap")
    @classmethod
    def _sitemap(cls, value: str) -> str:
        if value in ("auto", "off"):
            return value
        c = canonical(value)
        if c is None:
            raise ValueError("sitemap is auto, off or an http(s) URL")
        return c


class WebConnector(Connector):
    CONNECTOR_TYPE = "web"
    TITLE = "Web site"
    CONFIG_MODEL = WebConfig
    SECRET_KIND: ClassVar[str | None] = None
    CHANGE_SIGNAL = ("the sitemap's lastmod and a conditional request (ETag / Last-Modified: a 304 fetches nothing); "
                     "after a download, the hash of the page's extracted text, not of its markup")

    def __init__(self, config: WebConfig, settings: SyncContextSettings, state: Mapping[str, Any], *,
                 resolve: Resolver = resolve_host, fetcher: Fetcher | None = None) -> None:
        self.config = config
        self.settings = settings
        self.state = dict(state)
        self.resolve = resolve
        from sluice.sync.connectors.web.fetcher import Fetcher

        self.fetcher = fetcher or Fetcher(
            sync_policy(settings), user_agent=settings.web_user_agent, max_bytes=settings.max_upload_bytes,
            rate_per_minute=min(config.rate_limit, settings.web_max_rate_per_minute), resolve=resolve)

    @classmethod
    def check(cls, model: BaseModel, settings: SyncContextSettings) -> ConfigRefusal | None:
        assert isinstance(model, WebConfig)
        policy = sync_policy(settings)
        for i, url in enumerate(model.seed_urls):
            problem = url_problem_for_source(url, policy)
            if problem:
                return ConfigRefusal(problem, f"seed_urls[{i}]")
        if model.sitemap not in ("auto", "off"):
            problem = url_problem_for_source(model.sitemap, policy)
            if problem:
                return ConfigRefusal(problem, "sitemap")
        if model.max_pages > settings.web_max_pages_per_run:
            return ConfigRefusal(f"At most {settings.web_max_pages_per_run} pages a run in this deployment "
                                 "(WEB_MAX_PAGES_PER_RUN).", "max_pages")
        if model.rate_limit > settings.web_max_rate_per_minute:
            return ConfigRefusal(f"At most {settings.web_max_rate_per_minute} requests a minute to one host in this "
                                 "deployment (WEB_MAX_RATE_PER_MINUTE).", "rate_limit")
        return None

    @classmethod
    def open(cls, config: BaseModel, credential: str | None, *, external_id: str, settings: SyncContextSettings,
             client_factory: Any, state: Mapping[str, Any]) -> WebConnector:
        assert isinstance(config, WebConfig)
        if credential is not None:
            raise SourceRefused("A web source takes no secret; remove its secret_id.")
        return cls(config, settings, state)

    def crawl(self, limit: int | None = None) -> Crawl:
        from sluice.sync.connectors.web.crawl import Crawl, load_state

        c = self.config
        return Crawl(seeds=c.seed_urls, scope=ScopeRule(c.scope, tuple(c.seed_urls)),
                     patterns=Patterns.of(c.include, c.exclude), sitemap=c.sitemap,
                     max_pages=min(c.max_pages, limit or c.max_pages, self.settings.web_max_pages_per_run),
                     max_depth=c.max_depth, follow_documents=c.follow_documents,
                     user_agent=self.settings.web_user_agent, fetcher=self.fetcher, known=load_state(self.state),
                     seconds=self.settings.web_step_seconds)

    def list_files(self, limit: int | None = None) -> RemoteListing:
        listing = self.crawl(limit).run()
        assert listing is not None  # without a journal a crawl is one step, cut at its time limit
        return listing

    def list_step(self, limit: int | None, journal: ListingJournal) -> RemoteListing | None:
        return self.crawl(limit).run(journal)

    def transfer(self) -> tuple[int, int] | None:
        return self.fetcher.totals.requests, self.fetcher.totals.bytes

    def _fetch(self, file: RemoteFile, target: Path, max_bytes: int) -> None:
        from sluice.sync.connectors.web.crawl import recall
        from sluice.sync.connectors.web.extract import parse
        from sluice.sync.connectors.web.fetcher import Refused, Unreachable

        data = recall(file.source_path, file.etag)
        if data is None:
            self._share_the_rate()
            try:
                resp = self.fetcher.get(file.source_path, max_bytes=max_bytes)
            except (Refused, Unreachable) as exc:
                raise SourceRefused(str(exc)) from exc
            if resp.status != 200:
                raise SourceRefused(f"HTTP {resp.status}")
            data = resp.body
            if file.key.endswith(".md") and not resp.too_large and not data.lstrip().startswith(b"%PDF"):
                data = parse(data, file.source_path).text.encode()
        target.write_bytes(data[: max_bytes + 1])

    def _share_the_rate(self) -> None:
        """A fetch step's pace: its share of the source's rate, and of each host's Crawl-delay as the
        crawl read it (kept in the state), since the Map fetches BATCHES_AT_ONCE batches at once."""
        rate = min(self.config.rate_limit, self.settings.web_max_rate_per_minute)
        self.fetcher.interval = max(self.fetcher.interval, 60.0 * BATCHES_AT_ONCE / rate)
        delays = self.state.get("delays")
        if isinstance(delays, dict):
            for host, seconds in delays.items():
                if isinstance(seconds, int | float) and host not in self.fetcher.delays:
                    self.fetcher.delays[str(host)] = min(float(seconds), 60.0) * BATCHES_AT_ONCE

    def describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, SourceRefused):
            return str(exc)
        return type(exc).__name__
