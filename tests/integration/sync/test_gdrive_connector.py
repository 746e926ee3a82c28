"""The gdrive connector against a double of the Drive API v3 and Google's token endpoint
(tests/gdrive_double.py: a real HTTP server on loopback answering the documented shapes). There is
no local Drive server: the double is checked here against Google's documented examples, then the
connector against the double - paging, sub-folders, shared drives, exports, shortcuts, throttling,
an expired token, a file deleted between the listing and the download, the folder id that would
widen the query, and the outbound guard. Its runs through the sync machinery are in
tests/e2e/test_sync_gdrive.py."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sluice.config import SyncContextSettings
from sluice.retry import RetryPolicy
from sluice.sync.connectors import CONNECTORS, SourceRefused, gdrive
from sluice.sync.connectors.base import RemoteFile
from sluice.sync.connectors.gdrive import DriveIdRefused, GdriveConfig, GdriveConnector, children_query
from sluice.sync.remote_names import RemoteNameRefused
from tests.gdrive_double import DOC, DOCUMENTED, DRAWING, SHEET, SHORTCUT, SLIDES, DriveDouble, docx

LOOPBACK = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": "127.0.0.0/8"})
NOBODY = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": ""})
HOSTILE = "x' in parents or name contains 'salary"
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def key() -> dict[str, str]:
    from tests.remote_servers import service_account_key

    return service_account_key("set below")


@pytest.fixture
def drive(key: dict[str, str]) -> Iterator[DriveDouble]:
    double = DriveDouble(key)
    key["token_uri"] = double.token_url
    yield double
    double.close()


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The retry loop's sleeps, recorded instead of slept; no jitter, so a wait is the Retry-After."""
    slept: list[float] = []
    monkeypatch.setattr(gdrive, "POLICY", RetryPolicy(max_attempts=4, base_delay=0.5, max_delay=2.0,
                                                      total_seconds=60.0, sleep=slept.append,
                                                      uniform=lambda a, b: 0.0))
    return slept


def connect(drive: DriveDouble, key: dict[str, str], **config: Any) -> GdriveConnector:
    cfg = GdriveConnector.parse_config({"folder_id": drive.root, "endpoint": drive.url, **config})
    assert GdriveConnector.check(cfg, LOOPBACK) is None
    return GdriveConnector.open(cfg, json.dumps(key), external_id="x", settings=LOOPBACK, client_factory=None,
                                state={})


def raw(drive: DriveDouble, path: str, token: str | None = None, **params: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(f"{drive.url}{path}", params=params, headers=headers)


def signed_in(drive: DriveDouble, key: dict[str, str]) -> str:
    conn = connect(drive, key)
    return conn.api._bearer()  # noqa: SLF001 - a token the double issued, for the raw requests below


# --- the double, against Google's documented examples ---------------------------------------------------

def test_the_doubles_errors_are_the_documented_examples(drive, key):
    # "Resolve errors", developers.google.com/drive/api/guides/handle-errors: each example body, as the page
    # shows it, is what the double answers.
    token = signed_in(drive, key)
    assert raw(drive, "/drive/v3/files", "expired", q=children_query(drive.root)).json() == DOCUMENTED["401 authError"]
    for status in (403, 429):
        drive.fail("list", status, "rateLimitExceeded", retry_after="7")
        resp = raw(drive, "/drive/v3/files", token, q=children_query(drive.root))
        assert resp.status_code == status and resp.headers["Retry-After"] == "7"
        assert resp.json() == DOCUMENTED[f"{status} rateLimitExceeded"]
    gone = raw(drive, "/drive/v3/files/1NoSuchFileId", token, alt="media")
    assert gone.status_code == 404
    assert json.dumps(gone.json()) == json.dumps(DOCUMENTED["404 notFound"]).replace("{fileId}", "1NoSuchFileId")
    # files.list, "Search for files and folders": a q the double does not understand is 400 on parameter q
    bad = raw(drive, "/drive/v3/files", token, q=f"'{drive.root}' in parents")
    assert bad.status_code == 400 and bad.json()["error"]["errors"][0]["location"] == "q"


def test_the_doubles_token_and_pages_are_the_documented_shapes(drive, key):
    # "Using OAuth 2.0 for Server to Server Applications", "Handling the response": {"access_token": ...,
    # "token_type": "Bearer", "expires_in": 3600} (the scope is echoed by some answers, not all)
    conn = connect(drive, key)
    conn.api._bearer()  # noqa: SLF001
    assert drive.requests("token")[0].status == 200
    bad = httpx.post(drive.token_url, data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                            "assertion": "not.a.jwt"})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_grant"
    # FileList: "nextPageToken: The page token for the next page of files. This will be absent if the end of
    # the files list has been reached."; "pageSize ... Acceptable values are 1 to 1000, inclusive. (Default: 100)"
    for n in range(3):
        drive.add(f"f{n}.txt", content=b"x")
    token = conn.api._bearer()  # noqa: SLF001
    first = raw(drive, "/drive/v3/files", token, q=children_query(drive.root), pageSize="2").json()
    assert first["kind"] == "drive#fileList" and len(first["files"]) == 2 and first["nextPageToken"]
    assert set(first["files"][0]) == {"kind", "id", "name", "mimeType"}  # the default fields, without `fields`
    last = raw(drive, "/drive/v3/files", token, q=children_query(drive.root), pageToken=first["nextPageToken"],
               pageSize="2").json()
    assert len(last["files"]) == 1 and "nextPageToken" not in last


