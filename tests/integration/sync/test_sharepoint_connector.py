"""The sharepoint connector against a double of Microsoft Graph (tests/graph_double.py): a real HTTP
server on loopback answering the documented shapes, since there is no local SharePoint. First, the
double is checked against the provider's documented examples (quoted below, with their pages); then
what the connector asks of it and what it answers. What a run does with these listings (decide by the
change signal, fetch only changed files, remove) is in tests/e2e/test_sync_sharepoint.py."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sluice.config import SyncContextSettings
from sluice.retry import RetryPolicy
from sluice.sync.connectors import CONNECTORS, RemoteFile, SourceRefused
from sluice.sync.connectors.base import cut_at
from sluice.sync.connectors.sharepoint import (
    PACKAGE_NOTE,
    GraphError,
    SharePointConnector,
    read_app,
)
from sluice.sync.outbound import EndpointNotAllowed, sync_policy
from sluice.sync.remote_names import RemoteNameRefused, remote_name
from tests.graph_double import CLIENT_ID, SITE_HOST, SITE_PATH, TENANT, USER, GraphDouble, self_signed

LOOPBACK = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": "127.0.0.0/8"})
NOBODY = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": ""})
SITE = f"https://{SITE_HOST}/{SITE_PATH}"


@pytest.fixture
def graph() -> Iterator[GraphDouble]:
    g = GraphDouble(page_size=2)
    yield g
    g.close()


class Slept(list[float]):
    def policy(self) -> RetryPolicy:
        return RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.02, total_seconds=60, sleep=self.append)


def opened(graph: GraphDouble, state: dict[str, Any] | None = None, secret: dict[str, str] | None = None,
           slept: Slept | None = None, **config: Any) -> SharePointConnector:
    cfg = SharePointConnector.parse_config({"site_url": SITE, **config})
    assert SharePointConnector.check(cfg, LOOPBACK) is None
    c = SharePointConnector.open(cfg, json.dumps(secret or graph.secret()), external_id="x", settings=LOOPBACK,
                                 client_factory=None, state=state or {})
    c.graph._retry = (slept if slept is not None else Slept()).policy()
    return c


def fetched(c: SharePointConnector, f: RemoteFile, tmp: Path, max_bytes: int = 1 << 20) -> bytes:
    return c.fetch(f, tmp, max_bytes).read_bytes()


HANDBOOK = {"Handbook/leave.md": b"# Leave\nAsk the lighthouse desk.\n", "Handbook/travel.md": b"Travel: caravan.\n",
            "Handbook/forms/claim.txt": b"claim form\n", "notes.txt": b"orchard notes\n"}


def fill(graph: GraphDouble, files: dict[str, bytes] = HANDBOOK) -> None:
    for path, content in files.items():
        graph.put(path, content)


# --- the double against the documented examples --------------------------------------------------------------

def keys(value: Any) -> Any:
    """A JSON value's shape: its objects' keys, recursively (a list by its first element)."""
    if isinstance(value, dict):
        return {k: keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [keys(value[0])] if value else []
    return type(value).__name__


def within(documented: Any, answered: Any) -> bool:
    """Whether every key of the documented shape is in the double's answer, with the same shape."""
    if isinstance(documented, dict):
        return isinstance(answered, dict) and all(k in answered and within(v, answered[k])
                                                  for k, v in documented.items())
    if isinstance(documented, list):
        return isinstance(answered, list) and (not documented or not answered or within(documented[0], answered[0]))
    return documented == answered or {documented, answered} <= {"int", "float"}


# https://learn.microsoft.com/en-us/graph/api/driveitem-delta, "Example 1: Initial request", the response:
DELTA_FIRST_PAGE = {"value": [{"id": "0123456789abc", "name": "folder2", "folder": {}},
                              {"id": "123010204abac", "name": "file.txt", "file": {}},
                              {"id": "2353010204ddgg", "name": "file5.txt", "deleted": {}}],
                    "@odata.nextLink": "https://graph.microsoft.com/v1.0/me/drive/delta(token=1230919asd190410jlka)"}
