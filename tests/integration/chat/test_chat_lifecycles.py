"""Removing, deleting and registering (R-CHAT-4); what a restart or a dead letter leaves (never stuck)."""

from __future__ import annotations

import pytest

from sluice.chat import assembly, attachments, conversations, files
from sluice.chat.assembly import ContextRequest
from sluice.chat.attachments import fail_interrupted
from sluice.chat.conversations import NewConversation, NewMessage
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db.connection import transaction
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.errors import CollectionNotFoundError, ConflictError, NotFoundError
from tests.chat_samples import report_pdf
from tests.fakes import FakeEmbedder
from tests.integration.chat.conftest import ALICE, MALLORY, words


@pytest.fixture
def fast(chat):
    embedder = FakeEmbedder()
    chat.res.embedder = lambda: embedder
    return chat


def new_conversation(chat, who=ALICE) -> str:
    return str(conversations.create_conversation(chat.res, who, NewConversation()).id)


def indexed_report(chat, cid: str):
    f = files.upload(chat.res, ALICE, "report.pdf", report_pdf(40))
    att, _ = attachments.attach(chat.res, ALICE, cid, f.id)
    chat.run_jobs()
    return att, f


def test_removing_an_attachment_leaves_no_chunk_no_object_and_no_record(fast):
    chat = fast
    cid = new_conversation(chat)
    att, f = indexed_report(chat, cid)
    other_cid = new_conversation(chat)
    kept, kept_file = indexed_report(chat, other_cid)
    assert chat.chunk_count(att.id) > 0 and f.storage_path in chat.keys("chat/")
    # another user cannot remove it, and gets the absent answer
    with pytest.raises(NotFoundError):
        attachments.remove_attachment(chat.res, MALLORY, cid, str(att.id))
    attachments.remove_attachment(chat.res, ALICE, cid, str(att.id))
    assert chat.chunk_count(att.id) == 0
    assert f.storage_path not in chat.keys("chat/")
    assert chat.rows("SELECT count(*) AS n FROM chat_attachments WHERE id = %s", att.id)[0]["n"] == 0
    assert chat.rows("SELECT count(*) AS n FROM chat_files WHERE id = %s", f.id)[0]["n"] == 0
    # and the other conversation's attachment is untouched
    assert chat.chunk_count(kept.id) > 0 and kept_file.storage_path in chat.keys("chat/")


def test_an_attachment_removed_while_it_is_indexing_gets_no_chunks(fast):
    chat = fast
    cid = new_conversation(chat)
    f = files.upload(chat.res, ALICE, "report.pdf", report_pdf(40))
    att, _ = attachments.attach(chat.res, ALICE, cid, f.id)
    budget = iter([1e9] + [0.0] * 5)
    chat.run_jobs(time_left=lambda: next(budget), limit=1)
    assert chat.chunk_count(att.id) == 16
    attachments.remove_attachment(chat.res, ALICE, cid, str(att.id))
    chat.run_jobs()  # the continuation finds it gone
    assert chat.chunk_count() == 0 and chat.keys("chat/") == []


def test_deleting_a_conversation_deletes_its_attachments_files_and_chunks(fast):
    chat = fast
    cid = new_conversation(chat)
    att, f = indexed_report(chat, cid)
    note = files.upload(chat.res, ALICE, "note.txt", words(100).encode())
    attachments.attach(chat.res, ALICE, cid, note.id)
    linked = files.upload(chat.res, ALICE, "linked.txt", b"linked to a message")
    conversations.post_message(chat.res, ALICE, cid, NewMessage(text="hello", file_ids=[linked.id]))
    elsewhere = files.upload(chat.res, ALICE, "elsewhere.txt", b"not in the conversation")
    with pytest.raises(NotFoundError):
        conversations.delete_conversation(chat.res, MALLORY, cid)

    conversations.delete_conversation(chat.res, ALICE, cid)

    assert chat.chunk_count() == 0
    assert chat.keys("chat/") == [elsewhere.storage_path]
    for table in ("chat_attachments", "chat_messages", "conversations"):
        assert chat.rows(f"SELECT count(*) AS n FROM {table}")[0]["n"] == 0, table
    assert [r["id"] for r in chat.rows("SELECT id FROM chat_files")] == [elsewhere.id]