# --- the listing -----------------------------------------------------------------------------------

def test_a_folder_is_listed_page_by_page_into_its_sub_folders(drive, key, monkeypatch):
    # "Create a shortcut to a Drive file" (developers.google.com/drive/api/guides/shortcuts): "Shortcuts are
    # files that link to other files or folders on Google Drive. Shortcuts have ... An
    # application/vnd.google-apps.shortcut MIME type ... A targetId pointing to the target file or folder".
    monkeypatch.setattr(GdriveConnector, "PAGE_SIZE", 2)
    notes = drive.add("notes.md", content=b"# Notes\nthe lighthouse desk\n", mime="text/markdown")
    plan = drive.add("Plan", content=docx("The caravan plan."), mime=DOC)
    drive.add("Budget", content=b"xlsx", mime=SHEET)
    drive.add("Deck.pptx", content=b"pptx", mime=SLIDES)  # a name that already ends with the export's extension
    drive.add("Sketch", mime=DRAWING)
    drive.add("Link to elsewhere", mime=SHORTCUT, target="1TargetOutsideTheFolder")
    sub = drive.folder("Team")
    deeper = drive.folder("Archive", sub)
    drive.add("old.txt", deeper, b"old words")
    gone = drive.add("trashed.md", sub, b"trashed")
    drive.trash(gone)

    listing = connect(drive, key).list_files()
    assert listing.complete and listing.problem is None
    by_key = {f.key: f for f in listing.files}
    assert sorted(by_key) == ["Budget.xlsx", "Deck.pptx", "Link to elsewhere", "Plan.docx", "Sketch",
                              "Team/Archive/old.txt", "notes.md"]
    assert by_key["notes.md"] == RemoteFile("notes.md", f"gdrive://{notes}", 28,
                                            hashlib.md5(b"# Notes\nthe lighthouse desk\n").hexdigest())
    assert by_key["Plan.docx"].source_path == f"gdrive://{plan}" and by_key["Plan.docx"].etag == "export:docx:1"
    assert by_key["Plan.docx"].size == 0 and by_key["Plan.docx"].note is None
    assert "shortcuts are not followed" in (by_key["Link to elsewhere"].note or "")
    assert "only Docs, Sheets and Slides" in (by_key["Sketch"].note or "")
    lists = drive.requests("list")
    # each folder's query is its own id, quoted; the root's second page came by pageToken
    folders = (drive.root, sub, deeper)
    assert {r.params["q"] for r in lists} == {f"'{i}' in parents and trashed = false" for i in folders}
    assert sum(1 for r in lists if "pageToken" in r.params) >= 3
    assert all(r.params["supportsAllDrives"] == r.params["includeItemsFromAllDrives"] == "true" for r in lists)
    assert all(r.params["corpora"] == "allDrives" and "md5Checksum" in r.params["fields"] for r in lists)
    assert not drive.requests("download") and not drive.requests("export")  # the listing fetched no bytes

    flat = connect(drive, key, recursive=False).list_files()
    assert flat.complete and not any("/" in f.key for f in flat.files)


