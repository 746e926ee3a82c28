"""The console's page and assets as ConsoleFunction serves them (R-UI-1): the headers, the names it
answers, the page's sign-in settings, and the bundle's budget (gzip under 250 KB)."""

from __future__ import annotations

import gzip
import html
import json
import re
from pathlib import Path

import pytest

from sluice.api.console import Console, PageConfig, accepts_gzip, content_security_policy, origin

ROOT = Path(__file__).resolve().parents[2]
BUILT = ROOT / "functions" / "console" / "static"
BUDGET_GZIP_BYTES = 250 * 1024
CONFIG = PageConfig(issuer="https://id.example.com/realms/x", client_id="console", max_upload_bytes=50 << 20,
                    direct_upload_max_bytes=4 << 20)


@pytest.fixture
def static(tmp_path: Path) -> Path:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text('<html><head><!--sluice-console-config--><script type="module" '
                                         'src="/console/assets/index-AbCd1234.js"></script></head></html>')
    (tmp_path / "assets" / "index-AbCd1234.js").write_text("console.log('x');" * 200)
    (tmp_path / "app.py").write_text("SECRET = 1")
    return tmp_path


def console(static: Path, config: PageConfig = CONFIG) -> Console:
    return Console(static, config, ["https://id.example.com", "https://bucket.s3.amazonaws.com"])


def test_the_policy_allows_only_the_own_origin_the_issuer_and_the_bucket():
    csp = content_security_policy(["https://id.example.com", "https://bucket.s3.amazonaws.com", "https://id.example.com"])
    directives = dict(d.split(" ", 1) for d in csp.split("; "))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["connect-src"] == "'self' https://id.example.com https://bucket.s3.amazonaws.com"
    assert directives["frame-ancestors"] == "'none'" and directives["base-uri"] == "'none'"
    assert "unsafe" not in csp and "data:" not in csp and "*" not in csp


@pytest.mark.parametrize(("url", "expected"), [
    ("https://id.example.com/realms/x", "https://id.example.com"),
    ("http://127.0.0.1:8798/bucket", "http://127.0.0.1:8798"),
    ("https://user:pw@id.example.com:8443/", "https://id.example.com:8443"),
    ("sluice-local", None), ("", None), ("javascript:alert(1)", None), ("https://", None),
])
def test_an_origin_is_a_scheme_and_a_host(url, expected):
    assert origin(url) == expected


def test_the_page_is_never_cached_and_carries_its_settings_attribute_escaped(static):
    hostile = PageConfig(issuer='https://id.example.com/"><script>alert(1)</script>', client_id="c",
                         max_upload_bytes=1, direct_upload_max_bytes=1)
    answer = console(static, hostile).page(gzip_ok=False)
    assert answer.status_code == 200
    headers = answer.headers
    assert headers["Cache-Control"] == "no-store" and headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Content-Type"].startswith("text/html") and "frame-ancestors 'none'" in headers[
        "Content-Security-Policy"]
    assert headers["Referrer-Policy"] == "no-referrer" and headers["X-Frame-Options"] == "DENY"
    body = answer.body.decode() if isinstance(answer.body, bytes) else str(answer.body)
    meta = re.search(r'<meta name="sluice-console" content="([^"]*)">', body)
    assert meta is not None and "<script>alert" not in body
    assert json.loads(html.unescape(meta.group(1)))["issuer"] == hostile.issuer


def test_a_hashed_asset_is_cached_for_good_and_gzipped_when_asked(static):
    c = console(static)
    plain = c.asset("index-AbCd1234.js", gzip_ok=False)
    packed = c.asset("index-AbCd1234.js", gzip_ok=True)
    assert plain.status_code == packed.status_code == 200
    assert plain.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert plain.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert packed.headers["Content-Encoding"] == "gzip" and "Content-Encoding" not in plain.headers
    assert isinstance(packed.body, bytes) and gzip.decompress(packed.body) == plain.body


@pytest.mark.parametrize("name", ["../app.py", "..%2Fapp.py", "index.html", "app.py", "assets/index-AbCd1234.js",
                                  "index-AbCd1234.js/..", "index-AbCd12.js", "index-AbCd1234.exe", ""])
def test_nothing_but_a_hashed_file_of_assets_is_answered(static, name):
    answer = console(static).asset(name, gzip_ok=False)
    assert answer.status_code == 404
    assert answer.headers["Cache-Control"] == "no-store"
    assert json.loads(str(answer.body))["error"]["code"] == "NOT_FOUND"


def test_a_deployment_without_the_built_console_says_how_to_build_it(tmp_path):
    for answer in (console(tmp_path).page(gzip_ok=True), console(tmp_path).asset("index-AbCd1234.js", gzip_ok=True)):
        assert answer.status_code == 503
        assert "make install" in json.loads(str(answer.body))["error"]["message"]


@pytest.mark.parametrize(("headers", "expected"), [
    ({"accept-encoding": "gzip, deflate, br"}, True), ({"Accept-Encoding": "br;q=1, gzip;q=0.5"}, True),
    ({"accept-encoding": "br"}, False), ({"accept-encoding": "x-gzip"}, False), ({}, False), (None, False),
])
def test_gzip_is_sent_only_to_who_asks_for_it(headers, expected):
    assert accepts_gzip(headers) is expected


def test_the_built_bundle_keeps_its_budget_and_has_no_inline_script():
    if not (BUILT / "index.html").is_file():
        pytest.skip("the console is not built (functions/console/static): make install runs npm ci and the Vite build")
    page = (BUILT / "index.html").read_text()
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", page, flags=re.S)
    assert scripts and all(body.strip() == "" for body in scripts)
    assert all("src=" in tag for tag in re.findall(r"<script\b[^>]*>", page))
    assert "<!--sluice-console-config-->" in page
    shipped = b"".join(p.read_bytes() for p in sorted((BUILT / "assets").iterdir()))
    assert len(gzip.compress(shipped, 9)) < BUDGET_GZIP_BYTES


def test_the_local_sign_in_link_carries_a_writers_token_in_its_fragment():
    from urllib.parse import urlsplit

    from sluice.local.tokens import console_link, verify

    link = urlsplit(console_link("http://127.0.0.1:8787", "a-local-secret-of-thirty-two-bytes!"))
    assert (link.scheme, link.netloc, link.path, link.query) == ("http", "127.0.0.1:8787", "/console", "")
    assert link.fragment.startswith("token=")  # a fragment: never sent to a server, nor logged
    claims = verify("a-local-secret-of-thirty-two-bytes!", link.fragment.removeprefix("token="))
    assert (claims["sub"], claims["org_id"]) == ("alice", "acme")
    assert claims["permissions"] == ["collections:view", "collections:edit"] and claims["is_app_admin"] is False