# ... "Example 2: Last page in a set": the last page carries @odata.deltaLink instead of a nextLink.
DELTA_LAST_PAGE = {"value": [{"id": "0123456789abc", "name": "folder2", "folder": {}, "deleted": {}},
                             {"id": "123010204abac", "name": "file.txt", "file": {}}],
                   "@odata.deltaLink": "https://graph.microsoft.com/v1.0/me/drive/root/delta?(token='MzslMjM0')"}
# ... "Example 3: Retrieving the current deltaLink" (?token=latest):
DELTA_LATEST = {"value": [], "@odata.deltaLink": "https://graph.microsoft.com/v1.0/me/drive/root/delta?token=1230919asd"}
# https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-client-creds-grant-flow, "Successful response":
TOKEN_RESPONSE = {"token_type": "Bearer", "expires_in": 3599, "access_token": "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiIs"}
# ... "Error response" (the error and its AADSTS description):
TOKEN_ERROR = {"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided.",
               "error_codes": [7000215]}
# https://learn.microsoft.com/en-us/graph/errors, the error resource ("code", "message"); for an expired
# token Graph answers 401 with code InvalidAuthenticationToken, for a missing item 404 itemNotFound.
GRAPH_ERROR = {"error": {"code": "itemNotFound", "message": "Item not found"}}


def test_the_double_answers_the_documented_shapes(graph):
    fill(graph, {"folder2/file.txt": b"x", "file5.txt": b"y", "folder3/file6.txt": b"z"})
    graph.delete("file5.txt")
    graph.delete("folder3")
    http = httpx.Client(base_url=graph.url, follow_redirects=False)
    token_url = f"/{TENANT}/oauth2/v2.0/token"
    form = {"client_id": CLIENT_ID, "scope": "https://graph.microsoft.com/.default",
            "grant_type": "client_credentials"}
    refused = http.post(token_url, data={**form, "client_secret": "wrong"})
    assert refused.status_code == 401 and within(keys(TOKEN_ERROR), keys(refused.json()))
    granted = http.post(token_url, data={**form, "client_secret": graph.client_secret})
    assert granted.status_code == 200 and within(keys(TOKEN_RESPONSE), keys(granted.json()))
    auth = {"Authorization": f"Bearer {granted.json()['access_token']}"}
    delta = f"/v1.0/drives/{graph.drive_id}/root/delta"

    first = http.get(delta, headers=auth).json()
    assert within(keys({"@odata.nextLink": ""}), keys(first)) and "@odata.deltaLink" not in first
    pages = [first]
    while "@odata.nextLink" in pages[-1]:
        pages.append(http.get(pages[-1]["@odata.nextLink"], headers=auth).json())
    assert "@odata.deltaLink" in pages[-1] and "@odata.nextLink" not in pages[-1]
    items = [i for p in pages for i in p["value"]]
    for documented in DELTA_FIRST_PAGE["value"] + DELTA_LAST_PAGE["value"]:
        facets = {k for k in ("deleted", "file", "folder") if k in documented}
        kind = "deleted" if "deleted" in facets else next(iter(facets))
        answered = next(i for i in items if facets <= set(i) and ("deleted" in i) == ("deleted" in facets))
        # a deleted item in OneDrive for Business carries no name (the page's remarks): the rest is as documented
        assert within({k: v for k, v in keys(documented).items() if not (kind == "deleted" and k == "name")},
                       keys(answered)), (documented, answered)
        assert "path" not in answered.get("parentReference", {})  # delta: "track items by id"
    latest = http.get(delta, params={"token": "latest"}, headers=auth).json()
    assert keys(latest) == keys(DELTA_LATEST) and latest["value"] == []

    missing = http.get(f"/v1.0/drives/{graph.drive_id}/root:/nothing.txt:/content", headers=auth)
    assert missing.status_code == 404 and keys(missing.json()) == keys(GRAPH_ERROR)
    content = http.get(f"/v1.0/drives/{graph.drive_id}/root:/folder2/file.txt:/content", headers=auth)
    assert content.status_code == 302 and http.get(content.headers["location"]).content == b"x"
    graph.expire_tokens()
    expired = http.get(delta, headers=auth)
    assert expired.status_code == 401 and expired.json()["error"]["code"] == "InvalidAuthenticationToken"
    graph.faults.append(__import__("tests.graph_double", fromlist=["Fault"]).Fault("/delta", 429, 1, "3"))
    throttled = http.get(delta, headers=auth)
    assert throttled.status_code == 429 and throttled.headers["retry-after"] == "3"