def _base(owner: str) -> KnowledgeBase:
    import uuid

    kb = KnowledgeBase(
        id=uuid.uuid4(), name="Contracts", collection_name=f"contracts_{uuid.uuid4().hex[:6]}", scope="personal",
        owner_id=owner, org_id=None, is_default=False, description="", embedding_provider="local",
        embedding_model="all-MiniLM-L6-v2", embedding_dim=384, embedding_base_url=None, embedding_secret_id=None,
        ingestion_config={}, created_by=owner)
    with transaction() as conn:
        return kb_repo.insert(conn, kb)


def test_registering_copies_an_indexed_attachment_into_a_base_where_it_outlives_the_conversation(fast):
    chat = fast
    cid = new_conversation(chat)
    att, f = indexed_report(chat, cid)
    mine, theirs = _base("alice"), _base("mallory")
    # a base the caller may not write is the absent answer, and nothing is copied
    with pytest.raises(CollectionNotFoundError):
        attachments.register(chat.res, ALICE, cid, str(att.id), str(theirs.id))
    assert chat.keys("rag/") == []

    accepted = attachments.register(chat.res, ALICE, cid, str(att.id), str(mine.id))

    doc = accepted.document
    assert doc.kb_id == mine.id and doc.filename == "report.pdf" and doc.source == "upload"
    assert doc.storage_path.startswith(f"rag/{mine.collection_name}/")
    original = chat.moto.s3.get_object(Bucket=chat.moto.name, Key=f.storage_path)["Body"].read()
    assert chat.moto.s3.get_object(Bucket=chat.moto.name, Key=doc.storage_path)["Body"].read() == original
    with pytest.raises(ConflictError):
        attachments.register(chat.res, ALICE, cid, str(att.id), str(mine.id))
    listed = attachments.list_attachments(chat.res, ALICE, cid)
    assert listed[0][0].registered_document_id == doc.id

    conversations.delete_conversation(chat.res, ALICE, cid)

    with transaction() as conn:
        assert doc_repo.get(conn, doc.id) is not None
    assert chat.keys("rag/") == [doc.storage_path] and chat.keys("chat/") == []


def test_a_full_text_attachment_cannot_be_registered(fast):
    chat = fast
    cid = new_conversation(chat)
    note = files.upload(chat.res, ALICE, "note.txt", words(100).encode())
    att, _ = attachments.attach(chat.res, ALICE, cid, note.id)
    with pytest.raises(ConflictError) as refused:
        attachments.register(chat.res, ALICE, cid, str(att.id), str(_base("alice").id))
    assert "never chunked" in refused.value.message


def test_a_restart_fails_interrupted_work_and_attaching_again_restarts_it(fast):
    chat = fast
    cid = new_conversation(chat)
    f = files.upload(chat.res, ALICE, "report.pdf", report_pdf(40))
    att, _ = attachments.attach(chat.res, ALICE, cid, f.id)
    assert att.status == "indexing"
    done_note = files.upload(chat.res, ALICE, "done.txt", words(50).encode())
    attachments.attach(chat.res, ALICE, cid, done_note.id)

    # WHEN the runtime starts again (its queue, and this job, are gone)
    chat.jobs.clear()
    assert fail_interrupted(transaction) == 1

    listed = {a.file_id: a for a, _ in attachments.list_attachments(chat.res, ALICE, cid)}
    assert listed[f.id].status == "failed" and listed[f.id].error_message == "Interrupted by restart"
    assert listed[done_note.id].status == "full_text"
    ctx = assembly.assemble(chat.res, ALICE, cid, ContextRequest(question="q"))
    assert "Note: this document could not be read (Interrupted by restart)" in ctx.block
    # AND attaching the file again restarts the work under a new attempt; an old job is ignored
    again, _ = attachments.attach(chat.res, ALICE, cid, f.id)
    assert again.id == att.id and again.attempt == 2 and again.status == "indexing"
    chat.jobs.insert(0, {"chat_attachment": str(att.id), "attempt": 1})
    chat.run_jobs()
    final = {a.file_id: a for a, _ in attachments.list_attachments(chat.res, ALICE, cid)}[f.id]
    assert final.status == "indexed" and chat.chunk_count(att.id) == final.chunk_count


