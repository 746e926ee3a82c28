"""Every route × every principal over HTTP (R-AUTH-1, R-ACC-1, R-ACC-2, R-VEC-4).

Four users in two organizations plus an app admin; a base of each scope, one
with grants (one of which names a member of the other organization, and so
widens nothing). The expected answers come from the READ/WRITE tables below,
written from the spec's scope table, never from the code under test.

Routes come from template.yaml. The routes in KNOWN have their expected
success status checked for every principal that reaches the base. Every other
route that names a base, a collection or a document is checked for the one
property every such route owes (R-ACC-2): for a principal who cannot reach the
target, the answer is byte for byte the answer for a target that does not
exist. A route added to the template later is covered by that without editing
this file; a route that names something this matrix cannot build, or names
nothing and is not listed as UNTARGETED, fails until it is modelled here.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from sluice.local.template import parse
from tests.conftest import ROOT

pytestmark = pytest.mark.e2e

VIEW, EDIT = "collections:view", "collections:edit"
RUN = uuid.uuid4().hex[:6]  # the e2e database is shared by the session: nothing here collides with it
ORG_A, ORG_B = f"acme_{RUN}", f"globex_{RUN}"

# name -> (org, permissions, app admin)
PRINCIPALS: dict[str, tuple[str | None, list[str], bool]] = {
    "ann": (ORG_A, [VIEW, EDIT], False),  # editor in A
    "vic": (ORG_A, [VIEW], False),  # viewer in A; an edit grant on a_granted
    "ned": (ORG_A, [], False),  # member of A with no permissions; a view grant on a_granted
    "gus": (ORG_B, [VIEW, EDIT], False),  # editor in B; a (cross-tenant, inert) grant on a_granted
    "root": (None, [], True),  # the app admin
}
# base -> (creator, scope)
BASES: dict[str, tuple[str, str]] = {
    "ann_personal": ("ann", "personal"),
    "gus_personal": ("gus", "personal"),
    "a_org": ("ann", "org"),
    "a_granted": ("ann", "org"),
    "b_org": ("gus", "org"),
    "app": ("root", "app"),
}
GRANTS = {"a_granted": {"vic": "edit", "ned": "view", "gus": "edit"}}

# From R-ACC-1: personal = owner; org = view/edit in the org, widened by a grant for a member;
# app = everybody reads, app admins write. The app admin flag opens no personal or org base.
READ = {
    "ann": {"ann_personal", "a_org", "a_granted", "app"},
    "vic": {"a_org", "a_granted", "app"},
    "ned": {"a_granted", "app"},
    "gus": {"gus_personal", "b_org", "app"},
    "root": {"app"},
}
WRITE = {
    "ann": {"ann_personal", "a_org", "a_granted"},
    "vic": {"a_granted"},
    "ned": set(),
    "gus": {"gus_personal", "b_org"},
    "root": {"app"},
}

ABSENT_BODY = {"error": {"code": "NOT_FOUND", "message": "Collection not found", "details": {}}}


@dataclass
class Target:
    kb_id: str
    name: str
    doc_id: str
    scope: str
    # source syncs: a source of the base, and a finished run of it (written directly: see sync_objects)
    source_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    run_id: str = field(default_factory=lambda: str(uuid.uuid4()))


@dataclass(frozen=True)
class RouteCase:
    method: str
    path: str
    needs: str  # "read" or "write"
    ok: Callable[[Target], int]
    json: Callable[[Target], dict[str, Any]] | None = None
    form: bool = False

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}"


def _search_body(t: Target) -> dict[str, Any]:
    return {"query": "matrix words", "collections": [t.name]}


KNOWN = [
    RouteCase("GET", "/kb/{kb_id}", "read", lambda t: 200),
    RouteCase("PATCH", "/kb/{kb_id}", "write", lambda t: 200, json=lambda t: {"description": "touched"}),
    RouteCase("POST", "/kb/{kb_id}/grants", "write", lambda t: 201 if t.scope == "org" else 400,
              json=lambda t: {"user_id": "zed", "permission": "view"}),
    RouteCase("DELETE", "/kb/{kb_id}/grants/{user_id}", "write", lambda t: 204),
    RouteCase("POST", "/kb/{kb_id}/uploads", "write", lambda t: 202,
              json=lambda t: {"filename": "matrix.txt", "size": 12}),
    RouteCase("POST", "/kb/{kb_id}/documents", "write", lambda t: 202, form=True),
    RouteCase("GET", "/rag/documents/{doc_id}", "read", lambda t: 200),
    RouteCase("POST", "/rag/search", "read", lambda t: 200, json=_search_body),
    RouteCase("POST", "/rag/search/diagnostic", "read", lambda t: 200, json=_search_body),
    # source syncs: a base's writers manage its sources. None of these principals holds secrets:view,
    # so none can lend a credential: creating answers 400 naming secret_id for every writer.
    RouteCase("POST", "/kb/{kb_id}/sync-sources", "write", lambda t: 400,
              json=lambda t: {"name": "matrix", "connector": "s3", "config": {"bucket": "matrix-bucket"}}),
    RouteCase("POST", "/kb/{kb_id}/sync-sources/preview", "write", lambda t: 200,
              json=lambda t: {"connector": "s3", "config": {"bucket": "matrix-bucket"}}),
    RouteCase("GET", "/kb/{kb_id}/sync-sources", "write", lambda t: 200),
    RouteCase("GET", "/kb/{kb_id}/sync-sources/{source_id}", "write", lambda t: 200),
    RouteCase("PATCH", "/kb/{kb_id}/sync-sources/{source_id}", "write", lambda t: 200,
              json=lambda t: {"name": "touched"}),
    RouteCase("GET", "/kb/{kb_id}/sync-sources/{source_id}/logs", "write", lambda t: 200),
    RouteCase("GET", "/rag/sync/sources/{source_id}", "write", lambda t: 200),
    RouteCase("GET", "/rag/sync/logs/{run_id}", "write", lambda t: 200),
    RouteCase("GET", "/rag/sync/logs/{run_id}/files", "write", lambda t: 200),
]
# Routes that name no base, collection or document, and the listings, checked by their own tests.
UNTARGETED = {("GET", "/health"), ("GET", "/openapi.json"), ("GET", "/rag/embedding-models"), ("POST", "/kb"),
              ("GET", "/rag/text-search-languages"),
              ("GET", "/kb"), ("GET", "/rag/collections"), ("GET", "/rag/supported-formats"),
              ("GET", "/rag/sync/connectors")}
# R-ACC-6: sharing into private pools names no base; tests/e2e/test_shared_pools_http.py checks them.
UNTARGETED |= {("POST", "/pools/documents"), ("POST", "/pools/uploads"), ("GET", "/pools/documents")}
# R-PARSE-6: the vision-model catalog names no base; tests/e2e/test_image_description.py reads it.
UNTARGETED |= {("GET", "/rag/vision-models")}
# R-PARSE-7: what the deployment parses with names no base; tests/e2e/test_parsers_http.py reads it.
UNTARGETED |= {("GET", "/rag/parsers")}
# R-UI-1: the console's page and hashed assets are public static files (every call the page makes is
# an ordinary API call with the user's token); tests/unit/test_console.py and the browser tests read them.
CONSOLE_ROUTES = {("GET", "/console"), ("GET", "/console/assets/{proxy+}")}
UNTARGETED |= CONSOLE_ROUTES
# A receipt names a teardown, not a base: who reads it is tested in tests/e2e/test_teardown_http.py.
# (DELETE /kb/{kb_id} and DELETE /rag/collections/{name} are checked below as every other route is:
# the absent answer for whoever does not reach the base; their 202s are tested there too, on bases
# of their own, since a success here would delete this matrix's bases.)
UNTARGETED |= {("GET", "/rag/teardowns/{teardown_id}")}
# Chat routes name the caller's own files and conversations, never a base: ownership is the whole
# rule (R-ACC-4), tested route by route in tests/e2e/test_chat_http.py.
UNTARGETED |= {
    ("POST", "/files/upload"), ("POST", "/files/uploads"), ("GET", "/files/{file_id}"),
    ("DELETE", "/files/{file_id}"), ("GET", "/files/{file_id}/pages"), ("POST", "/conversations"),
    ("GET", "/conversations"), ("GET", "/conversations/{conversation_id}"),
    ("DELETE", "/conversations/{conversation_id}"), ("POST", "/conversations/{conversation_id}/messages"),
    ("POST", "/conversations/{conversation_id}/attachments"), ("GET", "/conversations/{conversation_id}/attachments"),
    ("DELETE", "/conversations/{conversation_id}/attachments/{attachment_id}"),
    ("POST", "/conversations/{conversation_id}/attachments/{attachment_id}/register"),
    ("POST", "/conversations/{conversation_id}/context"),
}
PARAMS = {"kb_id", "doc_id", "name", "user_id", "source_id", "run_id"}

TEMPLATE_ROUTES = {(r.method, r.path) for r in parse(ROOT / "template.yaml").routes()}
TOKEN_ROUTES = {(r.method, r.path) for r in parse(ROOT / "template.yaml").routes() if r.auth}
KNOWN_HERE = [c for c in KNOWN if (c.method, c.path) in TEMPLATE_ROUTES]
OTHER = sorted(r for r in TEMPLATE_ROUTES - {(c.method, c.path) for c in KNOWN} - UNTARGETED)


@dataclass
class World:
    clients: dict[str, httpx.Client]
    targets: dict[str, Target]
    absent: Target
    extra: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module")
def world(runtime, client_for) -> World:
    clients = {who: client_for(f"{who}_{RUN}", org, perms, admin) for who, (org, perms, admin) in PRINCIPALS.items()}
    targets: dict[str, Target] = {}
    for key, (creator, scope) in BASES.items():
        api = clients[creator]
        resp = api.post("/kb", json={"name": f"Matrix {key}", "scope": scope})
        assert resp.status_code == 201, resp.text
        kb = resp.json()
        for user, permission in GRANTS.get(key, {}).items():
            granted = api.post(f"/kb/{kb['id']}/grants", json={"user_id": f"{user}_{RUN}", "permission": permission})
            assert granted.status_code == 201, granted.text
        doc = api.post(f"/kb/{kb['id']}/uploads", json={"filename": "seed.txt", "size": 10})
        assert doc.status_code == 202, doc.text
        targets[key] = Target(kb["id"], kb["collection_name"], doc.json()["id"], scope)
        sync_objects(targets[key], creator)
    absent = Target(str(uuid.uuid4()), f"absent_{RUN}", str(uuid.uuid4()), "org")
    return World(clients, targets, absent)


def sync_objects(t: Target, creator: str) -> None:
    """A sync source of the base and a finished run of it, written with the repositories: creating a
    source through the API needs a secret its creator may lend, which these principals do not hold."""
    from sluice.db import sync_runs, sync_sources
    from sluice.db.connection import transaction
    from sluice.db.sync_sources import SyncSource

    with transaction() as conn:
        source = sync_sources.insert(conn, SyncSource(
            id=uuid.UUID(t.source_id), kb_id=uuid.UUID(t.kb_id), name="matrix", connector="s3",
            config={"bucket": "matrix-bucket", "prefix": ""}, secret_id=None, sync_mode="new_only",
            organizational_unit=None, schedule=None, created_by=f"{creator}_{RUN}"))
        run = sync_runs.insert(conn, source_id=source.id, kb_id=source.kb_id, collection_name=t.name,
                               connector="s3", sync_mode="new_only", trigger="manual", started_by="matrix")
        sync_runs.update(conn, run.id, status="succeeded")
    t.run_id = str(run.id)


def _path(template: str, t: Target) -> str:
    values = {"kb_id": t.kb_id, "doc_id": t.doc_id, "name": t.name, "user_id": f"zed_{RUN}",
              "source_id": t.source_id, "run_id": t.run_id,
              "teardown_id": str(uuid.UUID(int=0))}  # only for the token check: receipts are tested apart
    # The chat routes' own ids (UNTARGETED above): any id, for the token check.
    values |= {name: str(uuid.uuid4()) for name in ("file_id", "conversation_id", "attachment_id")}
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)


def call(api: httpx.Client, method: str, path: str, t: Target, json: Any = None, form: bool = False
         ) -> httpx.Response:
    kwargs: dict[str, Any] = {}
    if form:
        kwargs["files"] = {"file": ("matrix.txt", b"matrix words", "text/plain")}
    elif json is not None:
        kwargs["json"] = json
    elif method in ("POST", "PATCH", "PUT"):
        kwargs["json"] = {}
    return api.request(method, _path(path, t), **kwargs)


def answer(resp: httpx.Response) -> tuple[int, str | None, bytes]:
    return resp.status_code, resp.headers.get("content-type"), resp.content


@pytest.mark.parametrize("who", list(PRINCIPALS))
@pytest.mark.parametrize("case", KNOWN_HERE, ids=lambda c: c.id)
def test_known_route(world: World, case: RouteCase, who: str):
    api = world.clients[who]
    absent = call(api, case.method, case.path, world.absent,
                  case.json(world.absent) if case.json else None, case.form)
    assert absent.status_code == 404 and absent.json() == ABSENT_BODY, absent.text
    wrong: list[str] = []
    for key, t in world.targets.items():
        reaches = key in (WRITE if case.needs == "write" else READ)[who]
        resp = call(api, case.method, case.path, t, case.json(t) if case.json else None, case.form)
        if reaches:
            if resp.status_code != case.ok(t):
                wrong.append(f"{key}: expected {case.ok(t)}, got {resp.status_code} {resp.text[:200]}")
        elif answer(resp) != answer(absent):
            wrong.append(f"{key}: expected the absent answer, got {resp.status_code} {resp.text[:200]}")
    assert not wrong, f"{case.id} as {who}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("who", list(PRINCIPALS))
@pytest.mark.parametrize("route", OTHER, ids=lambda r: f"{r[0]} {r[1]}")
def test_every_other_route_refuses_as_absent(world: World, route: tuple[str, str], who: str):
    method, path = route
    api = world.clients[who]
    absent = answer(call(api, method, path, world.absent))
    wrong: list[str] = []
    for key, t in world.targets.items():
        if key in READ[who]:
            if method == "GET":
                # Reaching principals are not refused; what they get is that route's own business.
                resp = call(api, method, path, t)
                if resp.status_code >= 500 or answer(resp) == absent:
                    wrong.append(f"{key}: a reader got {resp.status_code} {resp.text[:200]}")
            continue
        resp = call(api, method, path, t)
        if answer(resp) != absent:
            wrong.append(f"{key}: expected the absent answer {absent[0]}, got {resp.status_code} {resp.text[:200]}")
    assert not wrong, f"{method} {path} as {who}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("who", list(PRINCIPALS))
def test_the_listings_hold_exactly_what_the_caller_reaches(world: World, who: str):
    api = world.clients[who]
    mine = {t.kb_id: key for key, t in world.targets.items()}
    resp = api.get("/kb")
    assert resp.status_code == 200
    listed = {mine[b["id"]]: b for b in resp.json()["knowledge_bases"] if b["id"] in mine}
    assert set(listed) == READ[who]
    assert {k for k, b in listed.items() if b["can_write"]} == WRITE[who]
    # who else a base is granted to, its key and its endpoint are shown only to those who may change it
    for b in listed.values():
        shown = {"grants", "embedding_secret_id", "embedding_base_url"} & set(b)
        assert shown == ({"grants", "embedding_secret_id", "embedding_base_url"} if b["can_write"] else set()), b

    names = {t.name: key for key, t in world.targets.items()}
    resp = api.get("/rag/collections")
    assert resp.status_code == 200
    collections = [c for c in resp.json()["collections"] if c["name"] in names]
    assert {names[c["name"]] for c in collections} == READ[who]
    assert len(collections) == len({c["name"] for c in collections})  # each once
    for c in collections:
        assert [b["id"] for b in c["knowledge_bases"]] == [world.targets[names[c["name"]]].kb_id]


def test_every_template_route_is_modelled_here():
    unmodelled = [f"{method} {path}" for method, path in sorted(OTHER)
                  if not (params := set(re.findall(r"\{(\w+)\}", path))) or params - PARAMS]
    assert not unmodelled, ("routes this matrix does not model; add them to KNOWN, UNTARGETED or PARAMS:\n"
                            + "\n".join(unmodelled))
    assert len(TEMPLATE_ROUTES) == len(KNOWN_HERE) + len(OTHER) + len(UNTARGETED & TEMPLATE_ROUTES)


def test_every_route_but_health_the_api_description_and_the_console_needs_a_token(runtime):
    assert {("GET", "/health"), ("GET", "/openapi.json"), *CONSOLE_ROUTES} == TEMPLATE_ROUTES - TOKEN_ROUTES
    for method, path in sorted(TOKEN_ROUTES):
        t = Target(str(uuid.uuid4()), "x", str(uuid.uuid4()), "org")
        resp = httpx.request(method, runtime.api_url + _path(path, t))
        assert resp.status_code == 401, (method, path, resp.status_code)


def test_claiming_each_name_as_each_principal(world: World):
    """POST /kb on every existing name as every principal: 201 only for one who writes every holder."""
    holders = {t.name: [key] for key, t in world.targets.items()}
    new_owner: dict[str, str] = {}
    wrong: list[str] = []
    for who in ("ned", "vic", "gus", "root", "ann"):
        for name, held_by in holders.items():
            writable = all(new_owner.get(h) == who if h in new_owner else h in WRITE[who] for h in held_by)
            resp = world.clients[who].post("/kb", json={"name": "Claim", "collection_name": name})
            expected = 201 if writable else 409
            if resp.status_code != expected:
                wrong.append(f"{who} claiming {name}: expected {expected}, got {resp.status_code} {resp.text[:200]}")
            if resp.status_code == 201:
                key = f"{who}_claim_{name}"
                new_owner[key] = who
                held_by.append(key)
            elif resp.status_code == 409:
                assert resp.json()["error"]["code"] == "CONFLICT"
    assert not wrong, "\n".join(wrong)
