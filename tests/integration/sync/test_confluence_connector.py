"""The confluence connector against a double of the Confluence Cloud REST API v2 (tests/confluence_double.py):
a real HTTP server on loopback, answering in the shapes Atlassian documents. The first tests check the
double itself against the documentation's own examples (quoted); the rest are the connector against it.
There is no local Confluence: this is a double of the documented API, not the real service."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import pytest

from sluice.config import SyncContextSettings
from sluice.outbound import OutboundPolicy
from sluice.parsing.text import read_html
from sluice.retry import RetryPolicy
from sluice.sync.connectors import CONNECTORS, RemoteListing, SourceRefused
from sluice.sync.connectors import confluence as module
from sluice.sync.connectors.confluence import (
    ConfluenceApi,
    ConfluenceConnector,
    ConfluenceError,
    read_credential,
    storage_to_html,
)
from tests.confluence_double import EMAIL, ConfluenceDouble, Space

LOOPBACK = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": "127.0.0.0/8"})
NOBODY = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": ""})

# A page's storage format with what a real space holds: headings, a table, a link, a task list, and macros
# (Confluence's storage format documentation: https://confluence.atlassian.com/doc/confluence-storage-format-790796544.html).
STORAGE = (
    '<ac:structured-macro ac:name="toc" ac:schema-version="1" ac:macro-id="1"><ac:parameter ac:name="maxLevel">3'
    '</ac:parameter></ac:structured-macro>'
    "<h2>Leave policy</h2><p>Every leave request is reviewed by the <strong>lighthouse</strong> desk&nbsp;within "
    "two days.</p>"
    '<ac:structured-macro ac:name="jira" ac:schema-version="1"><ac:parameter ac:name="jqlQuery">project = SECRETPROJ'
    '</ac:parameter></ac:structured-macro>'
    '<ac:structured-macro ac:name="info" ac:schema-version="1"><ac:parameter ac:name="title">Heads up</ac:parameter>'
    "<ac:rich-text-body><p>Carry-over days expire in March.</p></ac:rich-text-body></ac:structured-macro>"
    '<ac:structured-macro ac:name="code" ac:schema-version="1"><ac:parameter ac:name="language">bash</ac:parameter>'
    "<ac:plain-text-body><![CDATA[leave --days 3 < request.txt]]></ac:plain-text-body></ac:structured-macro>"
    '<ac:structured-macro ac:name="html"><ac:plain-text-body><![CDATA[<script>alert(1)</script>]]>'
    "</ac:plain-text-body></ac:structured-macro>"
    '<h3>Contacts</h3><table><tbody><tr><th>Desk</th><th>Room</th></tr><tr><td>HR</td><td>4.12</td></tr></tbody>'
    '</table><p>See <ac:link><ri:page ri:content-title="Travel" /><ac:plain-text-link-body><![CDATA[the travel '
    "page]]></ac:plain-text-link-body></ac:link>.<ac:image><ri:attachment ri:filename=\"chart.png\" /></ac:image>"
    '<ac:emoticon ac:name="smile" /></p>'
    "<ac:task-list><ac:task><ac:task-id>1</ac:task-id><ac:task-status>incomplete</ac:task-status><ac:task-body>"
    "File the form</ac:task-body></ac:task></ac:task-list>"
)


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    """The connector's retry policy, with its waits cut short (a 5xx without Retry-After backs off for seconds)."""
    monkeypatch.setattr(module, "POLICY", RetryPolicy(max_attempts=5, base_delay=0.01, max_delay=0.02,
                                                      total_seconds=10.0))


@pytest.fixture
def double() -> Iterator[ConfluenceDouble]:
    d = ConfluenceDouble()
    yield d
    d.close()


@pytest.fixture
def space(double: ConfluenceDouble) -> Space:
    s = double.space("ENG", "Engineering")
    double.page(s, "Leave", STORAGE)
    double.page(s, "Travel", "<p>Travel is booked through the caravan desk.</p>")
    double.page(double.space("HR"), "Elsewhere", "<p>Another space.</p>")
    return s


