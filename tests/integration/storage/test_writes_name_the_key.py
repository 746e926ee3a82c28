"""Every write the code makes names the stack's KMS key (issue 26, finding 10).

On AWS the bucket policy denies a PutObject (CopyObject and a presigned POST are PutObjects) that does
not name the stack's key: asking for aws:kms without a key id would be served with the aws/s3 managed
key instead (the S3 API reference, PutObject SSEKMSKeyId). moto does not enforce bucket policies, so
these tests read the requests themselves.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from sluice.storage import ObjectStore

ROOT = Path(__file__).resolve().parents[3]
KEY_HEADER = "x-amz-server-side-encryption-aws-kms-key-id"


@pytest.fixture
def sent(bucket):
    """The headers of every request the bucket's client signs, by operation."""
    requests: list[tuple[str, dict[str, str]]] = []

    def record(request, operation_name, **_):
        requests.append((operation_name, {k.lower(): v for k, v in request.headers.items()}))

    bucket.s3.meta.events.register("before-sign.s3", record)
    yield requests
    bucket.s3.meta.events.unregister("before-sign.s3", record)


def test_puts_and_copies_name_sse_kms_and_the_key(bucket, sent):
    bucket.store.put("rag/a.txt", b"one")
    assert bucket.store.put("rag/b.txt", b"two", only_if_absent=True) is True
    bucket.store.copy("rag/a.txt", "rag/c.txt")
    writes = [(op, h) for op, h in sent if op in ("PutObject", "CopyObject")]
    assert [op for op, _ in writes] == ["PutObject", "PutObject", "CopyObject"]
    for _, headers in writes:
        assert headers["x-amz-server-side-encryption"] == "aws:kms"
        assert headers[KEY_HEADER] == bucket.key_id


def test_a_presigned_post_pins_the_key(bucket):
    post = bucket.store.presigned_post("incoming/x", max_bytes=10, expires_in=60, metadata={"doc": "1"})
    assert post["fields"]["x-amz-server-side-encryption"] == "aws:kms"
    assert post["fields"][KEY_HEADER] == bucket.key_id
    policy = json.loads(base64.b64decode(post["fields"]["policy"]))
    # the signed policy holds the client to it, so the form cannot drop or change the key
    assert {KEY_HEADER: bucket.key_id} in policy["conditions"]
    assert {"x-amz-server-side-encryption": "aws:kms"} in policy["conditions"]


def test_a_store_without_the_key_refuses_to_write_and_says_why(bucket, sent):
    store = ObjectStore(bucket.s3, bucket.name, "")
    for write in (lambda: store.put("rag/a.txt", b"one"), lambda: store.copy("rag/a.txt", "rag/b.txt"),
                  lambda: store.presigned_post("incoming/x", max_bytes=10, expires_in=60, metadata={})):
        with pytest.raises(RuntimeError, match="SLUICE_KMS_KEY_ID"):
            write()
    assert sent == []  # nothing reached S3


def test_only_the_object_store_writes_to_the_bucket():
    # A write anywhere else could leave the key out; the local seed writes to moto only.
    writes = re.compile(r"\.(put_object|copy_object|upload_file|upload_fileobj|generate_presigned_post|"
                        r"create_multipart_upload)\(")
    sources = [p for d in ("shared/sluice", "functions") for p in (ROOT / d).rglob("*.py")
               if "local" not in p.relative_to(ROOT).parts]
    assert len(sources) > 50
    writers = sorted(str(p.relative_to(ROOT)) for p in sources if writes.search(p.read_text()))
    assert writers == ["shared/sluice/storage/s3.py"]
