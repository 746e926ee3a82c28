"""The security review of issue 17, over HTTP through the local gateway, for what other tests leave
open (tokens: test_local_gateway.py; every route × principal: test_access_matrix.py; NUL and deep
JSON: test_hostile_input.py; archive member paths: tests/unit/parsing/test_parsing_archives.py and
test_parsing_member_paths.py).

A legitimate account is the attacker: every string field it can set carries SQL, every name it can
give carries a path, and it sends headers and bodies past every limit. No answer is a 5xx, every
error is R-ERR-1, no error shows SQL, a stack trace, a host, a bucket or a key, and afterwards the
database holds what it held, with the hostile strings stored as plain text.
"""

from __future__ import annotations

import json
import socket
import uuid
from urllib.parse import quote

import pytest

from tests.e2e.error_shape import r_err_1

pytestmark = pytest.mark.e2e

RUN = uuid.uuid4().hex[:6]
ORG, OTHER_ORG = f"sec-{RUN}", f"sec-other-{RUN}"
EDITOR = (f"mallory-{RUN}", ORG, ["collections:view", "collections:edit"])
INJECTIONS = [
    "'; DROP TABLE documents; --",
    "x' OR '1'='1",
    "\" OR \"\"=\"",
    "1; SELECT pg_sleep(5)--",
    "$$; DELETE FROM knowledge_bases; $$",
    "rag_x\"; DROP TABLE knowledge_bases; --",
    "') UNION SELECT email, password FROM users --",
    "%' AND 1=0 UNION SELECT NULL--",
    "\\'; COPY documents TO '/tmp/x'; --",
]


def clean(resp) -> None:
    """Below 500, and an error in the R-ERR-1 shape that shows nothing internal."""
    assert resp.status_code < 500, (resp.status_code, resp.text[:300])
    if resp.status_code >= 400:
        assert r_err_1(resp) == [], resp.text[:300]


@pytest.fixture(scope="module")
def api(client_for):
    return client_for(*EDITOR)


@pytest.fixture(scope="module")
def kb(api):
    resp = api.post("/kb", json={"name": f"Target {RUN}", "scope": "org"})
    assert resp.status_code == 201, resp.text
    return resp.json()


@pytest.fixture(scope="module")
def tables(runtime):
    import psycopg

    def count() -> dict[str, int]:
        with psycopg.connect(runtime.database_url) as conn:
            return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                    for t in ("knowledge_bases", "documents", "knowledge_base_grants")}

    return count


@pytest.mark.parametrize("payload", INJECTIONS)
def test_sql_in_every_string_field_is_data(api, kb, tables, payload):
    before = tables()
    # a base named, described and filed under the payload stores it as written
    made = api.post("/kb", json={"name": payload[:200], "description": payload, "scope": "org"})
    clean(made)
    assert made.status_code == 201
    created = api.get(f"/kb/{made.json()['id']}").json()
    assert (created["name"], created["description"]) == (payload[:200], payload)
    clean(api.patch(f"/kb/{made.json()['id']}", json={"description": payload + " again"}))
    assert api.get(f"/kb/{made.json()['id']}").json()["description"] == payload + " again"
    # a collection name it chooses is refused by the name rules, naming the field
    named = api.post("/kb", json={"name": "n", "collection_name": payload, "scope": "org"})
    assert named.status_code == 400 and "collection_name" in named.json()["error"]["details"]["fields"], named.text
    # the upload's form fields and name
    upload = api.post(f"/kb/{kb['id']}/documents", files={"file": (f"{payload}.txt", b"plain words")},
                      data={"organizational_unit": payload[:200], "document_type": payload[:100]})
    clean(upload)
    assert upload.status_code == 202
    stored = api.get(f"/rag/documents/{upload.json()['id']}").json()
    assert stored["organizational_unit"] == payload[:200] and stored["document_type"] == payload[:100]
    clean(api.post(f"/kb/{kb['id']}/uploads", json={"filename": f"{payload}.pdf", "organizational_unit": payload}))
    # grants to a user named by the payload, and taking it back through the path
    clean(api.post(f"/kb/{kb['id']}/grants", json={"user_id": payload, "permission": "view"}))
    clean(api.delete(f"/kb/{kb['id']}/grants/{quote(payload, safe='')}"))
    # search: the query, the collections, every filter, the deprecated filter string
    search = {"query": payload, "collections": [kb["collection_name"]]}
    for body in (search, {**search, "collections": [payload]},
                 {**search, "filters": {"source": [payload], "document_type": [payload],
                                        "organizational_unit": [payload]}},
                 {**search, "filter": payload}):
        clean(api.post("/rag/search", json=body))
        clean(api.post("/rag/search/diagnostic", json=body))
    # every path and query parameter
    for path in (f"/kb/{quote(payload, safe='')}", f"/kb/{quote(payload, safe='')}/documents",
                 f"/rag/collections/{quote(payload, safe='')}/info",
                 f"/rag/collections/{quote(payload, safe='')}/filter-values",
                 f"/rag/documents/{quote(payload, safe='')}", f"/kb/{kb['id']}/documents?status={quote(payload)}",
                 f"/kb/{kb['id']}/documents?cursor={quote(payload)}&limit=1"):
        resp = api.get(path)
        clean(resp)
        assert resp.status_code in (200, 400, 404), (path, resp.status_code)
    # and the database holds what it held, plus what was made above
    after = tables()
    assert after["knowledge_bases"] == before["knowledge_bases"] + 1
    assert after["documents"] == before["documents"] + 2  # the direct upload and the presigned one


