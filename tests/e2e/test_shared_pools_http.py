"""One document shared into several users' private pools over HTTP (R-ACC-6): what recipients, other
members, other organizations and the sharer see on every document route; the objects after the last
recipient's delete; the presigned variant; the cap's refusal. The domain-level proofs (one parse,
one embedding pass, the recipient check before the top-k, concurrency) are
tests/integration/ingest/test_ingest_shared_pools.py."""

from __future__ import annotations

import uuid

import boto3
import httpx
import psycopg
import pytest
from psycopg import sql

from tests.e2e.test_private_pools_http import limits  # noqa: F401 - the fixture
from tests.e2e.test_upload_to_search import wait_done

pytestmark = pytest.mark.e2e

EDIT, VIEW = "collections:edit", "collections:view"
TEXT = (b"The Harbour Street lease grants the tenant a right of first refusal on the adjoining warehouse, "
        b"exercisable within thirty days of a written offer from the landlord.")
QUERY = "Does the tenant have a right of first refusal on the adjoining warehouse?"


class People:
    def __init__(self, client_for) -> None:
        run = uuid.uuid4().hex[:6]
        self.org, self.other_org = f"acme_{run}", f"globex_{run}"
        self.ids = {who: f"{who}_{run}" for who in ("sharer", "r1", "r2", "r3", "fourth")}
        self.sharer = client_for(self.ids["sharer"], self.org, [VIEW, EDIT])
        self.recipients = [client_for(self.ids[r], self.org, [VIEW]) for r in ("r1", "r2", "r3")]
        self.fourth = client_for(self.ids["fourth"], self.org, [VIEW, EDIT])
        # The same user id as r1, in another organization: a recipient id opens nothing across the tenant line
        self.outsider = client_for(self.ids["r1"], self.other_org, [VIEW, EDIT])

    def share(self, recipients: list[str], data: bytes = TEXT, name: str = "lease.txt") -> httpx.Response:
        return self.sharer.post("/pools/documents", files={"file": (name, data, "text/plain")},
                                data={"recipients": ",".join(self.ids[r] for r in recipients)})


def document_routes(doc_id: str) -> list[tuple[str, str]]:
    return [("GET", f"/rag/documents/{doc_id}"), ("GET", f"/rag/documents/{doc_id}/content"),
            ("GET", f"/rag/documents/{doc_id}/file"), ("POST", f"/rag/documents/{doc_id}/retry"),
            ("DELETE", f"/rag/documents/{doc_id}")]


def answer(resp: httpx.Response) -> tuple[int, bytes]:
    return resp.status_code, resp.content


def search(api: httpx.Client, collection: str) -> httpx.Response:
    return api.post("/rag/search", json={"query": QUERY, "collections": [collection]})


def found(api: httpx.Client, collection: str) -> set[str]:
    resp = search(api, collection)
    assert resp.status_code == 200, resp.text
    return {r["document_id"] for r in resp.json()["results"]}


def pool_ids(api: httpx.Client) -> dict[str, str | None]:
    resp = api.get("/pools/documents")
    assert resp.status_code == 200, resp.text
    return {d["id"]: d["shared_by"] for d in resp.json()["documents"]}


def leftovers(runtime, doc_id: str, collection: str) -> tuple[int, int, int, list[str]]:
    """Rows, recipient rows and chunks of the document in the database, and its objects in the bucket."""
    with psycopg.connect(runtime.database_url) as conn:
        rows = conn.execute("SELECT count(*) FROM documents WHERE id = %s", (doc_id,)).fetchone()[0]
        recipients = conn.execute("SELECT count(*) FROM document_recipients WHERE document_id = %s",
                                  (doc_id,)).fetchone()[0]
        chunks = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE document_id = %s").format(
            sql.Identifier(f"rag_{collection}")), (doc_id,)).fetchone()[0]
    s3 = boto3.client("s3", endpoint_url=runtime.moto_url, region_name="us-east-1")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=runtime.bucket).get("Contents", []) if doc_id in o["Key"]]
    return rows, recipients, chunks, keys


def test_shared_to_three_each_finds_it_and_everyone_else_gets_the_absent_answer(runtime, client_for):
    people = People(client_for)
    # WHEN the sharer shares one document with three members
    resp = people.share(["r1", "r2", "r3"])
    assert resp.status_code == 202, resp.text
    body = resp.json()
    assert sorted(body["recipients"]) == sorted(people.ids[r] for r in ("r1", "r2", "r3"))
    doc_id, collection = body["id"], body["collection_name"]
    assert wait_done(people.recipients[0], doc_id)["status"] == "done"

    # THEN each recipient lists it (marked with who shared it), reads it and finds it
    for api in people.recipients:
        assert pool_ids(api)[doc_id] == people.ids["sharer"]
        assert api.get(f"/rag/documents/{doc_id}").json()["status"] == "done"
        assert "first refusal" in api.get(f"/rag/documents/{doc_id}/content").json()["content"]
        assert api.get(f"/rag/documents/{doc_id}/file").status_code == 200
        assert found(api, collection) == {doc_id}

    # AND a fourth member, a user of another organization and the sharer (not listed) get, on every
    # document route and in search, exactly the answer an absent id and an absent collection get
    absent_id = str(uuid.uuid4())
    for api in (people.fourth, people.outsider, people.sharer):
        assert doc_id not in pool_ids(api)
        for (method, path), (_, absent_path) in zip(document_routes(doc_id), document_routes(absent_id), strict=True):
            resp, absent = api.request(method, path), api.request(method, absent_path)
            assert absent.status_code == 404
            assert answer(resp) == answer(absent), (method, path, resp.text)
        assert answer(search(api, collection)) == answer(search(api, f"absent_{uuid.uuid4().hex[:8]}"))
        assert search(api, collection).status_code == 404
    # AND nobody but the sharer manages it: revoke and delete-for-all answer as absent
    for api in (people.fourth, people.outsider, *people.recipients):
        for method, path, absent_path in (
                ("DELETE", f"/pools/documents/{doc_id}", f"/pools/documents/{absent_id}"),
                ("DELETE", f"/pools/documents/{doc_id}/recipients/{people.ids['r1']}",
                 f"/pools/documents/{absent_id}/recipients/{people.ids['r1']}")):
            assert answer(api.request(method, path)) == answer(api.request(method, absent_path))
    assert found(people.recipients[0], collection) == {doc_id}


