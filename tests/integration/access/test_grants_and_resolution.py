"""Grants and resolution (R-ACC-1, R-ACC-2) as domain calls against the real database; the
same rules over HTTP, for every route and principal, are in tests/e2e/test_access_matrix.py."""

from __future__ import annotations

import pytest

from sluice.access import reachable_collections, resolve_base, resolve_collection
from sluice.access.grants import GrantRequest, grant_access, revoke_access
from sluice.bases import CreateKnowledgeBase, create_base, list_bases
from sluice.errors import CollectionNotFoundError, ValidationError
from tests.integration.access.conftest import EDIT, VIEW, who

ANN = who("ann", "acme", VIEW, EDIT)
VIC = who("vic", "acme", VIEW)
NED = who("ned", "acme")  # a member with no permissions at all
GUS = who("gus", "globex", VIEW, EDIT)
ADMIN = who("root", "acme", admin=True)


def base(conn, p, scope="org", **fields):
    kb = create_base(conn, p, CreateKnowledgeBase(name="B", scope=scope, **fields))
    conn.commit()
    return kb


def reaches(conn, p, kb, *, write=False) -> bool:
    try:
        resolve_base(conn, p, kb.id, write=write)
        return True
    except CollectionNotFoundError:
        return False


def test_a_grant_widens_one_org_base_for_one_member(conn):
    kb, other = base(conn, ANN), base(conn, ANN)
    assert not reaches(conn, NED, kb) and not reaches(conn, VIC, kb, write=True)
    grant_access(conn, ANN, str(kb.id), GrantRequest(user_id="ned", permission="view"))
    grant_access(conn, ANN, str(kb.id), GrantRequest(user_id="vic", permission="edit"))
    conn.commit()
    assert reaches(conn, NED, kb) and not reaches(conn, NED, kb, write=True)
    assert reaches(conn, VIC, kb, write=True)
    # only that base
    assert not reaches(conn, NED, other) and not reaches(conn, VIC, other, write=True)
    # a viewer holding an edit grant manages the base, grants included
    grant_access(conn, VIC, str(kb.id), GrantRequest(user_id="zoe", permission="view"))
    revoke_access(conn, VIC, str(kb.id), "ned")
    conn.commit()
    assert not reaches(conn, NED, kb)


def test_a_grant_never_narrows(conn):
    kb = base(conn, ANN)
    grant_access(conn, ANN, str(kb.id), GrantRequest(user_id="ann", permission="view"))
    conn.commit()
    assert reaches(conn, ANN, kb, write=True)


def test_a_grant_does_not_cross_the_tenant_boundary(conn):
    kb = base(conn, ANN)
    grant_access(conn, ANN, str(kb.id), GrantRequest(user_id="gus", permission="edit"))
    conn.commit()
    assert not reaches(conn, GUS, kb)
    assert kb.id not in {b.id for b in list_bases(conn, GUS)}


def test_only_a_writer_grants_and_a_non_writer_is_told_the_base_does_not_exist(conn):
    kb = base(conn, ANN)
    for p in (VIC, NED, GUS, ADMIN):
        with pytest.raises(CollectionNotFoundError):
            grant_access(conn, p, str(kb.id), GrantRequest(user_id=p.user_id, permission="edit"))
        with pytest.raises(CollectionNotFoundError):
            revoke_access(conn, p, str(kb.id), "ann")
        conn.rollback()


def test_personal_and_app_bases_take_no_grants(conn):
    for p, scope in ((VIC, "personal"), (ADMIN, "app")):
        kb = base(conn, p, scope=scope)
        with pytest.raises(ValidationError):
            grant_access(conn, p, str(kb.id), GrantRequest(user_id="ned", permission="view"))
        conn.rollback()


def test_scopes(conn):
    personal, org, app = base(conn, VIC, "personal"), base(conn, ANN), base(conn, ADMIN, "app")
    # personal: its owner only; the app admin flag opens nobody's private pool
    assert reaches(conn, VIC, personal, write=True)
    assert not any(reaches(conn, p, personal) for p in (ANN, NED, GUS, ADMIN))
    # org: view/edit permissions inside the organization
    assert reaches(conn, VIC, org) and not reaches(conn, VIC, org, write=True)
    assert reaches(conn, ANN, org, write=True)
    assert not reaches(conn, NED, org) and not reaches(conn, GUS, org)
    assert not reaches(conn, ADMIN, org)
    # app: everybody reads, app admins write
    assert all(reaches(conn, p, app) for p in (ANN, VIC, NED, GUS, ADMIN))
    assert reaches(conn, ADMIN, app, write=True)
    assert not any(reaches(conn, p, app, write=True) for p in (ANN, VIC, NED, GUS))


def test_an_id_that_is_not_an_id_is_not_found(conn):
    for bad in ("nope", "", "../kb", "00000000-0000-0000-0000-000000000000"):
        with pytest.raises(CollectionNotFoundError):
            resolve_base(conn, ANN, bad)


def test_a_collection_resolves_to_the_bases_on_it_the_caller_reaches(conn):
    org = base(conn, ANN, collection_name="handbook")
    mine = base(conn, ANN, "personal", collection_name="handbook")
    assert [b.id for b in resolve_collection(conn, ANN, "handbook")] == [org.id, mine.id]
    assert [b.id for b in resolve_collection(conn, VIC, "handbook")] == [org.id]
    for p, name in ((GUS, "handbook"), (ANN, "absent"), (ANN, "Not A Name")):
        with pytest.raises(CollectionNotFoundError):
            resolve_collection(conn, p, name)
    with pytest.raises(CollectionNotFoundError):
        resolve_collection(conn, VIC, "handbook", write=True)


def test_the_listing_names_each_reachable_collection_once(conn):
    org = base(conn, ANN, collection_name="handbook")
    mine = base(conn, ANN, "personal", collection_name="handbook")
    base(conn, GUS, collection_name="globex_only")
    app = base(conn, ADMIN, "app", collection_name="everyone")
    listed = {c.name: [b.id for b in c.bases] for c in reachable_collections(conn, ANN)}
    assert listed == {"handbook": [org.id, mine.id], "everyone": [app.id]}
    assert {c.name for c in reachable_collections(conn, GUS)} == {"globex_only", "everyone"}
