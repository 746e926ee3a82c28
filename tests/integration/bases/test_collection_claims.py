"""Collection names (R-VEC-2), the claim (R-VEC-4) and one embedding space per name (R-EMB-1),
against the real embedded PostgreSQL."""

from __future__ import annotations

import re
import uuid

import pytest

from sluice.bases import CreateKnowledgeBase, DefaultEmbedding, create_base, derive_collection_name
from sluice.errors import ConflictError, ValidationError
from sluice.vectors import store
from tests.integration.access.conftest import EDIT, VIEW, who

ACME_EDITOR = who("ann", "acme", VIEW, EDIT)
ACME_VIEWER = who("vic", "acme", VIEW)
GLOBEX_EDITOR = who("gus", "globex", VIEW, EDIT)
ADMIN = who("root", None, admin=True)


def create(conn, p, **fields):
    fields.setdefault("name", "Handbook")
    return create_base(conn, p, CreateKnowledgeBase(**fields))


@pytest.mark.parametrize(("name", "why"), [
    ("Handbook", "lower-case"),
    ("hand-book", "lower-case identifier"),
    ("2024_reports", "not starting with a digit"),
    ("a" * 46, "at most 45"),
    ("all", "reserved"),
    ("documents", "names a table"),
    ("upload_events", "names a table"),  # a table a later migration created: derived, not listed
    ("", "required"),
])
def test_a_name_the_store_cannot_use_is_refused_with_400_naming_the_field(conn, name, why):
    with pytest.raises(ValidationError) as err:
        create(conn, ACME_EDITOR, collection_name=name)
    assert err.value.status == 400
    assert why in err.value.details["fields"]["collection_name"]


def test_the_longest_name_and_a_name_merely_starting_with_a_table_are_fine(conn):
    assert create(conn, ACME_EDITOR, collection_name="a" * 45).collection_name == "a" * 45
    assert create(conn, ACME_EDITOR, collection_name="documents_archive").collection_name == "documents_archive"


def test_the_store_refuses_a_bad_name_too(conn):
    # A CLI drop reaches the store with no route in between.
    for name in ("documents", "Handbook", "all"):
        with pytest.raises(ValidationError):
            store.table_exists(conn, name)


def test_a_derived_name_is_the_display_name_plus_six_hex_and_is_claimed(conn):
    kb = create(conn, ACME_EDITOR, name="Q3 Sales — Report!")
    assert re.fullmatch(r"q3_sales_report_[0-9a-f]{6}", kb.collection_name)
    assert re.fullmatch(r"c_2024_plan_[0-9a-f]{6}", derive_collection_name("2024 plan"))
    assert len(derive_collection_name("x" * 300)) <= 45
    assert re.fullmatch(r"collection_[0-9a-f]{6}", derive_collection_name("???"))


def test_two_orgs_naming_a_collection_the_same_thing(conn):
    # GIVEN acme holds "handbook"
    create(conn, ACME_EDITOR, scope="org", collection_name="handbook")
    conn.commit()
    # WHEN globex claims the same name THEN it is refused: the vector table would be shared
    with pytest.raises(ConflictError) as err:
        create(conn, GLOBEX_EDITOR, scope="org", collection_name="handbook")
    assert err.value.status == 409 and "collection_name" in err.value.details["fields"]
    conn.rollback()
    # AND a member of acme who cannot write acme's base is refused too
    with pytest.raises(ConflictError):
        create(conn, ACME_VIEWER, collection_name="handbook")
    conn.rollback()
    # BUT a caller who can write every holder may add a base on the name
    mine = create(conn, ACME_EDITOR, name="My handbook", collection_name="handbook")
    assert mine.scope == "personal" and mine.collection_name == "handbook"


def test_an_app_admin_cannot_claim_a_name_an_organization_holds(conn):
    create(conn, ACME_EDITOR, scope="org", collection_name="handbook")
    conn.commit()
    with pytest.raises(ConflictError):
        create(conn, ADMIN, scope="app", collection_name="handbook")


def test_a_name_reserved_by_a_teardown_is_not_free(conn):
    conn.execute(
        "INSERT INTO collection_teardowns (id, collection_name, drop_table, requested_by) VALUES (%s, %s, true, 'x')",
        (uuid.uuid4(), "old_handbook"),
    )
    conn.commit()
    with pytest.raises(ConflictError) as err:
        create(conn, ACME_EDITOR, collection_name="old_handbook")
    assert "teardown" in err.value.details["fields"]["collection_name"]
    conn.rollback()
    # the app admin cannot adopt it either: its table still holds the old tenant's chunks
    with pytest.raises(ConflictError):
        create(conn, ADMIN, scope="app", collection_name="old_handbook")