# --- the listing ---------------------------------------------------------------------------------------------

def test_the_first_listing_enumerates_the_drive_in_delta_pages_and_keeps_the_delta_link(graph):
    fill(graph)
    graph.put("Handbook/old.md", b"gone")
    graph.delete("Handbook/old.md")
    listing = opened(graph, folder="Handbook").list_files()
    assert listing.complete and not listing.unchanged, listing.problem
    assert sorted(f.key for f in listing.files) == ["forms/claim.txt", "leave.md", "travel.md"]
    leave = next(f for f in listing.files if f.key == "leave.md")
    assert leave.source_path == f"sharepoint://{graph.drive_id}/Handbook/leave.md"
    assert leave.size == len(HANDBOOK["Handbook/leave.md"])
    assert leave.etag and leave.etag.startswith("h:")  # Business's delta has no cTag: the file's hash
    assert listing.state and listing.state["delta_link"].startswith(graph.url + "/v1.0/")
    assert len(graph.requests(kind="/delta")) > 3  # several pages of two, each followed by its nextLink
    whole = opened(graph).list_files()
    assert sorted(f.key for f in whole.files) == sorted(HANDBOOK)


def test_the_change_signal_is_the_ctag_where_delta_gives_one(graph):
    graph.business = False
    fill(graph)
    listing = opened(graph).list_files()
    assert {f.etag[:2] for f in listing.files if f.etag} == {"c:"}


def test_an_unchanged_drive_answers_nothing_changed_in_one_graph_request(graph):
    fill(graph)
    first = opened(graph, folder="Handbook").list_files()
    before = len(graph.log)
    second = opened(graph, state=first.state, folder="Handbook").list_files()
    assert second.unchanged and second.complete and second.files == []
    assert second.state and second.state["drive"] == graph.drive_id
    asked = [r.path for r in graph.log[before:]]
    assert asked == [f"/{TENANT}/oauth2/v2.0/token", f"/v1.0/drives/{graph.drive_id}/root/delta"]


def test_a_change_or_a_deletion_enumerates_again_and_a_deleted_file_is_not_listed(graph):
    fill(graph)
    first = opened(graph, folder="Handbook").list_files()
    signals = {f.key: f.etag for f in first.files}
    graph.put("Handbook/travel.md", b"Travel: a greenhouse now.\n")
    graph.delete("Handbook/leave.md")
    again = opened(graph, state=first.state, folder="Handbook").list_files()
    assert again.complete and not again.unchanged
    now = {f.key: f.etag for f in again.files}
    assert sorted(now) == ["forms/claim.txt", "travel.md"]
    assert now["forms/claim.txt"] == signals["forms/claim.txt"] and now["travel.md"] != signals["travel.md"]
    assert again.state and again.state["delta_link"] != first.state["delta_link"]


def test_a_delta_token_the_service_forgot_410_enumerates_again(graph):
    fill(graph)
    first = opened(graph).list_files()
    graph.forgotten_tokens.add(first.state["delta_link"].split("token=")[1])
    again = opened(graph, state=first.state).list_files()
    assert again.complete and not again.unchanged and len(again.files) == 4


