"""``sluice local seed-events``: the bases, documents and objects tests/events/*.json name, so each
sample event does real work when invoked (`sam local invoke -e`, or the built-artifact check).

What the events point at:

- base ``33333333-…`` (collection ``sample_collection``, alice's, in org acme): the search event's
  collection, the inbox drop's and the ingestion report's base;
- base ``11111111-…`` (``sample_uploads``, alice's): the presign event's base;
- document ``33333333-…``, stored at ``rag/sample_collection/33333333-…_report 2025.pdf``, a PDF
  not yet parsed: the parse (and dead-letter) events' object;
- ``inbox/33333333-…/shared/handbook 2025.md``: the inbox drop event's object;
- document ``22222222-…``, parsed and chunked (attempt 1) and waiting for its embedding: the chunk
  event's ``stage/parsed/22222222-….1.json`` and the embed event's ``stage/chunks/22222222-….1.json``.

The objects are stored with the bucket's notifications paused, as if S3 had not yet delivered
them: the sample event is that delivery. Run it again and it changes nothing that exists.
"""

from __future__ import annotations

import importlib.util
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

SAMPLE_KB = uuid.UUID("33333333-3333-4333-8333-333333333333")
UPLOADS_KB = uuid.UUID("11111111-1111-4111-8111-111111111111")
SAMPLE_DOC = uuid.UUID("33333333-3333-4333-8333-333333333333")
STAGED_DOC = uuid.UUID("22222222-2222-4222-8222-222222222222")
OWNER, ORG = "alice", "acme"
SAMPLE_KEY = f"rag/sample_collection/{SAMPLE_DOC}_report 2025.pdf"
INBOX_KEY = f"inbox/{SAMPLE_KB}/shared/handbook 2025.md"
STAGED_KEY = f"rag/sample_collection/{STAGED_DOC}_penalties.md"
PENALTY = ("Penalty clause: a delivery later than the agreed date costs the supplier two percent of the "
           "order value per week of delay, up to ten percent.")


@dataclass
class Seeded:
    created: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)


def seed_events(root: Path) -> Seeded:
    """Seed the running stack this process's environment names (its database and moto)."""
    from sluice import aws
    from sluice.config import get_settings

    done = Seeded()
    s3 = aws.client("s3")
    bucket = get_settings().bucket_name
    _bases(done)
    notifications = s3.get_bucket_notification_configuration(Bucket=bucket)
    notifications.pop("ResponseMetadata", None)
    s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration={})
    try:
        _objects(root, s3, bucket, done)
    finally:
        s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration=notifications)
    return done


def _bases(done: Seeded) -> None:
    from sluice.bases import CreateKnowledgeBase, create_base
    from sluice.db import knowledge_bases as kb_repo
    from sluice.db.connection import transaction
    from sluice.identity import Principal
    from sluice.wiring import default_embedding

    owner = Principal(OWNER, ORG, frozenset({"collections:view", "collections:edit"}), False)
    for kb_id, name, collection in ((SAMPLE_KB, "Sample base", "sample_collection"),
                                    (UPLOADS_KB, "Sample uploads", "sample_uploads")):
        with transaction() as conn:
            if kb_repo.get(conn, kb_id) is not None:
                done.present.append(f"base {kb_id} ({collection})")
                continue
            create_base(conn, owner, CreateKnowledgeBase(name=name, collection_name=collection),
                        default=default_embedding(), kb_id=kb_id)
            done.created.append(f"base {kb_id} ({collection})")


def _document(doc_id: uuid.UUID, filename: str, key: str, size: int) -> bool:
    from sluice.db import documents as doc_repo
    from sluice.db.connection import transaction

    with transaction() as conn:
        if doc_repo.get(conn, doc_id) is not None:
            return False
        doc_repo.insert(conn, id=doc_id, kb_id=SAMPLE_KB, org_id=ORG, collection_name="sample_collection",
                        filename=filename, filesize=size, filetype=None, storage_path=key, source="upload",
                        source_path=None, uploaded_by=OWNER)
    return True


def _objects(root: Path, s3: Any, bucket: str, done: Seeded) -> None:
    report = _pdf(["Supply agreement 2025", PENALTY])
    if _document(SAMPLE_DOC, "report 2025.pdf", SAMPLE_KEY, len(report)):
        s3.put_object(Bucket=bucket, Key=SAMPLE_KEY, Body=report)
        done.created.append(f"document {SAMPLE_DOC} at {SAMPLE_KEY} (not yet parsed)")
    else:
        done.present.append(f"document {SAMPLE_DOC}")
    s3.put_object(Bucket=bucket, Key=INBOX_KEY, Body=b"# Handbook 2025\n\nNew staff read the safety rules first.\n")
    done.created.append(f"object {INBOX_KEY}")
    staged = f"# Penalties\n\n{PENALTY}\n".encode()
    if _document(STAGED_DOC, "penalties.md", STAGED_KEY, len(staged)):
        s3.put_object(Bucket=bucket, Key=STAGED_KEY, Body=staged)
        # Parsed and chunked here, as the parse and chunk functions would: the chunk and embed events
        # then name artifacts that exist.
        _run(root, "parse", _s3_event(bucket, STAGED_KEY, "IngestQueue"))
        _run(root, "chunk", _s3_event(bucket, f"stage/parsed/{STAGED_DOC}.1.json", "ChunkQueue"))
        done.created.append(f"document {STAGED_DOC}, parsed and chunked: stage/chunks/{STAGED_DOC}.1.json")
    else:
        done.present.append(f"document {STAGED_DOC}")


def _pdf(lines: list[str]) -> bytes:
    pymupdf: Any = importlib.import_module("pymupdf")  # untyped

    document = pymupdf.open()
    page = document.new_page()
    for i, line in enumerate(lines):
        page.insert_textbox(pymupdf.Rect(72, 72 + 60 * i, 520, 130 + 60 * i), line)
    data: bytes = document.tobytes()
    return data


def _s3_event(bucket: str, key: str, queue: str) -> dict[str, Any]:
    body = {"Records": [{"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
                         "eventName": "ObjectCreated:Put",
                         "s3": {"bucket": {"name": bucket, "arn": f"arn:aws:s3:::{bucket}"},
                                "object": {"key": quote_plus(key, safe="/"), "size": 0}}}]}
    return {"Records": [{"messageId": str(uuid.uuid4()), "receiptHandle": "seed", "body": json.dumps(body),
                         "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
                         "eventSource": "aws:sqs", "awsRegion": "us-east-1",
                         "eventSourceARN": f"arn:aws:sqs:us-east-1:123456789012:sluice-{queue}"}]}


def _run(root: Path, function: str, event: dict[str, Any]) -> None:
    from sluice.local.runtime import LambdaContext

    path = root / "functions" / function / "app.py"
    spec = importlib.util.spec_from_file_location(f"sluice_seed_{function}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.handler(event, LambdaContext(function, 300))
    if result != {"batchItemFailures": []}:
        raise RuntimeError(f"seeding: the {function} stage failed on {event['Records'][0]['body'][:200]}")
