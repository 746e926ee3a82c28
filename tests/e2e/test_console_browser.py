"""The console in a real browser (R-UI-1, R-UI-2): Debian's Chromium, driven by Playwright, through the
local stack. Each journey saves a screenshot in its tmp_path; axe-core checks every screen (no serious
or critical violation) and Tab reaches every control. Nothing a document holds becomes HTML."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import httpx
import pytest

from tests.e2e.console_support import (
    Watched,
    axe_violations,
    browser_fixture,  # noqa: F401 - the module's browser
    file_transfer,
    keyboard_unreachable,
    text_transfer,
    watch,
)
from tests.e2e.sync_support import make_secret
from tests.e2e.test_upload_to_search import wait_done

pytestmark = pytest.mark.e2e

ORG = "acme-console"
WRITER = ["collections:view", "collections:edit", "secrets:view"]  # secrets:view: a sync source's credential
PLANTED = "The lighthouse keeper stores the brass spare lenses in the blue trunk under the stairs."
XSS_NAME = "<img src=x onerror=alert(1)>.pdf"
SCRIPT_CHUNK = "<script>alert('chunk')</script> The harbour master signs every manifest twice."


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def sign_in(w: Watched, api_url: str, token: str) -> None:
    w.page.goto(f"{api_url}/console#token={token}")
    w.page.get_by_role("heading", name="Knowledge bases").wait_for()


def shot(w: Watched, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    w.page.screenshot(path=str(path), full_page=True)
    return path


def assert_accessible(w: Watched, screen: str) -> None:
    assert axe_violations(w.page) == [], screen
    assert keyboard_unreachable(w.page) == [], screen


def long_text(paragraphs: int) -> str:
    words = ["river", "ledger", "copper", "window", "meadow", "lantern", "harbour", "signal", "orchard", "quarry"]
    return "\n\n".join(f"Section {i}. " + " ".join(words[(i + j) % 10] for j in range(160)) + "."
                       for i in range(paragraphs))


@pytest.fixture
def writer(runtime, make_token):
    user = f"cw_{uuid.uuid4().hex[:6]}"
    token = make_token(user, ORG, WRITER)
    api = httpx.Client(base_url=runtime.api_url, timeout=60, headers={"Authorization": f"Bearer {token}"})
    yield user, token, api
    api.close()


def test_the_page_is_served_with_strict_headers_and_the_sign_in_link_clears_its_token(runtime, browser, writer,
                                                                                          tmp_path):
    page_answer = httpx.get(f"{runtime.api_url}/console")
    assert page_answer.status_code == 200
    csp = page_answer.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert page_answer.headers["x-content-type-options"] == "nosniff"
    assert page_answer.headers["cache-control"] == "no-store"
    asset = re.search(r'src="(/console/assets/[^"]+\.js)"', page_answer.text)
    assert asset is not None
    hashed = httpx.get(f"{runtime.api_url}{asset.group(1)}", headers={"accept-encoding": "gzip"})
    assert hashed.status_code == 200 and "immutable" in hashed.headers["cache-control"]
    assert hashed.headers["content-encoding"] == "gzip"
    assert httpx.get(f"{runtime.api_url}/console/assets/..%2F..%2Fapp.py").status_code == 404

    user, token, _ = writer
    w = watch(browser, runtime.api_url)
    w.page.goto(f"{runtime.api_url}/console")
    w.page.get_by_role("heading", name="Sign in to Sluice").wait_for()
    shot(w, tmp_path, "sign-in")
    assert_accessible(w, "sign-in")

    sign_in(w, runtime.api_url, token)
    assert token not in w.page.url and "token=" not in w.page.url
    assert w.page.evaluate("JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie").find(
        token) == -1
    assert w.page.get_by_text(user).is_visible()
    shot(w, tmp_path, "signed-in")
    assert w.csp_violations() == [] and w.errors == []


def test_on_aws_it_signs_in_by_authorization_code_with_pkce_and_keeps_the_token_in_memory(runtime, browser,
                                                                                           make_token, tmp_path):
    """The identity provider is played by routes in the browser (no network): the page is the served
    one, told an issuer and a client id as ConsoleFunction tells it on AWS, its policy allowing that
    issuer. A fresh load signs in silently (prompt=none); the code is exchanged with the verifier whose
    S256 challenge went to the authorization endpoint; the state is checked; the code leaves the URL."""
    issuer, client_id = "https://idp.example.test/realm", "sluice-console"
    token = make_token(f"oidc_{uuid.uuid4().hex[:6]}", ORG, WRITER)
    seen: dict[str, Any] = {}
    w = watch(browser, runtime.api_url)
    page = w.page
    cors = {"access-control-allow-origin": "*"}

    def console_page(route: Any) -> None:
        served = route.fetch()
        config = html.escape(json.dumps({"issuer": issuer, "client_id": client_id, "max_upload_bytes": 1,
                                         "direct_upload_max_bytes": 1}), quote=True)
        body = re.sub(r'(<meta name="sluice-console" content=")[^"]*', lambda m: m.group(1) + config, served.text())
        headers = dict(served.headers)
        headers["content-security-policy"] = headers["content-security-policy"].replace(
            "connect-src 'self'", "connect-src 'self' https://idp.example.test")
        headers.pop("content-encoding", None)
        route.fulfill(status=200, headers=headers, body=body)

    def authorize(route: Any) -> None:
        query = parse_qs(urlsplit(route.request.url).query)
        seen["authorize"] = query
        back = html.escape(f"{query['redirect_uri'][0]}?code=the-code&state={query['state'][0]}", quote=True)
        # Back by a new navigation (Playwright routes a redirect's first request only).
        route.fulfill(status=200, content_type="text/html",
                      body=f'<meta http-equiv="refresh" content="0;url={back}">')

    def exchange(route: Any) -> None:
        form = parse_qs(route.request.post_data or "")
        seen["token"] = form
        verifier = form["code_verifier"][0].encode()
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
        if challenge == seen["authorize"]["code_challenge"][0] and form["code"] == ["the-code"]:
            route.fulfill(status=200, headers=cors, json={"access_token": token, "token_type": "Bearer"})
        else:
            route.fulfill(status=400, headers=cors, json={"error": "invalid_grant"})

    page.route(re.compile(r"^[^?#]*/console(\?.*)?$"), console_page)
    page.route(f"{issuer}/.well-known/openid-configuration", lambda r: r.fulfill(status=200, headers=cors, json={
        "issuer": issuer, "authorization_endpoint": f"{issuer}/authorize", "token_endpoint": f"{issuer}/token"}))
    page.route(re.compile(re.escape(f"{issuer}/authorize") + r"\?.*"), authorize)
    page.route(f"{issuer}/token", exchange)

    page.goto(f"{runtime.api_url}/console")
    page.get_by_role("heading", name="Knowledge bases").wait_for()
    asked = seen["authorize"]
    assert asked["prompt"] == ["none"] and asked["code_challenge_method"] == ["S256"]
    assert asked["client_id"] == [client_id] and asked["redirect_uri"] == [f"{runtime.api_url}/console"]
    assert seen["token"]["grant_type"] == ["authorization_code"] and seen["token"]["client_id"] == [client_id]
    assert "code=" not in page.url and "state=" not in page.url
    stored = page.evaluate("JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie")
    assert token not in stored and "verifier" not in stored
    shot(w, tmp_path, "oidc-signed-in")
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="Sign in with your identity provider").wait_for()
    assert w.csp_violations() == [] and w.errors == []


def test_create_a_base_drop_three_files_watch_one_index_and_search_it(runtime, browser, writer, tmp_path):
    _, token, api = writer
    w = watch(browser, runtime.api_url)
    sign_in(w, runtime.api_url, token)
    page = w.page
    assert_accessible(w, "bases")

    page.get_by_role("button", name="New knowledge base").click()
    name = f"Console base {uuid.uuid4().hex[:6]}"
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Scope").select_option("org")
    shot(w, tmp_path, "create-base")
    assert_accessible(w, "create base")
    page.get_by_role("button", name="Create").click()
    page.get_by_role("heading", name=name).wait_for()
    kb_id = page.url.rsplit("/", 1)[-1]

    # A drag of text or a link is the browser's: no overlay.
    page.dispatch_event("body", "dragenter", {"dataTransfer": text_transfer(page, "just some words")})
    assert page.locator(".overlay").count() == 0
    big = (PLANTED + "\n\n" + long_text(100)).encode()
    # broken.pdf is over the direct-upload limit (4 MB): it goes by presigned POST straight to the bucket.
    files = file_transfer(page, [
        ("planted.md", big, "text/markdown"),
        ("notes.txt", b"A short note about the harbour.", "text/plain"),
        ("broken.pdf", b"%PDF-1.7 but nothing of a PDF follows" + b"\0" * (4_500_000), "application/pdf"),
    ])
    page.dispatch_event("body", "dragenter", {"dataTransfer": files})
    overlay = page.locator(".overlay")
    assert "50 MB" in overlay.inner_text()  # the limit, stated before the drop
    shot(w, tmp_path, "drop-overlay")
    page.dispatch_event("body", "drop", {"dataTransfer": files})
    assert page.locator(".overlay").count() == 0

    # The big one goes parsing → embedding n/m → done, as the page shows it (polled, not pushed).
    row = page.locator("tr.doc", has_text="planted.md")
    seen: list[str] = []
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        if row.count():
            stage = row.locator("td.stage").inner_text().strip()
            if not seen or seen[-1] != stage:
                seen.append(stage)
                if re.match(r"embedding \d+/\d+", stage):
                    shot(w, tmp_path, "embedding-progress")
            if stage == "done":
                break
        time.sleep(0.2)
    assert seen and seen[-1] == "done", seen
    assert any(re.fullmatch(r"embedding \d+/\d+", s) for s in seen), seen

    failed = page.locator("tr.doc", has_text="broken.pdf")
    failed.locator("p.error").wait_for()
    sentence = api.get(f"/kb/{kb_id}/documents", params={"status": "error"}).json()["documents"][0]["error_message"]
    assert failed.locator("p.error").inner_text() == sentence
    page.locator("tr.doc", has_text="notes.txt").locator(".badge.done").wait_for()
    assert any(r.startswith(runtime.moto_url) for r in w.requests)  # the presigned POST, from the page
    # A long paste outside a form field becomes a .txt document (seed 000).
    page.evaluate("""(text) => {
        const dt = new DataTransfer();
        dt.setData('text/plain', text);
        document.body.dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt, bubbles: true}));
    }""", "Pasted minutes of the harbour board. " * 80)
    pasted = page.locator("tr.doc", has_text=re.compile(r"pasted-.*\.txt"))
    pasted.locator(".badge.done").wait_for(timeout=60_000)
    shot(w, tmp_path, "documents")
    assert_accessible(w, "documents")

    # The status tabs ask the server: the failed one alone; Retry runs its pipeline again (R-DOC-5): a
    # file that arrived and could not be read is kept, so the Retry the page offers is accepted.
    page.get_by_role("button", name=re.compile("^Failed")).click()
    expect(page.locator("tr.doc")).to_have_count(1)
    assert page.locator("tr.doc").inner_text().startswith("broken.pdf")
    broken_id = api.get(f"/kb/{kb_id}/documents", params={"status": "error"}).json()["documents"][0]["id"]
    with page.expect_response(lambda r: r.url.endswith(f"/rag/documents/{broken_id}/retry")) as answer:
        page.locator("tr.doc").get_by_role("button", name="Retry").click()
    assert answer.value.status == 202
    assert api.get(f"/rag/documents/{broken_id}").json()["attempt"] == 2

    page.get_by_role("link", name="Search").click()
    page.get_by_label("Query").fill("where are the brass spare lenses kept")
    page.get_by_role("button", name="Search").click()
    first = page.locator("li.result").first
    first.wait_for()
    assert PLANTED in first.inner_text()
    shot(w, tmp_path, "search")
    assert_accessible(w, "search")

    page.get_by_label("Diagnostic").check()
    page.get_by_label("alpha").fill("0.5")
    page.get_by_role("button", name="Search").click()
    table = page.locator("table.diagnostic")
    table.wait_for()
    head = table.locator("thead").inner_text()
    for column in ("Gate", "Found by", "Vector (raw / norm)", "Text (raw / norm)"):
        assert column in head
    assert "passed" in table.locator("tbody tr").first.inner_text()
    assert "alpha 0.500" in page.locator("section", has=table).inner_text()
    shot(w, tmp_path, "diagnostic")
    assert_accessible(w, "diagnostic")
    assert w.csp_violations() == [] and w.errors == [] and w.dialogs == []


def test_a_sync_source_is_reviewed_before_it_is_saved_then_run(runtime, browser, writer, tmp_path):
    _, token, api = writer
    kb = api.post("/kb", json={"name": f"Synced {uuid.uuid4().hex[:6]}", "scope": "org"}).json()
    secret = make_secret(runtime, ORG)
    bucket = f"console-{uuid.uuid4().hex[:10]}"
    s3 = boto3.client("s3", endpoint_url=runtime.moto_url, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="reports/q3.md", Body=b"# Q3\n\nThe third quarter closed above plan.")
    s3.put_object(Bucket=bucket, Key="reports/tool.exe", Body=b"MZ not a document")
    w = watch(browser, runtime.api_url)
    sign_in(w, runtime.api_url, token)
    page = w.page
    page.goto(f"{runtime.api_url}/console#/kb/{kb['id']}/sync")
    page.get_by_role("button", name="New sync source").click()
    page.get_by_label("Name", exact=True).fill("Reports bucket")
    page.locator("select[name=connector]").select_option("s3")  # the listing holds several connectors
    # The connector's form comes from its config schema: the S3 connector's bucket field is required.
    page.get_by_label(re.compile(r"^Bucket \(required\)")).fill(bucket)
    page.get_by_label(re.compile(r"^Prefix")).fill("reports/")
    page.get_by_label(re.compile(r"^Credential")).fill(secret)
    page.get_by_role("button", name="Review").click()
    body = {"name": "Reports bucket", "connector": "s3", "config": {"bucket": bucket, "prefix": "reports/"},
            "secret_id": secret, "sync_mode": "full"}
    preview = api.post(f"/kb/{kb['id']}/sync-sources/preview", json=body)
    save = page.get_by_role("button", name="Save this source")
    save.wait_for()
    if preview.status_code == 200:  # R-SYNC-8's sentence, in the API's words, before saving
        assert page.locator(".audience").inner_text() == preview.json()["sentence"]
    else:  # an API without the preview route: nothing is said, nothing invented
        assert preview.status_code == 404 and page.locator(".audience").count() == 0
    shot(w, tmp_path, "sync-review")
    assert_accessible(w, "sync form")

    save.click()
    page.get_by_role("heading", name="Runs").wait_for()
    page.get_by_role("button", name="Run now").click()
    run_link = page.locator("table.list tbody tr a").first
    run_link.wait_for()
    expect(page.locator("table.list tbody tr").first).to_contain_text("succeeded", timeout=60_000)
    shot(w, tmp_path, "sync-runs")
    assert_accessible(w, "sync runs")
    run_link.click()
    report = page.locator("table.list tbody")
    expect(report).to_contain_text("reports/tool.exe")
    rows = {r.locator("td").nth(0).inner_text(): r.locator("td").nth(2).inner_text()
            for r in report.locator("tr").all()}
    (run,) = api.get(f"/kb/{kb['id']}/sync-sources").json()["sources"]
    latest = api.get(f"/kb/{kb['id']}/sync-sources/{run['id']}/logs").json()["runs"][0]
    listed = api.get(f"/rag/sync/logs/{latest['id']}/files").json()["files"]
    files = {f["source_path"]: f["reason"] or "" for f in listed}
    (tool,) = [path for path in files if path.endswith("reports/tool.exe")]
    assert rows == files and files[tool]  # each file's reason, as the API gives it
    shot(w, tmp_path, "sync-report")
    assert_accessible(w, "sync report")


def test_deleting_a_base_shows_its_teardown_receipt(runtime, browser, writer, tmp_path):
    _, token, api = writer
    kb = api.post("/kb", json={"name": f"Doomed {uuid.uuid4().hex[:6]}", "scope": "org"}).json()
    doc = api.post(f"/kb/{kb['id']}/documents", files={"file": ("gone.md", b"# Gone\n\nSoon deleted.")}).json()
    assert wait_done(api, doc["id"])["status"] == "done"
    w = watch(browser, runtime.api_url)
    sign_in(w, runtime.api_url, token)
    page = w.page
    page.goto(f"{runtime.api_url}/console#/kb/{kb['id']}")
    page.locator("tr.doc").first.wait_for()
    page.get_by_role("button", name="Delete this knowledge base").click()
    page.get_by_role("button", name="Yes").click()
    page.get_by_role("heading", name=re.compile("^Teardown of")).wait_for()
    receipt = page.locator(".receipt")
    receipt.locator(".badge.done").wait_for(timeout=60_000)
    text = receipt.inner_text()
    assert re.search(r"Documents removed\s+1", text) and kb["name"] in text
    shot(w, tmp_path, "teardown-receipt")
    assert_accessible(w, "teardown receipt")
    assert api.get(f"/kb/{kb['id']}").status_code == 404


def test_a_reader_of_an_org_base_sees_no_upload_or_delete_control(runtime, browser, writer, make_token, tmp_path):
    _, _, api = writer
    kb = api.post("/kb", json={"name": f"Shared {uuid.uuid4().hex[:6]}", "scope": "org"}).json()
    doc = api.post(f"/kb/{kb['id']}/documents", files={"file": ("handbook.md", b"# Handbook\n\nRead me.")}).json()
    assert wait_done(api, doc["id"])["status"] == "done"
    reader = make_token(f"reader_{uuid.uuid4().hex[:6]}", ORG, ["collections:view"])
    w = watch(browser, runtime.api_url)
    sign_in(w, runtime.api_url, reader)
    page = w.page
    page.goto(f"{runtime.api_url}/console#/kb/{kb['id']}")
    page.locator("tr.doc").first.wait_for()
    assert page.locator("input[type=file]").count() == 0
    assert page.get_by_role("button", name=re.compile("Delete|Retry")).count() == 0
    page.dispatch_event("body", "dragenter", {"dataTransfer": file_transfer(page, [("x.txt", b"x", "text/plain")])})
    assert page.locator(".overlay").count() == 0
    assert "read only" in page.locator(".meta").inner_text()
    assert page.get_by_role("link", name="Sync sources").count() == 0
    shot(w, tmp_path, "reader")
    assert_accessible(w, "reader's documents")
    # A 404 from the API is shown as its sentence.
    page.goto(f"{runtime.api_url}/console#/kb/{uuid.uuid4()}")
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert alert.inner_text() == httpx.get(f"{runtime.api_url}/kb/{uuid.uuid4()}", headers={
        "Authorization": f"Bearer {reader}"}).json()["error"]["message"]


def test_what_a_document_holds_renders_as_text(runtime, browser, writer, tmp_path):
    _, token, api = writer
    kb = api.post("/kb", json={"name": f"Hostile {uuid.uuid4().hex[:6]}", "scope": "org"}).json()
    bad = api.post(f"/kb/{kb['id']}/documents", files={"file": (XSS_NAME, b"%PDF-1.7 not really")}).json()
    good = api.post(f"/kb/{kb['id']}/documents", files={"file": ("manifest.md", SCRIPT_CHUNK.encode())}).json()
    wait_done(api, bad["id"])
    assert wait_done(api, good["id"])["status"] == "done"
    w = watch(browser, runtime.api_url)
    sign_in(w, runtime.api_url, token)
    page = w.page
    page.goto(f"{runtime.api_url}/console#/kb/{kb['id']}")
    stored_name = api.get(f"/rag/documents/{bad['id']}").json()["filename"]
    row = page.locator("tr.doc", has_text=stored_name)
    row.wait_for()
    assert row.locator("td.filename span").first.inner_text() == stored_name
    page.locator("tr.doc", has_text="manifest.md").get_by_role("button", name="Preview").click()
    pre = page.locator("tr.preview pre")
    pre.wait_for()
    assert "<script>alert('chunk')</script>" in pre.inner_text()
    page.get_by_role("link", name="Search").click()
    page.get_by_label("Query").fill("harbour master manifest")
    page.get_by_role("button", name="Search").click()
    page.locator("li.result").first.wait_for()
    assert "<script>" in page.locator("li.result").first.inner_text()
    shot(w, tmp_path, "hostile")
    assert page.locator("main img, main script").count() == 0
    assert w.dialogs == [] and w.foreign_requests(set()) == [] and w.errors == []


def test_the_private_pool_shows_its_cap_and_shares_with_users(runtime, browser, writer, make_token, tmp_path):
    user, token, _ = writer
    w = watch(browser, runtime.api_url)
    sign_in(w, runtime.api_url, token)
    page = w.page
    page.get_by_role("link", name="My private pool").click()
    page.get_by_role("heading", name="Cap and limits").wait_for()
    text = page.locator("section", has_text="Cap and limits").inner_text()
    assert "Documents a private pool may hold" in text
    colleague = f"colleague_{uuid.uuid4().hex[:6]}"
    page.set_input_files("input[name=file]", files=[{"name": "brief.md", "mimeType": "text/markdown",
                                                      "buffer": b"# Brief\n\nFor the two of us."}])
    page.get_by_label("Recipients").fill(colleague)
    page.get_by_role("button", name="Share").click()
    page.get_by_text(f"brief.md was shared with {colleague}.").wait_for()
    shot(w, tmp_path, "pool")
    assert_accessible(w, "private pool")
    theirs = httpx.get(f"{runtime.api_url}/pools/documents", headers={
        "Authorization": f"Bearer {make_token(colleague, ORG, WRITER)}"}).json()
    assert [(d["filename"], d["shared_by"]) for d in theirs["documents"]] == [("brief.md", user)]


def test_deleting_the_whole_collection_asks_first_then_removes_every_base_on_it(runtime, browser, writer, tmp_path):
    """Two bases share one collection name; "Delete the whole collection" from one of them asks, a No
    changes nothing, a Yes sends DELETE /rag/collections/{name} (R-TD-1), the receipt names both bases,
    and the list of bases no longer shows either."""
    _, token, api = writer
    collection = f"shared_{uuid.uuid4().hex[:8]}"
    names = [f"Twin {n} {uuid.uuid4().hex[:6]}" for n in ("one", "two")]
    twins = []
    for name in names:
        resp = api.post("/kb", json={"name": name, "scope": "org", "collection_name": collection})
        assert resp.status_code == 201, resp.text
        twins.append(resp.json())
    survivor = api.post("/kb", json={"name": f"Survivor {uuid.uuid4().hex[:6]}", "scope": "org"}).json()
    for kb in twins:
        doc = api.post(f"/kb/{kb['id']}/documents", files={"file": ("twin.md", b"# Twin\n\nSoon deleted.")}).json()
        assert wait_done(api, doc["id"])["status"] == "done"
    w = watch(browser, runtime.api_url)
    sign_in(w, runtime.api_url, token)
    page = w.page
    page.goto(f"{runtime.api_url}/console#/kb/{twins[0]['id']}")
    page.locator("tr.doc").first.wait_for()

    # The confirm step says what goes; No leaves everything as it was.
    page.get_by_role("button", name="Delete the whole collection").click()
    question = page.get_by_role("group", name=f"Delete every base on the collection {collection}?")
    question.wait_for()
    shot(w, tmp_path, "collection-confirm")
    assert_accessible(w, "delete collection confirm")
    question.get_by_role("button", name="No").click()
    expect(question).to_have_count(0)
    assert not [u for u in w.requests if "/rag/collections/" in u]
    assert all(api.get(f"/kb/{kb['id']}").status_code == 200 for kb in twins)

    # Yes sends the collection's DELETE and shows its receipt, followed to done.
    page.get_by_role("button", name="Delete the whole collection").click()
    with page.expect_request(lambda r: r.method == "DELETE" and r.url.endswith(f"/rag/collections/{collection}")):
        question.get_by_role("button", name="Yes").click()
    page.get_by_role("heading", name=f"Teardown of {collection}").wait_for()
    receipt = page.locator(".receipt")
    receipt.locator(".badge.done").wait_for(timeout=60_000)
    text = receipt.inner_text()
    assert re.search(r"Documents removed\s+2", text) and all(name in text for name in names), text
    shot(w, tmp_path, "collection-receipt")
    assert_accessible(w, "collection teardown receipt")
    assert all(api.get(f"/kb/{kb['id']}").status_code == 404 for kb in twins)

    # The list of bases, read again, shows neither.
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Knowledge bases").click()
    page.get_by_role("link", name=survivor["name"]).wait_for()
    listed = page.locator("table.list").inner_text()
    assert not any(name in listed for name in names) and collection not in listed
    assert w.csp_violations() == [] and w.errors == [] and w.dialogs == []


def test_retrying_a_runs_failed_files_reruns_them_and_the_page_shows_the_outcome(runtime, browser, writer,
                                                                                  tmp_path):
    """A run whose one file failed (the embedding provider refused it); with the provider back, the run's
    "Retry the failed files" starts a run of that file (POST .../retry-failed), and the source's runs
    show it, in the API's counts: nothing failed."""
    from sluice.errors import EmbeddingAuthenticationError
    from sluice.wiring import stage_context

    _, token, api = writer
    kb = api.post("/kb", json={"name": f"Retried {uuid.uuid4().hex[:6]}", "scope": "org"}).json()
    bucket = f"console-{uuid.uuid4().hex[:10]}"
    s3 = boto3.client("s3", endpoint_url=runtime.moto_url, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="guide.md", Body=b"# Guide\n\nThe vault opens at ten in the morning.")
    source = api.post(f"/kb/{kb['id']}/sync-sources", json={
        "name": "Guides", "connector": "s3", "config": {"bucket": bucket}, "secret_id": make_secret(runtime, ORG),
        "sync_mode": "full"}).json()

    def finished(run_id: str) -> dict:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            run = api.get(f"/rag/sync/logs/{run_id}").json()
            if run["status"] not in ("queued", "running"):
                return dict(run)
            time.sleep(0.3)
        raise AssertionError(f"run {run_id} did not finish")

    class Refusing:
        def __init__(self, inner: Any) -> None:
            self.inner = inner
            self.spec, self.max_input_tokens = inner.spec, inner.max_input_tokens

        def embed_documents(self, texts: list[str]) -> Any:
            raise EmbeddingAuthenticationError("local", "refused")

        def embed_query(self, text: str) -> Any:
            return self.inner.embed_query(text)

    ctx = stage_context()
    real = ctx.embedder_for
    ctx.embedder_for = lambda spec: Refusing(real(spec))
    try:
        started = api.post(f"/kb/{kb['id']}/sync-sources/{source['id']}/run")
        assert started.status_code == 202, started.text
        failed = finished(started.json()["id"])
    finally:
        ctx.embedder_for = real
    assert failed["counts"]["failed"] == 1, failed

    w = watch(browser, runtime.api_url)
    sign_in(w, runtime.api_url, token)
    page = w.page
    page.goto(f"{runtime.api_url}/console#/runs/{failed['id']}")
    report = page.locator("table.list tbody")
    expect(report).to_contain_text("guide.md")
    assert "failed" in report.locator("tr", has_text="guide.md").inner_text()
    shot(w, tmp_path, "sync-run-failed")
    assert_accessible(w, "sync run with a failed file")

    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith(f"/rag/sync/logs/{failed['id']}"
                                                                               "/retry-failed")):
        page.get_by_role("button", name="Retry the failed files").click()
    page.get_by_role("heading", name="Runs").wait_for()
    latest = page.locator("table.list tbody tr").first
    expect(latest).to_contain_text("retry")
    expect(latest).to_contain_text("succeeded", timeout=60_000)
    runs = api.get(f"/kb/{kb['id']}/sync-sources/{source['id']}/logs").json()["runs"]
    retry = runs[0]
    assert (retry["trigger"], retry["retry_of"], retry["status"]) == ("retry", failed["id"], "succeeded"), retry
    assert retry["counts"]["failed"] == 0 and retry["counts"]["new"] + retry["counts"]["updated"] == 1, retry
    cells = [c.inner_text() for c in latest.locator("td").all()]
    columns = ("listed", "new", "updated", "ignored", "failed", "removed")
    assert cells[2:8] == [str(retry["counts"][k]) for k in columns], cells  # the API's counts, as the page shows
    shot(w, tmp_path, "sync-retried")
    assert_accessible(w, "sync runs after a retry")
    (doc,) = api.get(f"/kb/{kb['id']}/documents").json()["documents"]
    assert doc["status"] == "done"
    assert w.csp_violations() == [] and w.errors == [] and w.dialogs == []