def test_another_folder_or_library_does_not_reuse_the_kept_delta_link(graph):
    fill(graph)
    first = opened(graph, folder="Handbook").list_files()
    other = opened(graph, state=first.state, folder="Handbook/forms").list_files()
    assert not other.unchanged and [f.key for f in other.files] == ["claim.txt"]
    assert first.state and first.state["scope"].startswith(f"{TENANT}/{CLIENT_ID}/")  # and by this application


def test_a_user_s_onedrive_and_a_drive_by_id_and_a_named_library_list_the_same_drive(graph):
    fill(graph)
    for config in ({"site_url": None, "user": USER}, {"site_url": None, "drive_id": graph.drive_id},
                   {"library": "Documents"}):
        listing = opened(graph, **config).list_files()
        assert listing.complete and len(listing.files) == 4, (config, listing.problem)
    missing = opened(graph, library="Nope").list_files()
    assert not missing.complete and "no document library of that name" in (missing.problem or "")


def test_a_notebook_is_reported_not_followed_and_a_name_is_a_label(graph):
    graph.put("Team Notebook", b"", kind="package")
    graph.put("odd/..", b"a name no folder may hold")
    listing = opened(graph).list_files()
    notes = {f.key: f.note for f in listing.files}
    assert notes["Team Notebook"] == PACKAGE_NOTE
    with pytest.raises(RemoteNameRefused):
        remote_name("odd/..")  # the run reports it failed, and writes nothing outside its directory
    assert "odd/.." in notes
    c = opened(graph)
    with pytest.raises(GraphError, match="NotAName"):  # nor does it become a dot-segment of a Graph URL
        c._fetch(RemoteFile("odd/..", "sharepoint://x/odd/..", 3, "h:x"), Path("/dev/null"), 10)


# --- whether a listing is whole --------------------------------------------------------------------------------

def test_a_listing_cut_at_the_run_s_limit_or_max_files_is_not_whole_and_keeps_no_delta_link(graph):
    fill(graph)
    cut = opened(graph).list_files(limit=2)
    assert not cut.complete and len(cut.files) == 2 and cut.state is None and cut.problem == cut_at(2)
    capped = opened(graph, max_files=3).list_files()
    assert not capped.complete and "max_files" in (capped.problem or "") and capped.state is None


def test_a_drive_past_the_page_ceiling_is_not_whole(graph, monkeypatch):
    from sluice.sync.connectors import sharepoint

    fill(graph)
    monkeypatch.setattr(sharepoint, "MAX_PAGES", 2)
    listing = opened(graph).list_files()
    assert not listing.complete and listing.state is None and "ran past 2 pages" in (listing.problem or "")


def test_a_page_that_keeps_failing_stops_the_listing_which_removes_nothing(graph):
    from tests.graph_double import Fault

    fill(graph)
    graph.faults.append(Fault("token=page", 500, 99))
    slept = Slept()
    listing = opened(graph, slept=slept).list_files()
    assert not listing.complete and listing.files == [] and listing.state is None
    assert "stopped part-way (HTTP500) after 1 page(s)" in (listing.problem or "")
    assert "nothing was synced or removed" in (listing.problem or "")
    assert len(slept) == 3  # four tries of the page, then the run's sentence


def test_a_next_link_to_another_host_is_not_followed_with_the_token(graph):
    fill(graph)
    graph.link_base = "https://graph.example.net"
    listing = opened(graph).list_files()
    assert not listing.complete and "NotGraphURL" in (listing.problem or "")
    assert not any("example" in r.path for r in graph.log)


# --- throttling and credentials ------------------------------------------------------------------------------