def opened(double: ConfluenceDouble, secret: dict | str | None = None, **config) -> ConfluenceConnector:
    cfg = ConfluenceConnector.parse_config({"base_url": double.url, "space_key": "ENG", **config})
    assert ConfluenceConnector.check(cfg, LOOPBACK) is None
    value = json.dumps(secret if secret is not None else double.secret()) if not isinstance(secret, str) else secret
    return ConfluenceConnector.open(cfg, value, external_id="x", settings=LOOPBACK, client_factory=None, state={})


def by_key(listing: RemoteListing) -> dict[str, str | None]:
    return {f.key: f.etag for f in listing.files}


# --- the double, checked against the documentation ---------------------------------------------------------

def test_the_double_pages_as_the_documentation_shows(double, space):
    """developer.atlassian.com/cloud/confluence/rest/v2/intro, "Pagination": "If there are additional pages
    available, the Link header will look like: </wiki/api/v2/pages?limit=5&cursor=<cursor token>>; rel="next"
    ... This relative URL will also be available under the _links.next property of paginated responses."
    The OpenAPI description of the header: "Example response header format: Link:
    </wiki/api/v2/pages?cursor=<opaque cursor token>>; rel="next", <https://site.atlassian.net/wiki>; rel="base"".
    "Get pages in space" (api-group-page): limit "Maximum number of pages per result to return" (default 25,
    at most 250); its 200 example: {"results": [{"id", "status": "current", "title", "spaceId", "parentId",
    "parentType": "page", "position", "authorId", "ownerId", "lastOwnerId"?, "createdAt", "version":
    {"createdAt", "message", "number": 19, "minorEdit", "authorId"}, "body": {"storage": {}, ...}, "_links":
    {"webui", "editui", "tinyui"}}], "_links": {"next", "base"}}."""
    for i in range(3):
        double.page(space, f"Extra {i}", "<p>x</p>")
    auth = (EMAIL, double.token)
    with httpx.Client(base_url=double.url, auth=auth) as c:
        first = c.get(f"/wiki/api/v2/spaces/{space.id}/pages", params={"limit": 2})
        assert first.status_code == 200
        body = first.json()
        assert set(body) == {"results", "_links"} and len(body["results"]) == 2
        page = body["results"][0]
        assert {"id", "status", "title", "spaceId", "parentId", "parentType", "position", "authorId", "ownerId",
                "createdAt", "version", "_links"} <= set(page) and "body" not in page  # no body-format: no body
        assert {"createdAt", "message", "number", "minorEdit", "authorId"} == set(page["version"])
        assert {"webui", "editui", "tinyui"} == set(page["_links"])
        link = first.headers["Link"]
        assert link.startswith("</wiki/api/v2/spaces/") and 'rel="next"' in link and 'rel="base"' in link
        assert first.links["next"]["url"] == body["_links"]["next"] and "cursor=" in body["_links"]["next"]
        second = c.get(body["_links"]["next"])
        assert second.status_code == 200 and second.json()["results"][0]["id"] != page["id"]
        assert c.get(f"/wiki/api/v2/spaces/{space.id}/pages", params={"limit": 251}).status_code == 400
        # "Get page by id" with body-format=storage: the body under body.storage ({"representation", "value"})
        one = c.get(f"/wiki/api/v2/pages/{page['id']}", params={"body-format": "storage"}).json()
        assert one["body"]["storage"]["representation"] == "storage" and "value" in one["body"]["storage"]
        # "Get spaces" filtered by keys: {"results": [{"id", "key", "name", "type", "status", ...}], "_links"}
        spaces = c.get("/wiki/api/v2/spaces", params={"keys": "ENG"}).json()
        assert [s["key"] for s in spaces["results"]] == ["ENG"]
        assert {"id", "key", "name", "type", "status"} <= set(spaces["results"][0])


