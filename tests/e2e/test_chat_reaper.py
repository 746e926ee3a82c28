"""The reaper as the template wires it sweeps chat work too (issue 16 with issue 17): a conversation's
attachment whose job was lost is resumed on the chat queue and ends indexed; a presigned chat upload
never posted fails with a sentence; no knowledge-base document is made or moved by either."""

from __future__ import annotations

import psycopg
import pytest

from sluice.chat.recovery import NEVER_ARRIVED
from tests.chat_samples import report_pdf
from tests.e2e.test_chat_http import attach, new_conversation, upload, user, wait_settled

pytestmark = pytest.mark.e2e


def execute(runtime, sql: str, *params: object) -> None:
    with psycopg.connect(runtime.database_url, autocommit=True) as conn:
        conn.execute(sql, params)


def documents(runtime) -> set[object]:
    with psycopg.connect(runtime.database_url) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM documents").fetchall()}


def test_the_reaper_resumes_a_lost_attachment_on_the_chat_queue_and_fails_a_chat_upload_never_posted(
        runtime, client_for):
    api = user(client_for, "reaper-chad")
    f = upload(api, "report.pdf", report_pdf(40))
    cid = new_conversation(api)
    att, _ = wait_settled(api, cid, attach(api, cid, f["id"])["id"])
    assert att["status"] == "indexed"
    # WHEN the attachment is back where a lost summarising message leaves it, silent for three hours
    execute(runtime, "UPDATE chat_attachments SET status = 'summarizing', overview = NULL, overview_kind = NULL,"
                     " progress_done = 0, progress_total = 1, partial_summaries = '[]',"
                     " updated_at = now() - interval '3 hours' WHERE id = %s", att["id"])
    # AND a presigned chat upload was never posted
    pending = api.post("/files/uploads", json={"filename": "never.txt"}).json()
    execute(runtime, "UPDATE chat_files SET created_at = now() - interval '3 hours' WHERE id = %s", pending["id"])
    before = documents(runtime)

    runtime.scheduler.fire("ReaperFunction")

    resumed, _ = wait_settled(api, cid, att["id"])
    assert resumed["status"] == "indexed" and resumed["overview"]
    row = api.get(f"/files/{pending['id']}").json()
    assert (row["status"], row["error_message"]) == ("failed", NEVER_ARRIVED)
    assert documents(runtime) == before  # no base's document was made for either