def test_throttling_waits_the_retry_after_and_a_5xx_is_tried_again(graph):
    from tests.graph_double import Fault

    fill(graph)
    graph.faults += [Fault("/delta", 429, 2, "7"), Fault("/root:/Handbook:", 503, 1)]
    slept = Slept()
    listing = opened(graph, slept=slept, folder="Handbook").list_files()
    assert listing.complete and len(listing.files) == 3
    waits = sorted(slept)
    assert len(waits) == 3 and all(7 <= w < 7.2 for w in waits[1:]) and waits[0] < 1  # Retry-After honoured


def test_a_retry_after_longer_than_the_call_may_wait_ends_the_listing_in_words(graph):
    from tests.graph_double import Fault

    fill(graph)
    graph.faults.append(Fault("/delta", 429, 1, "3600"))
    listing = opened(graph).list_files()
    assert not listing.complete and "HTTP429" in (listing.problem or "")


def test_an_expired_access_token_is_asked_for_again_once(graph, tmp_path):
    fill(graph)
    c = opened(graph, folder="Handbook")
    listing = c.list_files()
    graph.expire_tokens()
    leave = next(f for f in listing.files if f.key == "leave.md")
    assert fetched(c, leave, tmp_path) == HANDBOOK["Handbook/leave.md"]
    assert len(graph.requests(kind="/oauth2/v2.0/token")) == 2


def test_a_refused_client_secret_is_a_listing_that_says_so(graph):
    fill(graph)
    listing = opened(graph, secret=graph.secret(client_secret="not-it")).list_files()
    assert not listing.complete and "could not be listed (invalid_client)" in (listing.problem or "")
    assert "not-it" not in (listing.problem or "")


def test_a_certificate_credential_signs_a_ps256_assertion_the_double_verifies(graph):
    cert, key = self_signed()
    graph.certificate_pem = cert
    fill(graph)
    secret = {k: v for k, v in graph.secret().items() if k != "client_secret"}
    listing = opened(graph, secret={**secret, "certificate": cert.decode(), "private_key": key.decode()}).list_files()
    assert listing.complete and len(listing.files) == 4
    header = graph.assertions[-1]["header"]
    assert header["alg"] == "PS256" and "x5t#S256" in header


@pytest.mark.parametrize(("secret", "words"), [
    ("not json", "not a JSON object"),
    (json.dumps({"tenant_id": "x/../y", "client_id": CLIENT_ID, "client_secret": "s"}), "tenant_id"),
    (json.dumps({"tenant_id": TENANT, "client_id": "me", "client_secret": "s"}), "client_id"),
    (json.dumps({"tenant_id": TENANT, "client_id": CLIENT_ID}), "neither a client_secret"),
    (json.dumps({"tenant_id": TENANT, "client_id": CLIENT_ID, "client_secret": "s",
                 "authority": "https://login.example.net"}), "authority: Must be one of the service's own hosts"),
    (json.dumps({"tenant_id": TENANT, "client_id": CLIENT_ID, "client_secret": "s",
                 "graph_endpoint": "http://127.0.0.1:9"}), "graph_endpoint"),
])
def test_a_secret_of_the_wrong_shape_or_for_another_host_is_refused_in_words(secret, words):
    with pytest.raises(SourceRefused) as refused:
        read_app(secret, sync_policy(NOBODY))
    assert words in str(refused.value) and "s\"" not in str(refused.value)


def test_the_documented_hosts_need_no_listing():
    app = read_app(json.dumps({"tenant_id": TENANT, "client_id": CLIENT_ID, "client_secret": "s"}),
                   sync_policy(NOBODY))
    assert app.token_url == f"https://login.microsoftonline.com/{TENANT}/oauth2/v2.0/token"
    assert app.scope == "https://graph.microsoft.com/.default"


# --- downloads --------------------------------------------------------------------------------------------------