def test_the_double_refuses_and_throttles_as_documented(double, space):
    """"Basic auth for REST APIs" (developer.atlassian.com/cloud/confluence/basic-auth-for-rest-apis): "curl -D-
    -u fred@example.com:freds_api_token ..." - an email and an API token; "Get page by id" 401: "Returned if the
    authentication credentials are incorrect or missing from the request"; 404: "Returned if the calling user
    does not have permission to view the requested page or the page was not found". "Rate limiting"
    (developer.atlassian.com/cloud/confluence/rate-limiting): "Apps can detect rate limits by checking if the
    HTTP response status code is 429. Any REST API can return a rate limit response. 429 responses may be
    accompanied by the Retry-After header"."""
    with httpx.Client(base_url=double.url) as c:
        assert c.get("/wiki/api/v2/spaces").status_code == 401
        assert c.get("/wiki/api/v2/spaces", auth=(EMAIL, "revoked")).status_code == 401
        assert c.get("/wiki/api/v2/pages/999999", auth=(EMAIL, double.token)).status_code == 404
        double.busy.append(429)
        throttled = c.get("/wiki/api/v2/spaces", auth=(EMAIL, double.token))
        assert throttled.status_code == 429 and throttled.headers["Retry-After"] == "0"


def test_the_double_answers_attachments_and_their_download_redirect(double, space):
    """"Get attachments for page" (api-group-attachment): "Returns the attachments of specific page"; an
    attachment (AttachmentBulk) has "id", "status", "title", "createdAt", "pageId", "mediaType",
    "mediaTypeDescription", "comment", "fileId", "fileSize", "webuiLink", "downloadLink", "version", "_links".
    The download link is relative to the base link (the site's /wiki) and, on Confluence Cloud, redirects to
    Atlassian's media service."""
    page = next(iter(space.pages.values()))
    double.attach(page, "notes.txt", b"attached words")
    with httpx.Client(base_url=double.url, auth=(EMAIL, double.token)) as c:
        atts = c.get(f"/wiki/api/v2/pages/{page.id}/attachments").json()
        att = atts["results"][0]
        assert {"id", "status", "title", "createdAt", "pageId", "mediaType", "mediaTypeDescription", "comment",
                "fileId", "fileSize", "webuiLink", "downloadLink", "version", "_links"} == set(att)
        got = c.get(f"/wiki{att['downloadLink']}")
        assert got.status_code == 302 and got.headers["Location"].startswith(double.media)


# --- the connector --------------------------------------------------------------------------------------

def test_the_listing_is_the_space_pages_with_their_versions_and_no_bodies(double, space, monkeypatch):
    monkeypatch.setattr(module, "PAGE_SIZE", 2)
    for i in range(3):
        double.page(space, f"Runbook {i}", "<p>x</p>")
    conn = opened(double)
    listing = conn.list_files()
    assert listing.complete and listing.problem is None and listing.state is None
    assert by_key(listing) == {"ENG/Leave.html": "v1", "ENG/Travel.html": "v1", "ENG/Runbook 0.html": "v1",
                               "ENG/Runbook 1.html": "v1", "ENG/Runbook 2.html": "v1"}
    leave = next(f for f in listing.files if f.key == "ENG/Leave.html")
    page_id = next(p.id for p in space.pages.values() if p.title == "Leave")
    assert leave.source_path == f"{double.url}/wiki/spaces/ENG/pages/{page_id}"
    # the space by its key, then three pages of the listing, each following the cursor; no body was asked
    listed = [r for r in double.log if r.path.endswith("/pages")]
    assert [r.path for r in double.log][:1] == ["/wiki/api/v2/spaces"] and double.log[0].query["keys"] == ["ENG"]
    assert len(listed) == 3 and all("body-format" not in r.query for r in listed)
    assert [("cursor" in r.query) for r in listed] == [False, True, True]


def test_an_edit_changes_that_page_version_alone_and_a_rename_keeps_its_address(double, space):
    before = opened(double).list_files()
    page = next(p for p in space.pages.values() if p.title == "Travel")
    double.edit(page, "<p>Travel is booked through the compass desk.</p>", title="Travel and expenses")
    after = opened(double).list_files()
    changed = {f.source_path: f.etag for f in after.files}
    assert {f.source_path for f in before.files if changed[f.source_path] != f.etag} == \
        {f"{double.url}/wiki/spaces/ENG/pages/{page.id}"}
    assert "ENG/Travel and expenses.html" in by_key(after)


