"""Attachments graded by tokens, indexed and summarised off the request, in steps that resume (R-CHAT-2)."""

from __future__ import annotations

import math
import uuid

import pytest

from sluice.chat import assembly, attachments, conversations, files
from sluice.chat.assembly import ContextRequest
from sluice.chat.conversations import NewConversation
from sluice.errors import AttachmentLimitError, NotFoundError
from tests.chat_samples import PINPOINT_QUESTION, PLANTED, report_pdf
from tests.integration.chat.conftest import ALICE, MALLORY, words
from tests.unit.parsing.parsing_samples import png_bytes


def conversation(chat, who=ALICE) -> str:
    return str(conversations.create_conversation(chat.res, who, NewConversation(title="t")).id)


def attachment(chat, conversation_id: str, attachment_id) -> attachments.Attachment:
    found = {str(a.id): a for a, _ in attachments.list_attachments(chat.res, ALICE, conversation_id)}
    return found[str(attachment_id)]


def test_a_300_word_note_is_kept_whole_and_read_verbatim(chat):
    # GIVEN a 300-word note uploaded and attached
    cid = conversation(chat)
    note = words(300)
    f = files.upload(chat.res, ALICE, "notes.md", note.encode())

    # WHEN it is attached
    att, _ = attachments.attach(chat.res, ALICE, cid, f.id)

    # THEN it is graded in the request: full text, no job, no chunk
    assert att.status == "full_text" and att.tier == "small"
    assert 300 <= att.tokens <= 4000
    assert chat.jobs == [] and chat.chunk_count() == 0
    # AND the context carries it verbatim after the fence, then the question, with no search
    ctx = assembly.assemble(chat.res, ALICE, cid, ContextRequest(question="What did the committee review?"))
    assert ctx.block.startswith(assembly.FENCE)
    assert f"[Document: notes.md]\nFull text:\n{note}" in ctx.block
    assert ctx.block.endswith("---\n\nWhat did the committee review?")
    assert ctx.searched is False and ctx.excerpts == []
    [contribution] = ctx.contributions
    assert contribution.contributes == "full_text" and contribution.tokens > att.tokens


def test_no_text_fails_with_the_reason(chat):
    cid = conversation(chat)
    image = files.upload(chat.res, ALICE, "photo.png", png_bytes())
    att, _ = attachments.attach(chat.res, ALICE, cid, image.id)
    assert att.status == "failed" and att.error_message == "No extractable text" and att.tokens == 0
    ctx = assembly.assemble(chat.res, ALICE, cid, ContextRequest(question="What is in the photo?"))
    assert "[Document: photo.png]\nNote: this document could not be read (No extractable text)" in ctx.block


def test_a_40_page_pdf_is_indexed_summarised_and_answers_a_pinpoint_question(chat):
    # GIVEN a 40-page report with one sentence planted on page 23, and no chat model configured
    cid = conversation(chat)
    f = files.upload(chat.res, ALICE, "report.pdf", report_pdf(40))
    assert f.preview and f.preview.startswith("Section 1: operations report")

    # WHEN it is attached: graded in the request, indexed by the worker
    att, _ = attachments.attach(chat.res, ALICE, cid, f.id)
    assert att.status == "indexing" and att.tier == "medium" and 4000 < att.tokens <= 40_000
    assert att.progress_done == 0 and att.progress_total == math.ceil(att.chunk_count / 16)
    assert chat.jobs == [{"chat_attachment": str(att.id), "attempt": 1}]
    # AND the context says it is still being processed, with its progress
    ctx = assembly.assemble(chat.res, ALICE, cid, ContextRequest(question=PINPOINT_QUESTION))
    assert f"Note: this document is still being processed (indexing 0/{att.progress_total})" in ctx.block
    assert ctx.searched is False

    chat.run_jobs()

    # THEN it is indexed, every chunk stored, with an extractive overview labelled so
    done = attachment(chat, cid, att.id)
    assert done.status == "indexed" and done.overview_kind == "extractive"
    assert "no chat model is configured" in done.overview_note
    assert done.chunk_count == chat.chunk_count(att.id) > 40
    assert done.overview and done.overview.startswith("- Section 1")
    assert chat.res.tokens().count(done.overview) <= chat.res.settings.chat_overview_tokens
    # AND a pinpoint question gets the planted sentence among 5 excerpts, threshold 0, with its page
    ctx = assembly.assemble(chat.res, ALICE, cid, ContextRequest(question=PINPOINT_QUESTION))
    assert ctx.searched and ctx.top_k == 5 and len(ctx.excerpts) == 5 and ctx.documents == ["report.pdf"]
    hit = next(e for e in ctx.excerpts if "four thousand two hundred" in " ".join(e.candidate.content.split()))
    assert hit.candidate.page_start == 23
    assert f"({'report.pdf'}, p. 23)" in ctx.block
    # AND the block is in R-CHAT-3's order: fence, overview, excerpts, question
    fence, overview_at = ctx.block.index(assembly.FENCE), ctx.block.index("[Document: report.pdf]\nOverview")
    excerpts_at = ctx.block.index("Excerpts relevant to the question:")
    question_at = ctx.block.rindex(PINPOINT_QUESTION)
    assert fence < overview_at < excerpts_at < question_at
    assert PLANTED.split()[0] in ctx.block