def test_two_recipients_delete_the_third_still_finds_it_and_the_last_delete_leaves_nothing(runtime, client_for):
    people = People(client_for)
    resp = people.share(["r1", "r2", "r3"])
    assert resp.status_code == 202, resp.text
    doc_id, collection = resp.json()["id"], resp.json()["collection_name"]
    assert wait_done(people.recipients[0], doc_id)["status"] == "done"
    rows, recipients, chunks, keys = leftovers(runtime, doc_id, collection)
    assert (rows, recipients) == (1, 3) and chunks > 0 and keys

    # WHEN two recipients delete it
    for api in people.recipients[:2]:
        deleted = api.delete(f"/rag/documents/{doc_id}")
        assert deleted.status_code == 200 and deleted.json() == {"id": doc_id, "deleted": True}
        # THEN their next search proves it gone (they hold nothing in the shared pool now), as does their listing
        assert search(api, collection).status_code == 404
        assert doc_id not in pool_ids(api)
        assert api.get(f"/rag/documents/{doc_id}").status_code == 404
    # AND the third still finds it, the row, chunks and objects intact
    assert found(people.recipients[2], collection) == {doc_id}
    assert leftovers(runtime, doc_id, collection) == (1, 1, chunks, keys)

    # WHEN the third deletes it: no row, no recipient, no chunk, no object remains
    assert people.recipients[2].delete(f"/rag/documents/{doc_id}").status_code == 200
    assert leftovers(runtime, doc_id, collection) == (0, 0, 0, [])
    assert people.sharer.delete(f"/pools/documents/{doc_id}").status_code == 404


def test_the_sharer_revokes_a_recipient_then_deletes_for_all(runtime, client_for):
    people = People(client_for)
    # The presigned variant: the same answer plus the POST to make
    resp = people.sharer.post("/pools/uploads", json={"filename": "lease.txt", "size": len(TEXT),
                                                      "recipients": [people.ids["r1"], people.ids["r2"]]})
    assert resp.status_code == 202, resp.text
    body = resp.json()
    posted = httpx.post(body["upload"]["url"], data=body["upload"]["fields"], files={"file": ("lease.txt", TEXT)})
    assert posted.status_code in (200, 204), posted.text
    doc_id, collection = body["id"], body["collection_name"]
    r1, r2 = people.recipients[:2]
    assert wait_done(r1, doc_id)["status"] == "done"
    assert found(r1, collection) == found(r2, collection) == {doc_id}

    revoked = people.sharer.delete(f"/pools/documents/{doc_id}/recipients/{people.ids['r1']}")
    assert revoked.status_code == 200, revoked.text
    assert revoked.json() == {"id": doc_id, "user_id": people.ids["r1"], "removed": True, "document_deleted": False}
    assert search(r1, collection).status_code == 404 and r1.get(f"/rag/documents/{doc_id}").status_code == 404
    assert found(r2, collection) == {doc_id}
    # revoking someone who is not a recipient says so
    assert people.sharer.delete(f"/pools/documents/{doc_id}/recipients/{people.ids['r3']}").status_code == 404

    assert people.sharer.delete(f"/pools/documents/{doc_id}").json() == {"id": doc_id, "deleted": True}
    assert search(r2, collection).status_code == 404
    assert leftovers(runtime, doc_id, collection) == (0, 0, 0, [])


def test_a_recipient_at_the_cap_refuses_the_share_for_everyone(runtime, client_for, limits):  # noqa: F811
    limits(PRIVATE_DOC_CAP="1", UPLOAD_RATE_PER_MINUTE="100")
    people = People(client_for)
    first = people.share(["r1"])
    assert first.status_code == 202, first.text

    refused = people.share(["r2", "r1", "r3"], name="second.txt")
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["code"] == "DOC_CAP_REACHED" and error["details"]["recipients"] == [people.ids["r1"]]
    # nothing was written for anyone: r2 and r3 list nothing, r1 holds one
    assert pool_ids(people.recipients[1]) == {} and pool_ids(people.recipients[2]) == {}
    assert list(pool_ids(people.recipients[0])) == [first.json()["id"]]


def test_who_may_share(runtime, client_for):
    people = People(client_for)
    viewer = client_for(people.ids["r1"], people.org, [VIEW])
    resp = viewer.post("/pools/documents", files={"file": ("a.txt", TEXT)}, data={"recipients": people.ids["r2"]})
    assert resp.status_code == 400 and "recipients" in resp.json()["error"]["details"]["fields"]
    resp = people.sharer.post("/pools/documents", files={"file": ("a.txt", TEXT)}, data={"recipients": "[1, 2]"})
    assert resp.status_code == 400 and "recipients" in resp.json()["error"]["details"]["fields"]
    resp = people.sharer.post("/pools/documents", files={"file": ("a.txt", TEXT)})
    assert resp.status_code == 422