def test_a_page_is_fetched_as_html_with_its_title_and_headings_and_without_macros(double, space, tmp_path):
    conn = opened(double)
    leave = next(f for f in conn.list_files().files if f.key == "ENG/Leave.html")
    before = len(double.log)
    path = conn.fetch(leave, tmp_path, 1_000_000)
    assert path.name == "Leave.html"
    asked = double.requests(before)
    assert [(r.path.rsplit("/", 2)[-2], r.query.get("body-format")) for r in asked] == [("pages", ["storage"])]
    page = path.read_text()
    assert "<title>Leave</title>" in page and "<h1>Leave</h1>" in page
    assert "<h2>Leave policy</h2>" in page and "<h3>Contacts</h3>" in page
    assert "<th>Desk</th>" in page and "<td>4.12</td>" in page and "<li>File the form</li>" in page
    assert "Carry-over days expire in March." in page  # the text written inside a panel macro is the page's
    assert "<pre>leave --days 3 &lt; request.txt</pre>" in page  # a code block, escaped
    assert "the travel page" in page
    for gone in ("SECRETPROJ", "maxLevel", "Heads up", "bash", "alert", "incomplete", "chart.png", "ac:", "ri:"):
        assert gone not in page, gone
    # and the pipeline's HTML reader reads it as the page's text, title first
    text = read_html(path.read_bytes(), SimpleNamespace(max_chars=100_000)).text  # type: ignore[arg-type]
    assert text.startswith("Leave\nLeave\nLeave policy\nEvery leave request is reviewed by the lighthouse desk")


def test_storage_rendering_is_bounded_and_closes_what_a_page_leaves_open():
    out = storage_to_html("T <x>", "<p>open <strong>bold<p>nested" + "<" * 5000)
    assert "<title>T &lt;x&gt;</title>" in out and out.count("</p>") == 2 and "</strong></p>" in out
    # many unclosed tags and many stray end tags: linear, not one scan of the open tags per end tag
    started = time.monotonic()
    storage_to_html("", "<div>" * 50_000 + "</span>" * 50_000)
    assert time.monotonic() - started < 5
    assert storage_to_html("", '<ac:structured-macro ac:name="toc"/><p>after</p>').count("after") == 1
    # an ADF node in storage format: its content once, not its fallback copy as well
    adf = ('<ac:adf-extension><ac:adf-node type="panel"><ac:adf-attribute key="panel-type">note</ac:adf-attribute>'
           "<ac:adf-content><p>Decisions go here.</p></ac:adf-content></ac:adf-node><ac:adf-fallback><div><p>"
           "Decisions go here.</p></div></ac:adf-fallback></ac:adf-extension>")
    out = storage_to_html("", adf)
    assert out.count("Decisions go here.") == 1 and "panel-type" not in out and "note" not in out


def test_throttling_and_a_bad_moment_are_tried_again_through_the_retry_policy(double, space, monkeypatch):
    double.busy += [429, 503]  # Retry-After: 0
    listing = opened(double).list_files()
    assert listing.complete and len(listing.files) == 2
    assert [r.status for r in double.log[:3]] == [429, 503, 200]
    # the wait is the site's Retry-After, through the one retry policy
    waits: list[float] = []
    monkeypatch.setattr(module, "POLICY", RetryPolicy(max_attempts=5, base_delay=0.01, sleep=waits.append))
    double.busy, double.retry_after = [429], "7"
    assert opened(double).list_files().complete and len(waits) == 1 and 7 <= waits[0] < 7.1
    double.retry_after = "0"
    double.busy += [503] * 5  # a site that stays down: the listing says so, and removes nothing
    down = opened(double).list_files()
    assert not down.complete and down.files == [] and "HTTP503" in (down.problem or "")
    assert "Nothing was removed" in (down.problem or "")


def test_an_expired_or_revoked_token_is_a_listing_that_removes_nothing(double, space):
    double.tokens.clear()  # the token was revoked
    refused = opened(double).list_files()
    assert not refused.complete and refused.files == []
    assert "HTTP401" in (refused.problem or "") and "expired or revoked API token" in (refused.problem or "")
    assert "Nothing was removed" in (refused.problem or "")
    # the credential went to the site alone, as HTTP Basic of the email and the token
    assert all(r.authorized and r.host == "127.0.0.1" for r in double.log)