def test_the_sixth_attachment_is_refused(chat):
    cid = conversation(chat)
    ids = [files.upload(chat.res, ALICE, f"n{i}.txt", words(50).encode()).id for i in range(6)]
    for file_id in ids[:5]:
        attachments.attach(chat.res, ALICE, cid, file_id)
    with pytest.raises(AttachmentLimitError) as refused:
        attachments.attach(chat.res, ALICE, cid, ids[5])
    assert refused.value.status == 409 and refused.value.code == "ATTACHMENT_LIMIT"
    assert "at most 5 attachments" in refused.value.message
    assert len(attachments.list_attachments(chat.res, ALICE, cid)) == 5


def test_work_that_runs_out_of_time_continues_itself_and_a_duplicate_writes_nothing_twice(chat):
    cid = conversation(chat)
    f = files.upload(chat.res, ALICE, "report.pdf", report_pdf(40))
    att, _ = attachments.attach(chat.res, ALICE, cid, f.id)
    job = chat.jobs[0]

    # WHEN the worker has time for two batches only, per delivery
    budget = iter([1e9, 1e9] + [0.0] * 10)
    chat.run_jobs(time_left=lambda: next(budget), limit=1)
    mid = attachment(chat, cid, att.id)
    # THEN it stored two batches, said so, and sent itself a continuation
    assert mid.status == "indexing" and mid.progress_done == 2
    assert chat.chunk_count(att.id) == 32
    assert chat.jobs == [job]
    # AND a duplicate of the original job, delivered as well, adds nothing twice
    chat.jobs.append(dict(job))
    chat.run_jobs()
    done = attachment(chat, cid, att.id)
    assert done.status == "indexed" and chat.chunk_count(att.id) == done.chunk_count
    rows = chat.rows("SELECT count(DISTINCT chunk_index) AS n FROM chat_attachment_chunks WHERE attachment_id = %s",
                     att.id)
    assert rows[0]["n"] == done.chunk_count


def test_another_users_file_or_conversation_is_not_found(chat):
    cid = conversation(chat)
    theirs = files.upload(chat.res, MALLORY, "secret.txt", b"mallory's secret")
    with pytest.raises(NotFoundError) as refused:
        attachments.attach(chat.res, ALICE, cid, theirs.id)
    with pytest.raises(NotFoundError) as absent:
        attachments.attach(chat.res, ALICE, cid, uuid.uuid4())
    assert refused.value.body() == absent.value.body() == {
        "error": {"code": "NOT_FOUND", "message": "File not found", "details": {}}}
    mine = files.upload(chat.res, ALICE, "mine.txt", b"mine")
    with pytest.raises(NotFoundError) as other_conversation:
        attachments.attach(chat.res, MALLORY, cid, mine.id)
    assert other_conversation.value.message == "Conversation not found"
    assert chat.rows("SELECT count(*) AS n FROM chat_attachments")[0]["n"] == 0
