"""``admission.admit`` for many private pools in one call (R-ACC-5, R-ACC-6): a shared upload to
several recipients is admitted for all of them or for none, and the refusal names who stops it.
Against the real embedded PostgreSQL; the upload paths' own tests (test_private_pools,
tests/integration/ingest/test_ingest_shared_pools) cover one pool and the routes."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.rows import dict_row

from sluice.admission import admit, admit_members, pool_owners
from sluice.bases import CreateKnowledgeBase, create_base
from sluice.config import Settings
from sluice.db import documents as doc_repo
from sluice.db.connection import transaction
from sluice.errors import DocCapReachedError, RateLimitError, ValidationError
from tests.integration.access.conftest import EDIT, VIEW, who

RECIPIENTS = ["ana", "ben", "cat"]


def settings() -> Settings:
    return Settings(PRIVATE_DOC_CAP=5, UPLOAD_RATE_PER_MINUTE=4, UPLOAD_RATE_PER_DAY=50,
                    INDEXING_PAUSED=False, INDEXING_PAUSED_PARAMETER="")


def fill_pool(user: str, documents: int) -> None:
    """``documents`` rows in a personal base of ``user``: their private pool holds that many."""
    p = who(user, "acme", VIEW, EDIT)
    with transaction() as conn:
        kb = create_base(conn, p, CreateKnowledgeBase(name=f"{user}'s", scope="personal"))
        for i in range(documents):
            doc_repo.insert(conn, kb_id=kb.id, org_id=kb.org_id, collection_name=kb.collection_name,
                            filename=f"{i}.txt", storage_path=f"rag/{kb.collection_name}/{i}.txt",
                            source="upload", uploaded_by=user)


def counted(db_url: str) -> dict[str, int]:
    with psycopg.connect(db_url, row_factory=dict_row) as c:
        rows = c.execute("SELECT user_id, count(*) AS n FROM upload_events GROUP BY user_id").fetchall()
    return {r["user_id"]: r["n"] for r in rows}


def backdate_uploads(db_url: str, user: str, seconds_ago: float, n: int) -> None:
    with psycopg.connect(db_url) as c:
        c.execute("INSERT INTO upload_quotas (user_id) VALUES (%s) ON CONFLICT DO NOTHING", (user,))
        c.execute("INSERT INTO upload_events (user_id, accepted_at) SELECT %s, clock_timestamp() "
                  "- make_interval(secs => %s) FROM generate_series(1, %s)", (user, seconds_ago, n))


def test_a_share_to_three_recipients_is_counted_once_for_each(db_url):
    with transaction() as conn:
        admit(conn, RECIPIENTS, 2, settings(), shared=True)
    assert counted(db_url) == {"ana": 2, "ben": 2, "cat": 2}


def test_one_full_pool_refuses_the_share_for_everyone_and_is_named(db_url):
    # GIVEN ben's pool at 4 of 5 and cat's full; ana's empty
    fill_pool("ben", 4)
    fill_pool("cat", 5)
    # WHEN one document is shared with all three: ben has room for it, cat does not
    with transaction() as conn, pytest.raises(DocCapReachedError) as err:
        admit(conn, RECIPIENTS, 1, settings(), shared=True)
    assert err.value.status == 409
    assert err.value.message == (
        "The private pools of cat have no room for this document (at most 5 each); nothing was shared. "
        "Remove them from the recipients or ask them to delete a document.")
    assert err.value.details["recipients"] == ["cat"]
    assert err.value.details["held"] == {"cat": 5}
    assert err.value.details["fields"] == {"recipients": "Full: cat."}
    # and two documents fit neither ben nor cat: both named, in the order given
    with transaction() as conn, pytest.raises(DocCapReachedError) as err:
        admit(conn, RECIPIENTS, 2, settings(), shared=True)
    assert err.value.details["recipients"] == ["ben", "cat"]
    assert err.value.details["held"] == {"ben": 4, "cat": 5}
    assert "have no room for 2 documents" in err.value.message
    # THEN nobody's budget was spent
    assert counted(db_url) == {}


def test_one_recipient_over_the_minute_refuses_the_share_and_spends_nobodys_budget(db_url):
    backdate_uploads(db_url, "ben", 10, 4)  # ben uploaded four ten seconds ago: his minute is used up
    with transaction() as conn, pytest.raises(RateLimitError) as err:
        admit(conn, RECIPIENTS, 1, settings(), shared=True)
    assert err.value.status == 429
    assert err.value.message == (
        "Too many uploads into the private pools of ben: a private pool takes 4 documents a minute and 50 a "
        "day. Nothing was shared; try again later.")
    assert err.value.details["recipients"] == ["ben"]
    # the oldest of ben's four leaves the minute in about fifty seconds
    assert 45 <= err.value.details["retry_after"] <= 51
    assert counted(db_url) == {"ben": 4}


def test_more_documents_than_a_minute_holds_are_refused_in_words_not_told_to_wait(db_url):
    with transaction() as conn, pytest.raises(ValidationError) as err:
        admit(conn, RECIPIENTS, 5, settings(), shared=True)
    assert err.value.message == ("This upload holds 5 documents, and a private pool takes at most 4 a minute; "
                                 "split it into smaller archives.")
    assert counted(db_url) == {}


def test_an_unpack_whose_members_were_counted_at_upload_is_checked_against_the_cap_only(db_url):
    fill_pool("cat", 3)
    backdate_uploads(db_url, "ana", 5, 4)  # ana's minute is used up, which counted members do not ask about
    with transaction() as conn:
        assert admit_members(conn, RECIPIENTS, 2, 2, 2, settings(), shared=True) == 2
    with transaction() as conn, pytest.raises(DocCapReachedError) as err:
        admit_members(conn, RECIPIENTS, 3, 3, 3, settings(), shared=True)
    assert err.value.message == ("This archive would add 3 documents to the private pools of cat, which have no "
                                 "room for them (at most 5 each).")
    assert err.value.details["recipients"] == ["cat"]
    assert counted(db_url) == {"ana": 4}


def test_a_base_that_is_no_ones_pool_admits_anything_and_a_sync_is_deferred_in_its_words(db_url):
    curator = who("olga", "acme", VIEW, EDIT)
    with transaction() as conn:
        kb = create_base(conn, curator, CreateKnowledgeBase(name="Curated", scope="org"))
        assert pool_owners(kb) == []
        admit(conn, pool_owners(kb), 1000, settings())
    assert counted(db_url) == {}
    backdate_uploads(db_url, "dan", 1, 4)
    with transaction() as conn, pytest.raises(RateLimitError) as err:
        admit(conn, ["dan"], 1, settings(), via="sync")
    assert err.value.message == (
        "Deferred: a private knowledge base takes at most 4 documents a minute and 50 a day from its owner's "
        "uploads and syncs together, and that is used up for now. The file was not fetched; the next run takes it.")