def test_a_shared_drive_is_listed_in_its_own_corpus(drive, key, tmp_path: Path):
    # "Implement shared drive support" (developers.google.com/drive/api/guides/enable-shareddrives): "The
    # supportsAllDrives=true parameter informs Google Drive that your application is designed to handle files
    # on shared drives"; files.list's corpora: "Supported bodies are user, domain, drive, and allDrives. Prefer
    # user or drive to allDrives for efficiency."
    shared = drive.shared_drive()
    policy = drive.add("policy.md", shared, b"the orchard policy", drive=shared)
    folder = drive.folder("Handbook", shared, drive=shared)
    drive.add("leave.md", folder, b"the leave rules", drive=shared)

    conn = connect(drive, key, folder_id=None, drive_id=shared)
    listing = conn.list_files()
    assert listing.complete and [f.key for f in listing.files] == ["Handbook/leave.md", "policy.md"]
    assert all(r.params["corpora"] == "drive" and r.params["driveId"] == shared for r in drive.requests("list"))
    target = conn.fetch(next(f for f in listing.files if f.source_path == f"gdrive://{policy}"), tmp_path, MIB)
    assert target.read_bytes() == b"the orchard policy"
    assert drive.requests("download")[-1].params["supportsAllDrives"] == "true"
    # a folder inside that drive, the drive named: the same corpus
    inside = connect(drive, key, folder_id=folder, drive_id=shared).list_files()
    assert [f.key for f in inside.files] == ["leave.md"]


def test_a_folder_id_that_would_widen_the_query_is_refused_where_the_query_is_built(drive, key):
    # seed 000: "The Drive query wraps a parent id in single quotes, so x' in parents or name contains
    # 'salary is a well-formed, wider query."
    refusal = GdriveConnector.validate_config({"folder_id": HOSTILE}, LOOPBACK)
    assert refusal is not None and refusal.field == "folder_id" and "letters, digits" in refusal.message
    refusal = GdriveConnector.validate_config({"drive_id": "0A' or 'a"}, LOOPBACK)
    assert refusal is not None and refusal.field == "drive_id"
    refusal = GdriveConnector.validate_config({}, LOOPBACK)
    assert refusal is not None and refusal.field == "folder_id"
    with pytest.raises(DriveIdRefused):
        children_query(HOSTILE)
    # the funnel holds past the config too: a config that skipped validation, and a sub-folder id the
    # server itself sent, reach no query
    unchecked = GdriveConfig.model_construct(folder_id=HOSTILE, drive_id=None, recursive=True, max_files=10,
                                             endpoint=drive.url)
    conn = connect(drive, key)
    conn.config = unchecked
    listing = conn.list_files()
    assert not listing.complete and "an id Google would not issue" in (listing.problem or "")
    drive.add("salaries.md", content=b"secret")
    from tests.gdrive_double import FOLDER, Item

    drive.items[HOSTILE] = Item(HOSTILE, "Odd folder", FOLDER, drive.root)
    listing = connect(drive, key).list_files()
    assert not listing.complete and "nothing was removed" in (listing.problem or "")
    assert all("salary" not in r.params.get("q", "") for r in drive.requests("list"))


def test_a_listing_cut_by_the_run_limit_or_a_failed_page_is_not_whole(drive, key, monkeypatch, waits):
    monkeypatch.setattr(GdriveConnector, "PAGE_SIZE", 2)
    for n in range(5):
        drive.add(f"doc{n}.md", content=f"doc {n}".encode())
    cut = connect(drive, key).list_files(limit=3)
    assert not cut.complete and len(cut.files) == 3 and "SYNC_MAX_KEYS_PER_RUN" in (cut.problem or "")
    capped = connect(drive, key, max_files=4).list_files()
    assert not capped.complete and len(capped.files) == 4 and "max_files" in (capped.problem or "")
    drive.fail("list", 404, "notFound", file_id=drive.root, after=1)  # the second page's request fails
    stopped = connect(drive, key).list_files()
    assert not stopped.complete and len(stopped.files) == 2
    assert "stopped part-way (HTTP 404 notFound" in (stopped.problem or "")
    assert "nothing was removed" in (stopped.problem or "")
    drive.incomplete_search = True
    partial = connect(drive, key).list_files()
    assert not partial.complete and "incompleteSearch" in (partial.problem or "")


# --- throttling, the token ---------------------------------------------------------------------------