def test_a_download_follows_the_302_without_the_token_and_reads_at_most_the_limit(graph, tmp_path):
    fill(graph)
    c = opened(graph, folder="Handbook")
    leave = next(f for f in c.list_files().files if f.key == "leave.md")
    before = len(graph.log)
    assert fetched(c, leave, tmp_path) == HANDBOOK["Handbook/leave.md"]
    hops = graph.log[before:]
    assert [r.path.split("/")[1] for r in hops] == ["v1.0", "download"]
    assert hops[0].authorized and not hops[1].authorized  # the pre-authenticated URL gets no bearer token
    assert len(fetched(c, leave, tmp_path, max_bytes=5)) == 6  # one byte more than allowed says "too large"


def test_a_file_deleted_between_listing_and_download_is_a_404_named_itemNotFound(graph, tmp_path):
    fill(graph)
    c = opened(graph)
    notes = next(f for f in c.list_files().files if f.key == "notes.txt")
    graph.delete("notes.txt")
    with pytest.raises(GraphError) as gone:
        c.fetch(notes, tmp_path, 1 << 20)
    assert c.describe_failure(gone.value) == "itemNotFound"


def test_a_download_redirected_off_sharepoint_is_refused_before_it_connects(graph, tmp_path):
    fill(graph)
    graph.download_base = "https://downloads.example.net"
    c = opened(graph)
    notes = next(f for f in c.list_files().files if f.key == "notes.txt")
    with pytest.raises(EndpointNotAllowed):
        c.fetch(notes, tmp_path, 1 << 20)
    assert not graph.requests(kind="/download/")


# --- the config -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("config", "field"), [
    ({}, "site_url"),
    ({"site_url": SITE, "user": USER}, "user"),
    ({"user": USER, "library": "Documents"}, "library"),
    ({"site_url": "http://contoso.sharepoint.com/sites/x"}, "site_url"),
    ({"site_url": SITE + "?q=1"}, "site_url"),
    ({"site_url": "https://contoso.sharepoint.com/sites/../admin"}, "site_url"),
    ({"site_url": "https://user:pw@contoso.sharepoint.com/sites/x"}, "site_url"),
    ({"drive_id": "b!abc/../../users"}, "drive_id"),
    ({"user": "x') or name eq ('y"}, "user"),
    ({"site_url": SITE, "folder": "Reports/../Secrets"}, "folder"),
    ({"site_url": SITE, "folder": "a:b"}, "folder"),
    ({"site_url": SITE, "max_files": 0}, "max_files"),
    ({"site_url": SITE, "client_secret": "x"}, "client_secret"),
    ({"site_url": SITE, "lists": True}, "lists"),
])
def test_a_config_refusal_names_its_field(config, field):
    refusal = SharePointConnector.validate_config(config, LOOPBACK)
    assert refusal is not None and refusal.field == field, refusal


def test_the_connector_is_registered_with_its_schema_and_secret_kind():
    cls = CONNECTORS["sharepoint"]
    assert cls.SECRET_KIND == "microsoft_app" and not cls.SECRET_OPTIONAL
    props = cls.CONFIG_MODEL.model_json_schema()["properties"]
    assert {"site_url", "library", "user", "drive_id", "folder", "max_files"} <= set(props)
    assert SharePointConnector.validate_config({"site_url": SITE, "folder": "/Handbook/"}, LOOPBACK) is None
    assert SharePointConnector.parse_config({"site_url": SITE, "folder": "/Handbook/"}).folder == "Handbook"


def test_a_source_without_its_secret_is_refused():
    cfg = SharePointConnector.parse_config({"site_url": SITE})
    with pytest.raises(SourceRefused, match="microsoft_app"):
        SharePointConnector.open(cfg, None, external_id="x", settings=LOOPBACK, client_factory=None, state={})


def test_fetch_writes_nothing_for_a_file_the_listing_says_is_too_large(graph, tmp_path):
    c = opened(graph)
    big = RemoteFile("big.bin", "sharepoint://x/big.bin", 10_000, "h:x")
    before = len(graph.log)
    assert len(fetched(c, big, tmp_path, max_bytes=100)) == 101
    assert len(graph.log) == before
    assert io  # noqa: B018
