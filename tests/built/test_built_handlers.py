"""The built artifacts run: each handler of the `sam build` output, in a fresh python3.12 with only
its code and its layers on sys.path (tests/built/lambda_invoke.py) and exactly the variables
`sluice local env --for-sam --host 127.0.0.1` wrote, against the exposed local moto and embedded
PostgreSQL after `sluice local seed-events`: what `sam local invoke` does inside its container.
A handler that imports something its layers lack fails here.

The sample events of tests/events do real work; and one document goes the whole way through the
built functions, each fed the real message the previous stage's output raised in moto.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
import time
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from .conftest import Build

EVENTS = Path(__file__).resolve().parents[1] / "events"
FACT = "The quartermaster keeps the spare lantern wicks in the cedar chest below the chart table."


# The functions that carry the model (ModelLayer), and those that carry the parsers (ParseLayer); no
# function carries both (tests/built/test_function_sizes.py), and none imports what its layers lack.
MODEL_FUNCTIONS = {"EmbedFunction", "SearchFunction", "ChatFunction", "ChatWorkerFunction"}
PARSE_FUNCTIONS = {"ParseFunction", "ChatFilesFunction", "ChatArrivalFunction"}


def test_every_handler_imports_with_only_its_layers(build: Build, invoke_built):
    assert set(build.functions) >= MODEL_FUNCTIONS | PARSE_FUNCTIONS
    for name in sorted(build.functions):
        loaded = invoke_built(name, None)
        assert loaded["imported"] == "app"
        if name not in MODEL_FUNCTIONS:
            assert "onnxruntime" not in loaded["modules"] and "numpy" not in loaded["modules"], name
        if name not in PARSE_FUNCTIONS:
            assert "pymupdf" not in loaded["modules"] and "fitz" not in loaded["modules"], name


def test_the_built_sync_function_imports_every_connector_and_its_client(invoke_built):
    # The registry imports no client at cold start (the sources function validates configs without
    # them); a run imports its connector's client lazily, which must be in the sync function's layers.
    from sluice.sync.connectors import CONNECTORS

    modules = [cls.__module__ for cls in CONNECTORS.values()]
    clients = ["azure.storage.blob", "azure.core", "google.cloud.storage", "google.oauth2.service_account",
               "google.auth.crypt", "google.auth.jwt",  # gdrive signs its own assertion
               "dulwich.objects", "dulwich.object_store", "sluice.sync.connectors.gitwire",
               "cryptography.x509", "cryptography.hazmat.primitives.asymmetric.padding",  # sharepoint's certificate
               "protego", "lxml.html", "lxml.etree", "re2", "sluice.sync.connectors.web.crawl"]  # web's crawl
    loaded = invoke_built("SyncTaskFunction", None, imports=modules + clients)
    assert {"azure", "google", "dulwich", "protego", "lxml", "re2"} <= set(loaded["modules"])


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return loaded


def test_the_parse_sample_event_parses_the_seeded_report(stack, invoke_built):
    from sluice.local.seed import SAMPLE_DOC

    assert invoke_built("ParseFunction", sample("parse_s3_object_created")) == {"batchItemFailures": []}
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=stack.moto_url)
    artifact = s3.get_object(Bucket=stack.bucket, Key=f"stage/parsed/{SAMPLE_DOC}.1.json")["Body"].read()
    assert b"Penalty clause" in artifact and b"Supply agreement 2025" in artifact


def test_the_embed_sample_event_stores_the_seeded_chunks(stack, invoke_built):
    from sluice.local.seed import SAMPLE_KB, STAGED_DOC

    assert invoke_built("EmbedFunction", sample("embed_s3_chunks_artifact")) == {"batchItemFailures": []}
    api = owner_client(stack)
    documents = {d["id"]: d for d in api.get(f"/kb/{SAMPLE_KB}/documents").json()["documents"]}
    assert (documents[str(STAGED_DOC)]["status"], documents[str(STAGED_DOC)]["stage"]) == ("done", "done")
    assert documents[str(STAGED_DOC)]["chunk_count"] >= 1


def test_the_search_sample_event_finds_the_seeded_clause(stack, invoke_built):
    from sluice.local.seed import PENALTY

    invoke_built("EmbedFunction", sample("embed_s3_chunks_artifact"))  # idempotent: the clause is indexed
    answer = invoke_built("SearchFunction", sample("search"))
    assert answer["statusCode"] == 200, answer
    results = json.loads(answer["body"])["results"]
    assert results and PENALTY in results[0]["content"]


def console_event(path: str, route: str) -> dict[str, Any]:
    """A public GET as the HTTP API hands it to ConsoleFunction (no authorizer on its routes)."""
    context = {"accountId": "123456789012", "apiId": "local", "domainName": "127.0.0.1", "domainPrefix": "local",
               "http": {"method": "GET", "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1",
                        "userAgent": ""},
               "requestId": "00000000-0000-0000-0000-00000000c0de", "routeKey": route, "stage": "$default",
               "time": "29/Nov/2025:00:00:00 +0000", "timeEpoch": 1764400000000}
    return {"version": "2.0", "routeKey": route, "rawPath": path, "rawQueryString": "",
            "headers": {"host": "127.0.0.1", "accept-encoding": "gzip"}, "requestContext": context,
            "isBase64Encoded": False}


def test_the_console_function_serves_its_page_and_hashed_assets_from_its_own_package(build, invoke_built):
    """The Vite build is packaged with ConsoleFunction (functions/console/static) and served with only
    its layers: the page with its policy, a hashed asset cached for good."""
    if not (build.functions["ConsoleFunction"].code / "static" / "index.html").is_file():
        pytest.skip("the console was not built before `sam build` (no npm): `make install` builds it")
    page = invoke_built("ConsoleFunction", console_event("/console", "GET /console"))
    assert page["statusCode"] == 200, page
    headers = {k.lower(): v for k, v in page["headers"].items()}
    assert "frame-ancestors 'none'" in headers["content-security-policy"] and headers["cache-control"] == "no-store"
    body = base64.b64decode(page["body"]) if page["isBase64Encoded"] else page["body"].encode()
    html = (gzip.decompress(body) if headers.get("content-encoding") == "gzip" else body).decode()
    asset = re.search(r'src="/console/assets/([^"]+\.js)"', html)
    assert asset is not None and 'name="sluice-console"' in html
    answer = invoke_built("ConsoleFunction", console_event(f"/console/assets/{asset.group(1)}",
                                                          "GET /console/assets/{proxy+}"))
    assert answer["statusCode"] == 200 and "immutable" in answer["headers"]["Cache-Control"]
    shipped = build.functions["ConsoleFunction"].code / "static" / "assets" / asset.group(1)
    assert answer["headers"]["Content-Encoding"] == "gzip"
    assert gzip.decompress(base64.b64decode(answer["body"])) == shipped.read_bytes()
    others = [n for n, fn in build.functions.items() if n != "ConsoleFunction" and (fn.code / "static").exists()]
    assert others == []  # no other function carries the console


def owner_client(stack: Any) -> httpx.Client:
    from sluice.local.tokens import mint

    token = mint(stack.jwt_secret, user="alice", org="acme", permissions=["collections:view", "collections:edit"])
    return httpx.Client(base_url=stack.api_url, timeout=60, headers={"Authorization": f"Bearer {token}"})


def sqs_event(queue_arn: str, message: dict[str, Any]) -> dict[str, Any]:
    """An SQS message as Lambda hands it to a function (tests/events/*.json have this shape)."""
    return {"Records": [{
        "messageId": message["MessageId"], "receiptHandle": message["ReceiptHandle"], "body": message["Body"],
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": str(int(time.time() * 1000)),
                       "SenderId": "local", "ApproximateFirstReceiveTimestamp": str(int(time.time() * 1000))},
        "messageAttributes": {}, "md5OfBody": message["MD5OfBody"], "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn, "awsRegion": "us-east-1",
    }]}


def drain(stack: Any, queue: str, expect: int | None, timeout: float = 30) -> list[dict[str, Any]]:
    """The messages of ``queue``: ``expect`` of them (None: whatever arrives within ``timeout``)."""
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=stack.moto_url)
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while (expect is None or len(got) < expect) and time.monotonic() < deadline:
        got += sqs.receive_message(QueueUrl=stack.queue_urls[queue], MaxNumberOfMessages=10,
                                   WaitTimeSeconds=1).get("Messages", [])
    assert expect is None or len(got) == expect, f"{queue}: {len(got)} messages, expected {expect}"
    for message in got:
        sqs.delete_message(QueueUrl=stack.queue_urls[queue], ReceiptHandle=message["ReceiptHandle"])
    return got


def docx_with(paragraphs: list[str]) -> bytes:
    import docx

    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pdf_with(text: str) -> bytes:
    import pymupdf

    document = pymupdf.open()
    document.new_page().insert_text((72, 72), text)
    return document.tobytes()


def run_stage(stack: Any, invoke_built, function: str, queue: str, expect: int) -> None:
    for message in drain(stack, queue, expect):
        result = invoke_built(function, sqs_event(stack.queue_arns[queue], message))
        assert result == {"batchItemFailures": []}, (function, result)


def test_parse_chunk_embed_and_search_from_the_build(stack, invoke_built):
    api = owner_client(stack)
    kb = api.post("/kb", json={"name": "Built artifacts"}).json()
    for queue in ("IngestQueue", "ChunkQueue", "EmbedQueue"):
        drain(stack, queue, expect=None, timeout=2)  # S3's test events, what the sample events raised
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=stack.moto_url)
    s3.put_object(Bucket=stack.bucket, Key=f"inbox/{kb['id']}/ship/stores.docx",
                  Body=docx_with(["Ship's stores", FACT, "Rope is coiled clockwise."]))
    s3.put_object(Bucket=stack.bucket, Key=f"inbox/{kb['id']}/ship/log.pdf",
                  Body=pdf_with("Day one: fair winds from the south-west, twelve knots."))

    run_stage(stack, invoke_built, "ParseFunction", "IngestQueue", 2)
    documents = api.get(f"/kb/{kb['id']}/documents").json()["documents"]
    assert sorted(d["filename"] for d in documents) == ["log.pdf", "stores.docx"]
    for d in documents:  # each document's parsed text, written by the built parse function
        assert s3.head_object(Bucket=stack.bucket, Key=f"stage/parsed/{d['id']}.1.json")["ContentLength"] > 0

    run_stage(stack, invoke_built, "ChunkFunction", "ChunkQueue", 2)
    run_stage(stack, invoke_built, "EmbedFunction", "EmbedQueue", 2)
    documents = api.get(f"/kb/{kb['id']}/documents").json()["documents"]
    assert {d["filename"]: (d["status"], d["error_message"]) for d in documents} == {
        "log.pdf": ("done", None), "stores.docx": ("done", None)}
    assert all(d["chunk_count"] >= 1 for d in documents)

    event = json.loads((EVENTS / "search.json").read_text())
    event["requestContext"]["authorizer"]["jwt"]["claims"].update(
        {"sub": "alice", "org_id": "acme", "exp": str(int(time.time()) + 600)})
    event["body"] = json.dumps({"query": "where are the spare lantern wicks kept",
                                "collections": [kb["collection_name"]], "top_k": 3})
    answer = invoke_built("SearchFunction", event)
    assert answer["statusCode"] == 200, answer
    results = json.loads(answer["body"])["results"]
    assert results and FACT in results[0]["content"]
    # The same query through the in-process search: the built model's vectors are the laptop's.
    local = api.post("/rag/search", json={"query": "where are the spare lantern wicks kept",
                                          "collections": [kb["collection_name"]], "top_k": 3}).json()
    assert [r["content"] for r in local["results"]] == [r["content"] for r in results]
    assert local["results"][0]["vec_score"] == pytest.approx(results[0]["vec_score"], abs=1e-4)


def http_event(method: str, path: str, *, user: str, body: bytes = b"", content_type: str = "application/json",
               query: dict[str, str] | None = None) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event for ``user``, as API Gateway hands it to a function after the JWT
    authorizer (tests/events/chat_create_conversation.json is one)."""
    import base64
    from urllib.parse import urlencode

    event = sample("chat_create_conversation")
    event["routeKey"] = event["requestContext"]["routeKey"] = f"{method} {path}"
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["rawQueryString"] = urlencode(query or {})
    if query:
        event["queryStringParameters"] = query
    event["headers"]["content-type"] = content_type
    event["requestContext"]["authorizer"]["jwt"]["claims"].update(
        {"sub": user, "exp": str(int(time.time()) + 600)})
    event["body"] = base64.b64encode(body).decode()
    event["isBase64Encoded"] = True
    return event


def call(invoke_built, function: str, method: str, path: str, expect: int, *, user: str = "carla",
         json_body: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    if json_body is not None:
        kwargs["body"] = json.dumps(json_body).encode()
    answer = invoke_built(function, http_event(method, path, user=user, **kwargs))
    assert answer["statusCode"] == expect, (function, method, path, answer)
    return json.loads(answer["body"]) if answer.get("body") else None


def test_chat_files_conversations_arrivals_and_attachments_from_the_build(stack, invoke_built):
    """Each chat function with only its layers: the file routes parse and render (ParseLayer), a
    presigned arrival is checked by the arrival function (ParseLayer), attaching counts tokens and the
    worker embeds (ModelLayer), and the context embeds the question (ModelLayer)."""
    from tests.chat_samples import PINPOINT_QUESTION, PLANTED, report_pdf

    drain(stack, "ChatArrivalQueue", expect=None, timeout=2)  # S3's test event
    # A direct upload, parsed in the request by the built ChatFilesFunction.
    upload = httpx.Request("POST", "http://x/files/upload", files={"file": ("report.pdf", report_pdf(40))})
    report = call(invoke_built, "ChatFilesFunction", "POST", "/files/upload", 201, body=upload.read(),
                  content_type=upload.headers["content-type"])
    assert report["file_type"] == "pdf" and report["preview"].startswith("Section 1")
    pages = call(invoke_built, "ChatFilesFunction", "GET", f"/files/{report['id']}/pages", 200, query={"max": "1"})
    assert pages["shown"] == 1 and pages["pages"][0]["data_url"].startswith("data:image/png;base64,")

    # A presigned upload, checked when it lands by the built ChatArrivalFunction.
    taken = call(invoke_built, "ChatFilesFunction", "POST", "/files/uploads", 202,
                 json_body={"filename": "minutes.txt"})
    posted = httpx.post(taken["upload"]["url"], data=taken["upload"]["fields"],
                        files={"file": ("minutes.txt", b"Minutes of the harbour board\nAgreed: dredge in May\n")})
    assert posted.status_code in (200, 204), posted.text
    run_stage(stack, invoke_built, "ChatArrivalFunction", "ChatArrivalQueue", 1)
    minutes = call(invoke_built, "ChatFilesFunction", "GET", f"/files/{taken['id']}", 200)
    assert minutes["status"] == "ready" and minutes["preview"].startswith("Minutes of the harbour board")

    # The conversation side: attached (graded with the tokenizer), indexed by the built worker.
    cid = call(invoke_built, "ChatFunction", "POST", "/conversations", 201, json_body={})["id"]
    small = call(invoke_built, "ChatFunction", "POST", f"/conversations/{cid}/attachments", 202,
                 json_body={"file_id": taken["id"]})
    assert small["status"] == "full_text"
    large = call(invoke_built, "ChatFunction", "POST", f"/conversations/{cid}/attachments", 202,
                 json_body={"file_id": report["id"]})
    assert large["status"] == "indexing"
    for _ in range(5):  # the job, and any continuation it sends itself
        messages = drain(stack, "ChatQueue", expect=None, timeout=3)
        if not messages:
            break
        for message in messages:
            result = invoke_built("ChatWorkerFunction", sqs_event(stack.queue_arns["ChatQueue"], message))
            assert result == {"batchItemFailures": []}, result
    listed = call(invoke_built, "ChatFunction", "GET", f"/conversations/{cid}/attachments", 200)
    assert {a["id"]: a["status"] for a in listed["attachments"]} == {small["id"]: "full_text",
                                                                     large["id"]: "indexed"}
    context = call(invoke_built, "ChatFunction", "POST", f"/conversations/{cid}/context", 200,
                   json_body={"question": PINPOINT_QUESTION})
    assert PLANTED in context["context"] and "Agreed: dredge in May" in context["context"]


def test_an_office_container_sent_in_the_request_is_sniffed_by_the_built_uploads_function(stack, invoke_built):
    # The uploads function checks that a file is what its name says before storing it; for an OLE2
    # container (.msg, .doc, .xls, .ppt) that reads the container's streams with olefile, which the
    # function must carry without the parse layer.
    from tests.unit.parsing.parsing_samples import msg_bytes

    kb = owner_client(stack).post("/kb", json={"name": "Built uploads"}).json()
    upload = httpx.Request("POST", "http://x/", files={"file": ("note.msg", msg_bytes(
        "Harbour board", "Agreed: dredge in May.", "clerk@example.com", "board@example.com"))})
    taken = call(invoke_built, "UploadsFunction", "POST", f"/kb/{kb['id']}/documents", 202, user="alice",
                 body=upload.read(), content_type=upload.headers["content-type"])
    assert (taken["filename"], taken["status"]) == ("note.msg", "processing")
