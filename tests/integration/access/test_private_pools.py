"""Private pools (R-ACC-5): the document cap and the per-user upload limits under concurrent
requests, and the indexing kill switch, against the real embedded PostgreSQL.

Twenty threads call the upload domain function at once, each on its own pooled
connection; whatever the interleaving, never more are accepted than allowed.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from psycopg.rows import dict_row

from sluice import aws
from sluice.admission import admit, indexing_paused, pool_owners
from sluice.bases import CreateKnowledgeBase, create_base
from sluice.config import Settings, reset_settings
from sluice.db.connection import close_pool, transaction
from sluice.errors import DocCapReachedError, IndexingPausedError, RateLimitError, SluiceError, ValidationError
from sluice.ingest.uploads import Intake, IntoBase, PresignRequest, accept
from tests.fakes import FakeStore
from tests.integration.access.conftest import EDIT, VIEW, who

CONCURRENT = 20
OWNER = who("pia", "acme", VIEW, EDIT)


def settings(**values) -> Settings:
    base = {"PRIVATE_DOC_CAP": 20, "UPLOAD_RATE_PER_MINUTE": 10, "UPLOAD_RATE_PER_DAY": 50,
            "INDEXING_PAUSED": False, "INDEXING_PAUSED_PARAMETER": ""}
    return Settings(**{**base, **values})


@pytest.fixture
def wide_pool(db_url, monkeypatch):
    # Room for every thread to hold its own connection, so the requests really overlap.
    monkeypatch.setenv("DB_POOL_MAX_SIZE", str(CONCURRENT + 2))
    reset_settings()
    close_pool()
    yield db_url
    close_pool()


def new_base(p=OWNER, scope="personal"):
    with transaction() as conn:
        return create_base(conn, p, CreateKnowledgeBase(name="Pool", scope=scope))


def upload(s: Settings, kb_id, p=OWNER, ingestion=None):
    req = PresignRequest(filename="notes.txt", size=10, ingestion=ingestion)
    return accept(Intake(transaction, FakeStore(), s), p, IntoBase(str(kb_id)), req)


def upload_concurrently(s: Settings, kb_id, p=OWNER, n: int = CONCURRENT) -> Counter:
    start = threading.Barrier(n)

    def one(_):
        start.wait()
        try:
            upload(s, kb_id, p)
            return "accepted"
        except SluiceError as exc:
            return exc.code

    with ThreadPoolExecutor(n) as pool:
        return Counter(pool.map(one, range(n)))


def rows_in(db_url, kb_id) -> int:
    with psycopg.connect(db_url, row_factory=dict_row) as c:
        return c.execute("SELECT count(*) AS n FROM documents WHERE kb_id = %s", (kb_id,)).fetchone()["n"]


def backdate_uploads(db_url, user: str, *ages_seconds: float) -> None:
    with psycopg.connect(db_url) as c:
        c.execute("INSERT INTO upload_quotas (user_id) VALUES (%s) ON CONFLICT DO NOTHING", (user,))
        for age in ages_seconds:
            c.execute("INSERT INTO upload_events (user_id, accepted_at) VALUES "
                      "(%s, clock_timestamp() - make_interval(secs => %s))", (user, age))


def test_the_cap_admits_exactly_what_fits_under_twenty_concurrent_uploads(wide_pool):
    # GIVEN a private pool holding 15 documents across two personal bases, cap 20
    first, second = new_base(), new_base()
    roomy = settings(UPLOAD_RATE_PER_MINUTE=1000, UPLOAD_RATE_PER_DAY=1000)
    for _ in range(15):
        upload(roomy, first.id)
    # WHEN twenty uploads race into the second base
    outcome = upload_concurrently(roomy, second.id)
    # THEN exactly five are accepted: the cap counts the owner's whole pool
    assert outcome == Counter({"accepted": 5, "DOC_CAP_REACHED": 15})
    assert rows_in(wide_pool, first.id) + rows_in(wide_pool, second.id) == 20
    with pytest.raises(DocCapReachedError) as err:
        upload(roomy, first.id)
    assert err.value.status == 409


def test_the_minute_limit_admits_ten_of_twenty_concurrent_uploads(wide_pool):
    kb = new_base()
    outcome = upload_concurrently(settings(), kb.id)
    assert outcome == Counter({"accepted": 10, "RATE_LIMIT_EXCEEDED": 10})
    assert rows_in(wide_pool, kb.id) == 10
    with pytest.raises(RateLimitError) as err:
        upload(settings(), kb.id)
    assert err.value.status == 429
    assert 1 <= int(err.value.headers["Retry-After"]) <= 60
    assert err.value.details["retry_after"] == int(err.value.headers["Retry-After"])


def test_the_day_limit_admits_what_is_left_of_the_day(wide_pool):
    # GIVEN 45 uploads earlier today, all outside the last minute
    kb = new_base()
    backdate_uploads(wide_pool, OWNER.user_id, *[3600 + i for i in range(45)])
    outcome = upload_concurrently(settings(), kb.id)
    assert outcome == Counter({"accepted": 5, "RATE_LIMIT_EXCEEDED": 15})
    with pytest.raises(RateLimitError) as err:
        upload(settings(), kb.id)
    # the oldest counted upload leaves the day window in about 23 hours
    assert 22 * 3600 < int(err.value.headers["Retry-After"]) <= 23 * 3600


def test_uploads_leave_the_windows_as_time_passes(wide_pool):
    kb = new_base()
    # ten uploads 61 s ago count for the day but no longer for the minute
    backdate_uploads(wide_pool, OWNER.user_id, *[61] * 10)
    upload(settings(), kb.id)
    # and an upload older than a day counts for nothing and is forgotten
    backdate_uploads(wide_pool, "old", 86_401)
    old = who("old", "acme")
    upload(settings(UPLOAD_RATE_PER_DAY=1), new_base(old).id, p=old)
    with psycopg.connect(wide_pool, row_factory=dict_row) as c:
        n = c.execute("SELECT count(*) AS n FROM upload_events WHERE user_id = 'old'").fetchone()["n"]
    assert n == 1


def test_a_refused_upload_counts_for_nothing(wide_pool):
    kb = new_base()
    one_a_minute = settings(UPLOAD_RATE_PER_MINUTE=1)
    # an override refused later in the same transaction rolls the count back with the row
    with pytest.raises(ValidationError):
        upload(one_a_minute, kb.id, ingestion={"chunk_size": 100, "chunk_overlap": 100})
    upload(one_a_minute, kb.id)
    with pytest.raises(RateLimitError):
        upload(one_a_minute, kb.id)


def test_the_limits_are_per_user_and_organization_bases_are_not_throttled(wide_pool):
    kb = new_base()
    upload_concurrently(settings(), kb.id, n=10)
    # another user's private pool has its own budget
    other = who("oli", "acme")
    upload(settings(), new_base(other).id, p=other)
    # and an organization's curated base takes bulk uploads
    org_base = new_base(scope="org")
    assert upload_concurrently(settings(), org_base.id) == Counter({"accepted": CONCURRENT})


def test_an_upload_of_several_documents_is_counted_as_that_many(wide_pool):
    kb = new_base()
    # an archive of eleven documents never fits a minute of ten: refused, not told to wait
    with transaction() as conn, pytest.raises(ValidationError) as err:
        admit(conn, pool_owners(kb), 11, settings())
    assert "at most 10 may be uploaded a minute" in err.value.details["fields"]["file"]
    # seven now, and four more must wait for the first of them to leave the minute
    with transaction() as conn:
        admit(conn, pool_owners(kb), 7, settings())
    with transaction() as conn, pytest.raises(RateLimitError) as err:
        admit(conn, pool_owners(kb), 4, settings())
    assert 1 <= err.value.details["retry_after"] <= 60
    with transaction() as conn:
        admit(conn, pool_owners(kb), 3, settings())
    with psycopg.connect(wide_pool, row_factory=dict_row) as c:
        n = c.execute("SELECT count(*) AS n FROM upload_events WHERE user_id = %s", (OWNER.user_id,)).fetchone()["n"]
    assert n == 10


def test_the_kill_switch_refuses_uploads_with_503(wide_pool):
    kb = new_base()
    with pytest.raises(IndexingPausedError) as err:
        upload(settings(INDEXING_PAUSED=True), kb.id)
    assert (err.value.status, err.value.code) == (503, "INDEXING_PAUSED")
    assert rows_in(wide_pool, kb.id) == 0


def test_the_kill_switch_parameter_is_read_and_a_switch_that_cannot_be_read_stops_uploads():
    s = settings(INDEXING_PAUSED_PARAMETER="/sluice/test/indexing-paused")
    assert indexing_paused(s, lambda name, max_age: "true")
    assert not indexing_paused(s, lambda name, max_age: "false")
    assert not indexing_paused(s, lambda name, max_age: None)  # not created: the setting decides

    def broken(name, max_age):
        raise RuntimeError("throttled")

    assert indexing_paused(s, broken)
    # the setting pauses whatever the parameter says
    assert indexing_paused(settings(INDEXING_PAUSED=True, INDEXING_PAUSED_PARAMETER="/x"), lambda n, max_age: "false")


def test_the_kill_switch_is_an_ssm_parameter_on_aws(aws_client):
    from aws_lambda_powertools.utilities.parameters import SSMProvider

    ssm = aws_client("ssm")
    provider = SSMProvider(boto3_client=ssm)
    name = f"/sluice/test-{uuid.uuid4().hex[:6]}/indexing-paused"
    s = settings(INDEXING_PAUSED_PARAMETER=name, INDEXING_PAUSED_CACHE_SECONDS=0)

    def read(parameter: str, max_age: int) -> str | None:
        # The adapter the uploads function uses, over this test's own moto server.
        return aws.parameter_value(parameter, max_age=max_age, provider=provider)

    assert not indexing_paused(s, read)  # no parameter yet: the setting decides
    ssm.put_parameter(Name=name, Value="true", Type="String")
    assert indexing_paused(s, read)
    ssm.put_parameter(Name=name, Value="false", Type="String", Overwrite=True)
    assert not indexing_paused(s, read)
