"""Object storage: key naming, filename sanitising, and the S3 adapter (SSE-KMS always); the queue and
workflow adapters Sluice sends its own jobs through."""

from sluice.storage.keys import (
    chat_incoming_file_id,
    chat_incoming_key,
    chat_key,
    chat_text_key,
    collection_prefix,
    content_key,
    display_name,
    inbox_kb_id,
    incoming_document_id,
    incoming_key,
    incoming_prefix,
    parse_stage_key,
    rag_key,
    safe_filename,
    stage_key,
)
from sluice.storage.queues import JobQueue
from sluice.storage.s3 import ObjectStore
from sluice.storage.workflows import StepFunctionsWorkflow

__all__ = [
    "JobQueue",
    "ObjectStore",
    "StepFunctionsWorkflow",
    "chat_incoming_file_id",
    "chat_incoming_key",
    "chat_key",
    "chat_text_key",
    "collection_prefix",
    "content_key",
    "display_name",
    "inbox_kb_id",
    "incoming_document_id",
    "incoming_key",
    "incoming_prefix",
    "parse_stage_key",
    "rag_key",
    "safe_filename",
    "stage_key",
]