def test_throttling_and_server_errors_are_retried_after_retry_after(drive, key, waits):
    drive.add("a.md", content=b"a")
    drive.fail("list", 429, "rateLimitExceeded", retry_after="3")
    drive.fail("list", 403, "rateLimitExceeded", retry_after="1")
    drive.fail("list", 503, "backendError")
    listing = connect(drive, key).list_files()
    assert listing.complete and [f.key for f in listing.files] == ["a.md"]
    assert waits == [3.0, 1.0, 0.0]  # Retry-After, then the policy's back-off (no jitter here)
    assert [r.status for r in drive.requests("list")] == [429, 403, 503, 200]

    drive.fail("list", 429, "rateLimitExceeded", retry_after="1", times=4)
    throttled = connect(drive, key).list_files()
    assert not throttled.complete and "HTTP 429 rateLimitExceeded" in (throttled.problem or "")
    # a 403 that is not throttling is not retried
    before = len(drive.requests("list"))
    drive.fail("list", 403, "insufficientFilePermissions")
    refused = connect(drive, key).list_files()
    assert len(drive.requests("list")) == before + 1
    assert "HTTP 403 insufficientFilePermissions: the service account may not read it" in (refused.problem or "")


def test_an_expired_token_is_renewed_once_and_a_refused_key_says_so(drive, key, tmp_path: Path):
    file_id = drive.add("a.md", content=b"alpha")
    conn = connect(drive, key)
    assert conn.list_files().complete
    drive.expire_tokens()  # the hour passed, or the token was revoked: 401 authError
    listing = conn.list_files()
    assert listing.complete and conn.api.traffic.token_refreshes == 1
    assert len(drive.requests("token")) == 2
    drive.expire_tokens()
    assert conn.fetch(listing.files[0], tmp_path, MIB).read_bytes() == b"alpha"
    assert conn.api.traffic.token_refreshes == 2 and file_id

    from tests.remote_servers import service_account_key

    stranger = service_account_key(drive.token_url)  # a key whose public half Google does not hold
    refused = connect(drive, stranger).list_files()
    assert not refused.complete and "HTTP 400 invalid_grant" in (refused.problem or "")


# --- downloads ------------------------------------------------------------------------------------

def test_downloads_and_exports_are_bounded_and_say_what_went_wrong(drive, key, tmp_path: Path, waits):
    # "Download and export files" (developers.google.com/drive/api/guides/manage-downloads): "To download a
    # blob file stored on Drive, use the files.get method with the ID of the file to download and the alt=media
    # URL parameter"; files.export (developers.google.com/drive/api/reference/rest/v3/files/export): "Exports a
    # Google Workspace document to the requested MIME type and returns exported byte content ... Note that the
    # exported content is limited to 10 MB."
    body = b"The lighthouse desk keeps the ledger.\n"
    text = drive.add("ledger.txt", content=body)
    doc = drive.add("Plan", content=docx("The caravan plan."), mime=DOC)
    sheet = drive.add("Budget", content=b"PK xlsx bytes", mime=SHEET)
    deck = drive.add("Deck", content=b"PK pptx bytes", mime=SLIDES)
    big = drive.add("big.pdf", content=b"%PDF" + b"x" * 5000, mime="application/pdf")
    huge_doc = drive.add("Huge", content=docx("y" * 2000), mime=DOC)
    deleted = drive.add("deleted.txt", content=b"soon gone")
    changed = drive.add("changed.txt", content=b"first")
    hostile = drive.add("../../../../home/app/.ssh/authorized_keys", content=b"ssh-rsa AAAA")
    conn = connect(drive, key)
    files = {f.source_path.removeprefix("gdrive://"): f for f in conn.list_files().files}

    def fetch(file_id: str, limit: int = MIB) -> Path:
        workdir = tmp_path / file_id
        workdir.mkdir()
        return conn.fetch(files[file_id], workdir, limit)

    assert fetch(text).read_bytes() == body
    exported = fetch(doc).read_bytes()
    assert exported.startswith(b"PK") and exported == drive.items[doc].content
    assert fetch(sheet).read_bytes() == b"PK xlsx bytes" and fetch(deck).read_bytes() == b"PK pptx bytes"
    assert [r.params for r in drive.requests("export")] == [{"mimeType": gdrive.EXPORTS[m][0]} for m in (DOC, SHEET,
                                                                                                         SLIDES)]
    assert gdrive.EXPORTS[SHEET][0].endswith("spreadsheetml.sheet") and files[deck].key == "Deck.pptx"

    downloads = len(drive.requests("download"))
    assert fetch(big, limit=1000).stat().st_size == 1001  # one byte over: "too large", from the listing's size
    assert len(drive.requests("download")) == downloads  # and nothing was downloaded

    drive.export_limit = 1000  # Google's 10 MB, scaled down
    with pytest.raises(Exception) as caught:
        fetch(huge_doc)
    assert conn.describe_failure(caught.value).startswith("exportSizeLimitExceeded: Google exports at most 10 MB")

    drive.delete(deleted)  # between the listing and the download
    with pytest.raises(Exception) as caught:
        fetch(deleted)
    assert conn.describe_failure(caught.value) == ("HTTP 404 notFound: deleted, or no longer shared with the "
                                                   "service account")

    drive.update(changed, b"second")  # between the listing and the download
    with pytest.raises(Exception) as caught:
        fetch(changed)
    assert conn.describe_failure(caught.value) == "PreconditionFailed"

    landed = fetch(hostile)  # a name is a label: it lands inside the working directory, under its last part
    assert landed.parent == (tmp_path / hostile).resolve() and landed.name == "authorized_keys"
    with pytest.raises(RemoteNameRefused):
        conn.fetch(RemoteFile("Team/..", f"gdrive://{text}", 1, None), tmp_path, MIB)
    with pytest.raises(DriveIdRefused):  # an address whose id is not Google's reaches no URL
        conn.fetch(RemoteFile("x.txt", "gdrive://../../admin", 1, None), tmp_path, MIB)