def test_a_token_for_another_organization_reaches_nothing_of_this_one(client_for, api, kb):
    # the same user id, signed for another organization: the org base is out of reach, and looks absent
    same_user_elsewhere = client_for(EDITOR[0], OTHER_ORG, ["collections:view", "collections:edit"])
    absent = same_user_elsewhere.get(f"/kb/{uuid.uuid4()}")
    for resp in (same_user_elsewhere.get(f"/kb/{kb['id']}"),
                 same_user_elsewhere.get(f"/rag/collections/{kb['collection_name']}/info")):
        assert resp.status_code == 404 and r_err_1(resp) == []
    assert same_user_elsewhere.get(f"/kb/{kb['id']}").json() == absent.json()
    hidden = same_user_elsewhere.post("/rag/search", json={"query": "q", "collections": [kb["collection_name"]]})
    assert hidden.status_code == 404, hidden.text
    listed = same_user_elsewhere.get("/kb").json()
    assert kb["id"] not in json.dumps(listed)


@pytest.mark.parametrize("name", ["../../../etc/passwd.txt", "..\\..\\windows\\win.ini.txt", "/abs/root.txt",
                                  "a/b/../../c.txt", "%2e%2e%2fescape.txt", "....//....//x.txt", ".txt"])
def test_a_path_in_a_filename_never_leaves_the_collections_prefix(api, kb, name):
    resp = api.post(f"/kb/{kb['id']}/documents", files={"file": (name, b"plain words about paths")})
    clean(resp)
    if resp.status_code == 400:  # nothing left of the name to read: no extension
        assert resp.json()["error"]["code"] == "UNSUPPORTED_TYPE", resp.text
        return
    assert resp.status_code == 202, resp.text
    doc = api.get(f"/rag/documents/{resp.json()['id']}").json()
    assert ".." not in doc["filename"] and "/" not in doc["filename"] and "\\" not in doc["filename"], doc
    presign = api.post(f"/kb/{kb['id']}/uploads", json={"filename": name})
    clean(presign)
    if presign.status_code == 202:
        key = presign.json()["upload"]["fields"]["key"]
        assert key.startswith(f"incoming/{presign.json()['id']}/") and ".." not in key, key
        assert key.count("/") == 2, key


def raw(runtime, request: bytes, timeout: float = 20) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", runtime.api_port), timeout=timeout) as s:
        s.sendall(request)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def test_a_header_over_size_is_refused_in_the_error_shape(runtime, make_token):
    token = make_token(*EDITOR)
    huge = b"GET /kb HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token.encode() + \
        b"\r\nX-Padding: " + b"a" * 70_000 + b"\r\nConnection: close\r\n\r\n"
    status, body = raw(runtime, huge)
    assert status == 431
    assert json.loads(body)["error"]["code"] == "HEADERS_TOO_LARGE"
    many = b"GET /kb HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"".join(
        b"X-H%d: v\r\n" % i for i in range(150)) + b"Connection: close\r\n\r\n"
    status, body = raw(runtime, many)
    assert status == 431 and json.loads(body)["error"]["code"] == "HEADERS_TOO_LARGE"


def test_a_request_line_over_size_or_malformed_is_refused_in_the_error_shape(runtime):
    status, body = raw(runtime, b"GET /kb?" + b"q=" * 40_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert status == 414 and json.loads(body)["error"]["code"] == "URI_TOO_LONG"
    status, body = raw(runtime, b"GET /kb HTTP/one.one\r\nHost: 127.0.0.1\r\n\r\n")
    assert status == 400 and json.loads(body)["error"]["code"] == "BAD_REQUEST"


def test_oversized_json_is_refused_before_any_function_runs(api, kb):
    # past the 6 MB a function takes, within the gateway's 10 MB: refused as too large
    big = json.dumps({"query": "q", "collections": [kb["collection_name"]], "filters": {
        "source": ["s" * 500] * 100}, "pad": "x" * (7 * 1024 * 1024)})
    resp = api.post("/rag/search", content=big, headers={"content-type": "application/json"})
    assert resp.status_code == 413 and resp.json()["error"]["code"] == "FILE_TOO_LARGE", resp.text[:300]
    # a query past its limit names the field
    long_query = api.post("/rag/search", json={"query": "q" * 50_000, "collections": [kb["collection_name"]]})
    assert long_query.status_code == 422 and "query" in long_query.json()["error"]["details"]["fields"]
    # a body of a million small values: refused, naming a field, quickly
    wide = api.post("/kb", json={"name": "wide", "ingestion_config": {f"k{i}": i for i in range(200_000)}})
    clean(wide)
    assert wide.status_code in (400, 422) and wide.json()["error"]["details"]["fields"], wide.text[:300]