def test_a_space_that_is_not_there_is_said_and_removes_nothing(double, space):
    listing = opened(double, space_key="NOPE").list_files()
    assert not listing.complete and "no space with the key NOPE" in (listing.problem or "")


def test_a_page_deleted_between_listing_and_fetch_is_a_404_in_words(double, space, tmp_path):
    conn = opened(double)
    travel = next(f for f in conn.list_files().files if f.key == "ENG/Travel.html")
    space.pages = {k: p for k, p in space.pages.items() if p.title != "Travel"}
    with pytest.raises(ConfluenceError) as caught:
        conn.fetch(travel, tmp_path, 1_000_000)
    assert caught.value.code == "HTTP404"
    assert conn.describe_failure(caught.value).startswith("HTTP404: the page or attachment was deleted")


def test_a_cut_listing_is_not_whole(double, space, monkeypatch):
    monkeypatch.setattr(module, "PAGE_SIZE", 1)
    for i in range(4):
        double.page(space, f"Page {i}", "<p>x</p>")
    cut = opened(double, max_pages=3).list_files()
    assert len(cut.files) == 3 and not cut.complete
    assert "cut at 3 files" in (cut.problem or "") and "nothing was removed" in (cut.problem or "")
    assert not opened(double).list_files(limit=2).complete  # SYNC_MAX_KEYS_PER_RUN cuts the same way
    # a page of the listing that fails (after its retries) stops it part-way
    double.fail = lambda path, query: 500 if "cursor" in query else None
    failed = opened(double).list_files()
    assert len(failed.files) == 1 and not failed.complete
    assert "stopped part-way (HTTP500" in (failed.problem or "") and "nothing was removed" in (failed.problem or "")


def test_attachments_are_listed_with_their_versions_and_fetched_without_the_credential_off_site(double, space,
                                                                                              tmp_path):
    leave = next(p for p in space.pages.values() if p.title == "Leave")
    att = double.attach(leave, "handbook.txt", b"The orchard desk answers attachments.\n")
    assert "handbook.txt" not in json.dumps(by_key(opened(double).list_files()))  # off by default
    conn = opened(double, include_attachments=True)
    listing = conn.list_files()
    f = next(f for f in listing.files if f.key.endswith("handbook.txt"))
    assert f.key == "ENG/Leave/handbook.txt" and f.etag == "v1" and f.size == len(att.data)
    assert f.source_path == f"{double.url}/wiki/spaces/ENG/pages/{leave.id}/attachments/{att.id}"
    before = len(double.log)
    path = conn.fetch(f, tmp_path, 1000)
    assert path.read_bytes() == att.data
    hops = double.requests(before)
    assert [(r.host, r.status, r.authorized) for r in hops] == [
        ("127.0.0.1", 200, True), ("127.0.0.1", 302, True), ("localhost", 200, False)]
    # bounded: one byte more than allowed says "too large", and no more is read
    (tmp_path / "small").mkdir()
    assert conn.fetch(f, tmp_path / "small", 5).stat().st_size == 6


def test_a_download_redirected_off_atlassian_is_refused(double, space, tmp_path):
    leave = next(p for p in space.pages.values() if p.title == "Leave")
    double.attach(leave, "a.txt", b"x")
    conn = opened(double, include_attachments=True)
    f = next(f for f in conn.list_files().files if f.key.endswith("a.txt"))
    # the operator listed only the double's address by name: localhost is neither it nor Atlassian's media host
    conn.api._policy = OutboundPolicy(hosts=frozenset({"127.0.0.1"}))
    with pytest.raises(ConfluenceError, match="not Atlassian's"):
        conn.fetch(f, tmp_path, 1000)