def test_a_job_that_failed_every_delivery_while_indexing_fails_with_what_it_met(fast):
    chat = fast
    cid = new_conversation(chat)
    f = files.upload(chat.res, ALICE, "report.pdf", report_pdf(40))
    att, _ = attachments.attach(chat.res, ALICE, cid, f.id)
    embedder = chat.res.embedder()

    def broken(batch: int) -> None:
        raise ConnectionError("the embedder went away")

    embedder.before_batch = broken
    with pytest.raises(ConnectionError):
        chat.run_jobs()
    chat.dead_letter({"chat_attachment": str(att.id), "attempt": 1})
    failed = attachments.list_attachments(chat.res, ALICE, cid)[0][0]
    assert failed.status == "failed"
    assert failed.error_message.startswith("The attachment could not be processed (ConnectionError while indexing)")


def test_after_a_local_restart_files_whose_objects_are_gone_answer_a_clear_error(fast):
    # The local object store is moto's memory: a restarted runtime keeps its database and starts with an
    # empty bucket. A file whose original is gone says so; nothing hands out a link to nothing or crashes.
    from sluice.chat.files import PresignChatFile
    from sluice.chat.recovery import OBJECTS_RESET, fail_lost_files

    chat = fast
    cid = new_conversation(chat)
    att, report = indexed_report(chat, cid)
    notes = files.upload(chat.res, ALICE, "notes.txt", words(50).encode())
    pending = files.presign(chat.res, ALICE, PresignChatFile(filename="later.txt")).file
    scan = files.upload(chat.res, ALICE, "scan.pdf", report_pdf(2))
    # WHEN the runtime starts again on the same database, with an empty store
    for key in chat.keys(""):
        chat.moto.s3.delete_object(Bucket=chat.moto.name, Key=key)
    assert fail_lost_files(transaction) == 4

    for f in (report, notes, pending, scan):
        row = files.get_file(chat.res, ALICE, f.id)
        assert (row.status, row.error_message) == ("failed", OBJECTS_RESET), f.filename
        assert files.download_url(chat.res, row) is None
    with pytest.raises(ConflictError) as refused:
        attachments.attach(chat.res, ALICE, cid, notes.id)
    assert OBJECTS_RESET in refused.value.message
    with pytest.raises(ConflictError) as refused:
        files.pages(chat.res, ALICE, scan.id, None)
    assert OBJECTS_RESET in refused.value.message
    with pytest.raises(ConflictError) as refused:
        attachments.register(chat.res, ALICE, cid, str(att.id), str(_base("alice").id))
    assert OBJECTS_RESET in refused.value.message
    # The attachment's text and chunks are in the database: the inline context still reads them; the
    # reference mode names the file and why it cannot be fetched, with no link.
    inline = assembly.assemble(chat.res, ALICE, cid, ContextRequest(question="What happened to the pier?"))
    assert "[Document: report.pdf]" in inline.block and inline.searched
    reference = assembly.assemble(chat.res, ALICE, cid, ContextRequest(question="q", mode="reference"))
    assert reference.references == []
    assert f"Attached file: report.pdf - not available: {OBJECTS_RESET}" in reference.block
    assert [c.contributes for c in reference.contributions] == ["note"]
    # AND a runtime restarted again marks nothing twice
    assert fail_lost_files(transaction) == 0
