"""The local moto is no web server for the pages in the developer's browser (issue 26, finding 3).

Its port (4566) and the bucket name are predictable and moto checks no credentials, so any page
could read the bucket and the secrets if moto answered it: with moto's global CORS on, a page at
http://evil.example read `?list-type=2` and `GetSecretValue`, and a name of the page's own resolved
to 127.0.0.1 (DNS rebinding) reached it as a same-origin request. Through the local stack: a
foreign Origin is refused (and given no Access-Control-Allow-Origin), so is its preflight, a
cross-site request without one, and a Host that is not a loopback name; the gateway's own origin
still posts a presigned upload and reads the answer.
"""

from __future__ import annotations

import uuid

import boto3
import httpx
import pytest
from botocore.exceptions import ClientError

from tests.e2e.test_upload_to_search import new_base, wait_done

pytestmark = pytest.mark.e2e

EVIL = "http://evil.example"


def listing(runtime) -> str:
    return f"{runtime.moto_url}/{runtime.bucket}?list-type=2"


def test_a_foreign_origin_is_refused_and_given_no_cors_grant(runtime):
    answer = httpx.get(listing(runtime), headers={"Origin": EVIL})
    assert answer.status_code == 403
    assert "access-control-allow-origin" not in answer.headers
    assert runtime.bucket not in answer.text and "<ListBucketResult" not in answer.text


def test_a_preflight_from_a_foreign_origin_is_refused(runtime):
    answer = httpx.options(f"{runtime.moto_url}/{runtime.bucket}", headers={
        "Origin": EVIL, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-amz-target,content-type"})
    assert answer.status_code == 403
    assert not {h for h in answer.headers if h.startswith("access-control-")}


def test_a_page_cannot_read_a_secret(runtime):
    secret = f"page-must-not-read-{uuid.uuid4().hex}"
    client = boto3.client("secretsmanager", endpoint_url=runtime.moto_url, region_name="us-east-1")
    name = f"guard-{uuid.uuid4().hex[:8]}"
    client.create_secret(Name=name, SecretString=secret)
    assert client.get_secret_value(SecretId=name)["SecretString"] == secret  # an SDK sends no Origin

    page = {"origin": EVIL}

    def from_a_page(request, **_: object) -> None:
        request.headers["Origin"] = page["origin"]

    client.meta.events.register("before-send.secrets-manager.GetSecretValue", from_a_page)
    # the gateway's own origin is granted the bucket, nothing else
    for origin in (EVIL, f"http://127.0.0.1:{runtime.api_port}"):
        page["origin"] = origin
        with pytest.raises(ClientError) as refused:
            client.get_secret_value(SecretId=name)
        meta = refused.value.response["ResponseMetadata"]
        assert meta["HTTPStatusCode"] == 403, origin
        assert "access-control-allow-origin" not in meta["HTTPHeaders"]
        assert secret not in str(refused.value.response)
    assert page["origin"] != EVIL  # both were tried


def test_a_cross_site_request_without_an_origin_is_refused(runtime):
    # An <img> or a form GET sends no Origin, but the browser says where it comes from.
    answer = httpx.get(listing(runtime), headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"})
    assert answer.status_code == 403


@pytest.mark.parametrize("host", ["evil.example", "evil.example:4566", "127.0.0.1.evil.example", "localhost.evil"])
def test_a_host_that_is_not_a_loopback_name_is_refused(runtime, host):
    answer = httpx.get(listing(runtime), headers={"Host": host})
    assert answer.status_code == 403
    assert "<ListBucketResult" not in answer.text


def test_loopback_names_and_sdks_are_answered(runtime):
    for host in (f"127.0.0.1:{runtime.moto_port}", f"localhost:{runtime.moto_port}", "localhost"):
        answer = httpx.get(listing(runtime), headers={"Host": host})
        assert answer.status_code == 200, host
        assert "<ListBucketResult" in answer.text
    s3 = boto3.client("s3", endpoint_url=runtime.moto_url, region_name="us-east-1")
    assert s3.list_objects_v2(Bucket=runtime.bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_the_gateways_own_origin_posts_a_presigned_upload(runtime, client_for):
    api = client_for(f"guard-{uuid.uuid4().hex[:6]}")
    kb = new_base(api)
    origin = f"http://127.0.0.1:{runtime.api_port}"
    resp = api.post(f"/kb/{kb['id']}/uploads", json={"filename": "note.txt", "size": 30})
    assert resp.status_code == 202, resp.text
    upload = resp.json()["upload"]

    preflight = httpx.options(upload["url"], headers={"Origin": origin, "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == origin

    note = b"A note the page posts itself.\n"
    posted = httpx.post(upload["url"], data=upload["fields"], files={"file": ("note.txt", note)},
                        headers={"Origin": origin})
    assert posted.status_code == 204, posted.text
    assert posted.headers["access-control-allow-origin"] == origin
    assert wait_done(api, resp.json()["id"])["status"] == "done"