def test_a_next_link_that_leaves_the_site_or_the_listing_is_refused():
    def answer(request: httpx.Request) -> httpx.Response:
        nxt = "https://evil.example/wiki/api/v2/spaces" if "evil" in request.url.params.get("q", "") else \
            "/wiki/api/v2/pages?cursor=x"
        return httpx.Response(200, json={"results": [{"id": "1"}], "_links": {"next": nxt}})

    api = ConfluenceApi("https://acme.atlassian.net/wiki", httpx.Client(transport=httpx.MockTransport(answer)),
                        ("a@b.c", "t"), policy=OutboundPolicy())
    for q in ("evil", "other-path"):
        with pytest.raises(ConfluenceError) as caught:
            list(api.pages_of("https://acme.atlassian.net/wiki/api/v2/spaces", {"q": q}))
        assert caught.value.code == "OffSite"


def test_config_refusals_name_their_field():
    def refused(config: dict, settings: SyncContextSettings = NOBODY) -> tuple[str | None, str]:
        r = ConfluenceConnector.validate_config({"space_key": "ENG", **config}, settings)
        assert r is not None, config
        return r.field, r.message

    assert ConfluenceConnector.validate_config({"base_url": "https://acme.atlassian.net", "space_key": "ENG"},
                                               NOBODY) is None
    assert ConfluenceConnector.validate_config({"base_url": "https://acme.atlassian.net/wiki/", "space_key": "~5570"},
                                               NOBODY) is None
    assert refused({"base_url": "https://wiki.example.com"})[0] == "base_url"
    assert refused({"base_url": "https://acme.atlassian.net.example.com"})[0] == "base_url"
    assert refused({"base_url": "http://acme.atlassian.net"})[0] == "base_url"  # https only
    assert refused({"base_url": "http://127.0.0.1:9"})[0] == "base_url"  # nobody listed it
    assert refused({"base_url": "https://user:pw@acme.atlassian.net"})[0] == "base_url"
    assert refused({"base_url": "https://acme.atlassian.net/wiki?x=1"})[0] == "base_url"
    assert refused({"base_url": "https://acme.atlassian.net/confluence"})[0] == "base_url"
    assert refused({"base_url": "https://acme.atlassian.net", "space_key": "ENG,HR"})[0] == "space_key"
    assert refused({"base_url": "https://acme.atlassian.net", "space_key": "a b"})[0] == "space_key"
    assert refused({"base_url": "https://acme.atlassian.net", "max_pages": 0})[0] == "max_pages"
    assert refused({"base_url": "https://acme.atlassian.net", "include_attachments": "maybe"})[0] == \
        "include_attachments"
    assert refused({"base_url": "https://acme.atlassian.net", "api_token": "x"})[0] == "api_token"
    assert refused({"base_url": "https://acme.atlassian.net", "spacekey": "ENG"})[0] == "spacekey"
    assert refused({"space_key": "ENG"})[0] == "base_url"
    # a listed host (a test's double, a proxy) may be plain http and carry its own path
    assert ConfluenceConnector.validate_config({"base_url": "http://127.0.0.1:9/confluence", "space_key": "ENG"},
                                               LOOPBACK) is None
    assert CONNECTORS["confluence"] is ConfluenceConnector and ConfluenceConnector.SECRET_KIND == "atlassian_token"


def test_the_credential_is_an_email_and_an_api_token(double):
    assert read_credential(json.dumps({"email": "a@b.c", "api_token": "t0k"})) == ("a@b.c", "t0k")
    for bad in ("t0k", json.dumps({"email": "a@b.c"}), json.dumps({"email": "nobody", "api_token": "x"}),
                json.dumps({"email": "a@b.c", "api_token": "two words"}), "[]"):
        with pytest.raises(SourceRefused, match="atlassian_token"):
            read_credential(bad)
    cfg = ConfluenceConnector.parse_config({"base_url": double.url, "space_key": "ENG"})
    with pytest.raises(SourceRefused, match="needs its atlassian_token"):
        ConfluenceConnector.open(cfg, None, external_id="x", settings=LOOPBACK, client_factory=None, state={})


def test_an_address_of_another_space_is_not_fetched(double, space, tmp_path):
    from sluice.sync.connectors import RemoteFile

    conn = opened(double)
    with pytest.raises(SourceRefused, match="not a page of this source's space"):
        conn.fetch(RemoteFile("HR/x.html", f"{double.url}/wiki/spaces/HR/pages/1", 0, "v1"), tmp_path, 100)
    assert double.log == []  # nothing was asked