def _unfiled_row(conn, name: str, org: str | None, *, status: str = "done", indexed: bool = True) -> None:
    conn.execute(
        """INSERT INTO documents (id, kb_id, org_id, collection_name, filename, status, vector_document_id)
           VALUES (%s, NULL, %s, %s, 'f.txt', %s, %s)""",
        (uuid.uuid4(), org, name, status, uuid.uuid4() if indexed else None),
    )
    conn.commit()


def test_unfiled_content_of_another_tenant_holds_the_name(conn):
    _unfiled_row(conn, "ops_corpus", None)  # an operator's CLI ingest: no base, no organization
    with pytest.raises(ConflictError):
        create(conn, ACME_EDITOR, collection_name="ops_corpus")
    conn.rollback()
    # an app admin may adopt it
    assert create(conn, ADMIN, scope="app", collection_name="ops_corpus").scope == "app"


def test_unfiled_content_of_the_callers_own_organization_does_not_hold_it(conn):
    _unfiled_row(conn, "acme_notes", "acme")
    assert create(conn, ACME_EDITOR, collection_name="acme_notes").collection_name == "acme_notes"
    conn.rollback()
    with pytest.raises(ConflictError):
        create(conn, GLOBEX_EDITOR, collection_name="acme_notes")


def test_a_failed_row_that_describes_no_chunk_holds_nothing(conn):
    _unfiled_row(conn, "failed_once", "globex", status="error", indexed=False)
    assert create(conn, ACME_EDITOR, collection_name="failed_once").collection_name == "failed_once"


def test_unfiled_chunks_in_the_vector_table_hold_the_name(conn):
    store.ensure_table(conn, "orphans", 3)
    conn.execute("INSERT INTO rag_orphans (document_id, org_id, chunk_index, content, embedding) "
                 "VALUES (%s, 'globex', 0, 'x', '[1,0,0]')", (uuid.uuid4(),))
    conn.commit()
    with pytest.raises(ConflictError):
        create(conn, ACME_EDITOR, collection_name="orphans")
    conn.rollback()
    # an empty table left behind holds nothing
    store.ensure_table(conn, "empty_left", 3)
    conn.commit()
    assert create(conn, ACME_EDITOR, collection_name="empty_left").collection_name == "empty_left"


def test_a_name_shared_by_two_bases_is_one_embedding_space(conn):
    first = create(conn, ACME_EDITOR, scope="org", collection_name="space", embedding_provider="local")
    conn.commit()
    # a second base adopts the model and width without naming them
    second = create(conn, ACME_EDITOR, name="Mine", collection_name="space")
    assert (second.embedding_provider, second.embedding_model, second.embedding_dim) == (
        first.embedding_provider, first.embedding_model, first.embedding_dim)
    conn.rollback()
    # and a disagreeing explicit choice is refused, naming each disagreeing field
    with pytest.raises(ValidationError) as err:
        create(conn, ACME_EDITOR, name="Other", collection_name="space", embedding_provider="bedrock",
               embedding_model="amazon.titan-embed-text-v2:0", embedding_dim=512)
    assert set(err.value.details["fields"]) == {"embedding_provider", "embedding_model", "embedding_dim"}


def test_a_collection_has_one_text_search_language(conn):
    # R-SRCH-7: chosen with the collection, taken by every base that joins it, never a second one
    first = create(conn, ACME_EDITOR, scope="org", collection_name="hablado", text_search_language="spanish")
    conn.commit()
    assert first.text_search_language == "spanish"
    assert create(conn, ACME_EDITOR, name="Mine", collection_name="hablado").text_search_language == "spanish"
    conn.rollback()
    with pytest.raises(ValidationError) as err:
        create(conn, ACME_EDITOR, name="Other", collection_name="hablado", text_search_language="english")
    assert err.value.status == 400
    assert err.value.details["fields"] == {
        "text_search_language": "This collection searches text in spanish; a base on it must too."}


def test_a_table_left_without_bases_keeps_its_language_for_the_next_claim(conn):
    store.ensure_table(conn, "left_german", 3, language="german")
    conn.commit()
    assert create(conn, ACME_EDITOR, collection_name="left_german").text_search_language == "german"
    conn.rollback()
    with pytest.raises(ValidationError) as err:
        create(conn, ACME_EDITOR, collection_name="left_german", text_search_language="simple")
    assert "text_search_language" in err.value.details["fields"]