# --- the guard, the credential, the registry ---------------------------------------------------------

def test_only_googles_documented_hosts_or_the_operators_list_are_reached(drive, key):
    refusal = GdriveConnector.validate_config({"folder_id": drive.root, "endpoint": drive.url}, NOBODY)
    assert refusal is not None and refusal.field == "endpoint" and "www.googleapis.com" in refusal.message
    assert GdriveConnector.validate_config({"folder_id": drive.root, "endpoint": "https://www.googleapis.com"},
                                           NOBODY) is None
    assert GdriveConnector.validate_config({"folder_id": drive.root, "endpoint": "https://evil.example"},
                                           NOBODY) is not None
    cfg = GdriveConnector.parse_config({"folder_id": drive.root})
    with pytest.raises(SourceRefused, match="token_uri"):  # a key's token_uri is input too
        GdriveConnector.open(cfg, json.dumps(key), external_id="x", settings=NOBODY, client_factory=None, state={})
    with pytest.raises(SourceRefused, match="gcp_service_account"):
        GdriveConnector.open(cfg, None, external_id="x", settings=LOOPBACK, client_factory=None, state={})
    with pytest.raises(SourceRefused, match="not a service account's JSON key"):
        GdriveConnector.open(cfg, '{"type": "authorized_user"}', external_id="x", settings=LOOPBACK,
                             client_factory=None, state={})
    refusal = GdriveConnector.validate_config({"folder_id": drive.root, "service_account_json": "{}"}, LOOPBACK)
    assert refusal is not None and refusal.field == "service_account_json"  # a credential never goes in config


def test_the_registry_names_it_with_the_gcs_connectors_secret_kind():
    cls = CONNECTORS["gdrive"]
    assert cls is GdriveConnector and cls.SECRET_KIND == CONNECTORS["gcs"].SECRET_KIND == "gcp_service_account"
    schema = GdriveConfig.model_json_schema()
    assert set(schema["properties"]) == {"folder_id", "drive_id", "recursive", "max_files", "endpoint"}
    assert "md5Checksum" in cls.CHANGE_SIGNAL and "version" in cls.CHANGE_SIGNAL


def test_a_service_that_does_not_answer_is_retried_then_named_in_words(drive, key, waits):
    from tests.remote_servers import free_port

    conn = connect(drive, key, endpoint=f"http://127.0.0.1:{free_port()}")  # nothing listens there
    listing = conn.list_files()
    assert not listing.complete and listing.files == []
    assert listing.problem == ("The folder could not be listed (ConnectError): check the source's folder_id and "
                               "drive_id, and that the folder is shared with the service account's client_email. "
                               "Nothing was removed.")
    assert len(waits) == 3  # four tries, through the one retry policy


def test_a_file_id_or_name_google_would_not_issue_is_reported_not_fetched(drive, key):
    from tests.gdrive_double import Item

    drive.items["odd id!"] = Item("odd id!", "odd.md", "text/markdown", drive.root, b"x")
    drive.add("nul\x00name.md", content=b"y")
    files = {f.key: f for f in connect(drive, key).list_files().files}
    odd = files["odd.md"]
    assert odd.note == gdrive.ID_NOTE and odd.source_path.startswith("gdrive://not-an-id-") and odd.etag is None
    assert "nulname.md" in files  # a label holds no NUL (no database column takes one)