@pytest.mark.parametrize("language", ["klingon", "english; DROP TABLE documents", "English", ""])
def test_an_unknown_text_search_language_is_refused_naming_the_field(conn, language):
    with pytest.raises(ValidationError) as err:
        create(conn, ACME_EDITOR, text_search_language=language)
    assert err.value.status == 400 and "text_search_language" in err.value.details["fields"]


def test_a_new_collection_searches_in_simple_unless_told(conn):
    assert create(conn, ACME_EDITOR).text_search_language == "simple"


def test_the_embedding_choice_is_checked_against_the_catalog(conn):
    kb = create(conn, ACME_EDITOR, embedding_provider="bedrock", embedding_model="amazon.titan-embed-text-v2:0",
                embedding_dim=256)
    assert (kb.embedding_provider, kb.embedding_dim) == ("bedrock", 256)
    for fields, field in [
        ({"embedding_provider": "bedrock", "embedding_model": "amazon.titan-embed-text-v2:0", "embedding_dim": 384},
         "embedding_dim"),
        ({"embedding_provider": "bedrock"}, "embedding_model"),
        ({"embedding_provider": "cohere", "embedding_model": "x"}, "embedding_provider"),
        ({"embedding_provider": "local", "embedding_base_url": "http://x"}, "embedding_base_url"),
        ({"embedding_provider": "openai", "embedding_model": "bge-m3", "embedding_base_url": "ftp://x"},
         "embedding_base_url"),
    ]:
        with pytest.raises(ValidationError) as err:
            create(conn, ACME_EDITOR, **fields)
        assert field in err.value.details["fields"], (fields, err.value.details)


def test_a_bad_collection_config_is_422_naming_the_field(conn):
    with pytest.raises(ValidationError) as err:
        create(conn, ACME_EDITOR, ingestion_config={"chunk_size": -5})
    assert err.value.status == 422
    assert any(k.startswith("ingestion_config") for k in err.value.details["fields"])


def test_scope_is_chosen_within_the_callers_rights(conn):
    with pytest.raises(ValidationError) as err:
        create(conn, ACME_VIEWER, scope="org")
    assert "scope" in err.value.details["fields"]
    with pytest.raises(ValidationError):
        create(conn, who("solo", None, EDIT), scope="org")
    with pytest.raises(ValidationError):
        create(conn, ACME_EDITOR, scope="app")
    org = create(conn, ACME_EDITOR, scope="org")
    assert (org.org_id, org.owner_id) == ("acme", None)
    personal = create(conn, ACME_VIEWER)
    assert (personal.scope, personal.owner_id, personal.org_id) == ("personal", "vic", "acme")
    app = create(conn, ADMIN, scope="app")
    assert (app.org_id, app.owner_id) == (None, None)


def test_concurrent_claims_of_one_name_by_different_organizations_admit_one(db_url, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from sluice.config import reset_settings
    from sluice.db.connection import close_pool, transaction

    n = 12
    monkeypatch.setenv("DB_POOL_MAX_SIZE", str(n + 2))
    reset_settings()
    close_pool()
    start = Barrier(n)

    def claim(i: int) -> str:
        p = who(f"u{i}", f"org{i}", VIEW, EDIT)
        start.wait()
        try:
            with transaction() as c:
                create_base(c, p, CreateKnowledgeBase(name="Race", scope="org", collection_name="contested"))
            return "created"
        except ConflictError:
            return "conflict"

    try:
        with ThreadPoolExecutor(n) as pool:
            outcomes = sorted(pool.map(claim, range(n)))
    finally:
        close_pool()
    assert outcomes == ["conflict"] * (n - 1) + ["created"]


@pytest.mark.parametrize("default, expected", [
    (DefaultEmbedding(), ("local", "all-MiniLM-L6-v2", 384)),
    (DefaultEmbedding("bedrock", "amazon.titan-embed-text-v2:0"), ("bedrock", "amazon.titan-embed-text-v2:0", 1024)),
])
def test_a_base_that_names_no_embedding_takes_the_deployment_default(conn, default, expected):
    kb = create_base(conn, who("dee", "acme", VIEW, EDIT), CreateKnowledgeBase(name="Plain"), default=default)
    assert (kb.embedding_provider, kb.embedding_model, kb.embedding_dim) == expected
    # naming the other provider still asks for its model: the default is the default provider's only
    other = "bedrock" if default.provider == "local" else "local"
    named = create_base(conn, who("dee", "acme", VIEW, EDIT), CreateKnowledgeBase(
        name="Named", embedding_provider=other,
        embedding_model="all-MiniLM-L6-v2" if other == "local" else "amazon.titan-embed-text-v2:0"), default=default)
    assert named.embedding_provider == other
