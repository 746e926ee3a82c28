"""The azure_blob and gcs connectors against real servers: Azurite (which checks Shared Key signatures)
and gcp-storage-emulator with a real service-account sign-in (tests/remote_servers.py). Their runs
through the sync machinery are in tests/e2e/test_sync_remote_stores.py; here, the connectors' own
answers: pages, markers, prefixes, conditional downloads, sizes, credentials and config refusals."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sluice.config import SyncContextSettings
from sluice.sync.connectors import AzureBlobConnector, GcsConnector, ObjectStoreConnector, SourceRefused
from sluice.sync.connectors.azure_blob import read_credential
from sluice.sync.connectors.gcs import read_key

LOOPBACK = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": "127.0.0.0/8"})
NOBODY = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": ""})


@pytest.fixture(scope="module")
def azurite() -> Iterator[Any]:
    from tests.remote_servers import Azurite

    server = Azurite()
    yield server
    server.close()


@pytest.fixture(scope="module")
def gcs() -> Iterator[Any]:
    from tests.remote_servers import GcsEmulator, TokenEndpoint

    server, token = GcsEmulator(), TokenEndpoint()
    server.token = token
    yield server
    token.close()
    server.close()


def azure(azurite: Any, container: str, key: str | None = None, **config: Any) -> AzureBlobConnector:
    from tests.remote_servers import AZURITE_ACCOUNT, AZURITE_KEY

    cfg = AzureBlobConnector.parse_config({"account": AZURITE_ACCOUNT, "container": container,
                                           "endpoint": azurite.endpoint, **config})
    assert AzureBlobConnector.check(cfg, LOOPBACK) is None
    secret = json.dumps({"account_name": AZURITE_ACCOUNT, "account_key": key or AZURITE_KEY})
    return AzureBlobConnector.open(cfg, secret, external_id="x", settings=LOOPBACK, client_factory=None, state={})


def google(gcs: Any, bucket: str, **config: Any) -> GcsConnector:
    from tests.remote_servers import service_account_key

    cfg = GcsConnector.parse_config({"bucket": bucket, "endpoint": gcs.endpoint, **config})
    assert GcsConnector.check(cfg, LOOPBACK) is None
    secret = json.dumps(service_account_key(gcs.token.url))
    return GcsConnector.open(cfg, secret, external_id="x", settings=LOOPBACK, client_factory=None, state={})


def test_both_are_the_object_store_loop_with_a_client_of_their_own():
    for cls in (AzureBlobConnector, GcsConnector):
        assert issubclass(cls, ObjectStoreConnector)
        assert cls.list_files is ObjectStoreConnector.list_files  # nothing copied from S3's loop
    assert (AzureBlobConnector.SCHEME, AzureBlobConnector.CONTAINER_FIELD) == ("azure", "container")
    assert (GcsConnector.SCHEME, GcsConnector.CONTAINER_FIELD) == ("gs", "bucket")
    assert "ETag" in AzureBlobConnector.CHANGE_SIGNAL


def test_azure_pages_skip_markers_and_keep_to_the_prefix(azurite, monkeypatch):
    name = f"c{uuid.uuid4().hex[:10]}"
    container = azurite.service().create_container(name)
    for key in ["docs/", "docs/a.md", "docs/b.md", "docs/c.md", "docs/sub/d.md", "other/e.md"]:
        container.upload_blob(key, b"" if key.endswith("/") else key.encode())
    monkeypatch.setattr(AzureBlobConnector, "PAGE_SIZE", 2)
    listing = azure(azurite, name, prefix="docs/").list_files()
    assert listing.complete and listing.markers_skipped == 1
    assert [f.key for f in listing.files] == ["docs/a.md", "docs/b.md", "docs/c.md", "docs/sub/d.md"]
    assert listing.files[0].source_path == f"azure://{name}/docs/a.md" and listing.files[0].size == 9
    assert all(f.etag and not f.etag.startswith('"') for f in listing.files)
    cut = azure(azurite, name).list_files(limit=3)
    assert not cut.complete and len(cut.files) == 3 and "SYNC_MAX_KEYS_PER_RUN" in (cut.problem or "")


def test_azure_downloads_are_conditional_on_the_listed_etag_and_bounded(azurite, tmp_path: Path):
    name = f"c{uuid.uuid4().hex[:10]}"
    container = azurite.service().create_container(name)
    container.upload_blob("a.md", b"first version")
    container.upload_blob("big.pdf", b"x" * 5000)
    conn = azure(azurite, name)
    files = {f.key: f for f in conn.list_files().files}
    assert conn.fetch(files["a.md"], tmp_path, 100).read_bytes() == b"first version"
    big = conn.fetch(files["big.pdf"], tmp_path / "b" if (tmp_path / "b").mkdir() is None else tmp_path, 1000)
    assert big.stat().st_size == 1001  # one byte over: "too large", from the listing's size
    container.upload_blob("a.md", b"second version", overwrite=True)
    with pytest.raises(Exception) as caught:
        conn.fetch(files["a.md"], tmp_path / "c" if (tmp_path / "c").mkdir() is None else tmp_path, 100)
    assert conn.describe_failure(caught.value) == "PreconditionFailed"


def test_azure_with_a_wrong_key_lists_nothing_and_says_so(azurite):
    name = f"c{uuid.uuid4().hex[:10]}"
    azurite.service().create_container(name).upload_blob("a.md", b"a")
    wrong = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkwMTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNA=="
    listing = azure(azurite, name, key=wrong).list_files()
    assert not listing.complete and listing.files == []
    assert "(AuthorizationFailure)" in (listing.problem or "") and "Nothing was removed" in (listing.problem or "")


def test_gcs_lists_with_a_real_sign_in_and_downloads_bounded(gcs, tmp_path: Path):
    bucket = gcs.client().create_bucket(f"b-{uuid.uuid4().hex[:10]}")
    for key in ["docs/", "docs/a.md", "docs/b.md", "other/c.md"]:
        bucket.blob(key).upload_from_string(b"" if key.endswith("/") else key.encode() * 20)
    before = len(gcs.token.assertions)
    conn = google(gcs, bucket.name, prefix="docs/")
    listing = conn.list_files()
    assert listing.complete and listing.markers_skipped == 1
    assert [f.key for f in listing.files] == ["docs/a.md", "docs/b.md"]
    assert listing.files[0].source_path == f"gs://{bucket.name}/docs/a.md" and listing.files[0].etag
    assert len(gcs.token.assertions) > before  # the key signed an assertion; the token was used
    assert conn.fetch(listing.files[0], tmp_path, 1000).read_bytes() == b"docs/a.md" * 20
    (tmp_path / "s").mkdir()
    assert conn.fetch(listing.files[1], tmp_path / "s", 100).stat().st_size == 101


def test_config_and_credential_refusals_name_their_field_or_say_why():
    def refused(cls: Any, config: dict, settings: SyncContextSettings = NOBODY) -> str | None:
        r = cls.validate_config(config, settings)
        assert r is not None, config
        return r.field

    assert refused(AzureBlobConnector, {"account": "Bad_Name", "container": "docs"}) == "account"
    assert refused(AzureBlobConnector, {"account": "acct", "container": "a--b"}) == "container"
    assert refused(AzureBlobConnector, {"account": "acct", "container": "docs",
                                        "endpoint": "http://127.0.0.1:10000/acct"}) == "endpoint"
    assert refused(AzureBlobConnector, {"account": "acct", "container": "docs",
                                        "account_key": "abc"}) == "account_key"
    assert AzureBlobConnector.validate_config({"account": "acct", "container": "docs", "endpoint":
                                               "https://acct.blob.core.windows.net"}, NOBODY) is None
    assert refused(GcsConnector, {"bucket": "goog-docs"}) == "bucket"
    assert refused(GcsConnector, {"bucket": "docs", "endpoint": "https://storage.example.org"}) == "endpoint"
    assert refused(GcsConnector, {"bucket": "docs", "service_account": {"x": 1}}) == "service_account"
    assert GcsConnector.validate_config({"bucket": "docs"}, NOBODY) is None

    with pytest.raises(SourceRefused, match="another storage account"):
        read_credential(json.dumps({"account_name": "other", "account_key": "k"}), "acct")
    with pytest.raises(SourceRefused, match="neither a sas_token"):
        read_credential(json.dumps({"key": "k"}), "acct")
    assert read_credential(json.dumps({"sas_token": "?sv=1&sig=x"}), "acct").signature == "sv=1&sig=x"
    with pytest.raises(SourceRefused, match="token_uri"):
        read_key(json.dumps({"type": "service_account", "client_email": "a@b", "private_key": "k",
                             "token_uri": "http://169.254.169.254/token"}), NOBODY)
    with pytest.raises(SourceRefused, match="not a service account"):
        read_key(json.dumps({"type": "authorized_user"}), NOBODY)
    with pytest.raises(SourceRefused, match="no Azure credential"):
        AzureBlobConnector.open(AzureBlobConnector.parse_config({"account": "acct", "container": "docs"}), None,
                                external_id="x", settings=NOBODY, client_factory=None, state={})


# --- the outbound guard where the SDKs connect (sdk_http) -----------------------------------------------

class Recorder:
    """A loopback server answering every request with ``status`` (and ``location``), counting them."""

    def __init__(self, host: str, status: int = 200, location: str | None = None) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.hits: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def answer(self) -> None:
                owner.hits.append(self.path)
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_HEAD = answer  # noqa: N815

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_policy_that_does_not_allow_the_endpoint_refuses_the_sdks_connection_in_words(azurite, gcs):
    from sluice.sync.outbound import NOT_REACHABLE
    from tests.remote_servers import AZURITE_ACCOUNT, AZURITE_KEY, service_account_key

    # A config accepted once (its host listed then, or resolving elsewhere then) meets a run whose policy
    # does not allow it: the SDK's own request is refused before a byte is sent.
    name = f"c{uuid.uuid4().hex[:10]}"
    azurite.service().create_container(name).upload_blob("a.md", b"a")
    cfg = AzureBlobConnector.parse_config({"account": AZURITE_ACCOUNT, "container": name,
                                           "endpoint": azurite.endpoint})
    secret = json.dumps({"account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY})
    listing = AzureBlobConnector.open(cfg, secret, external_id="x", settings=NOBODY, client_factory=None,
                                      state={}).list_files()
    assert not listing.complete and listing.files == [] and NOT_REACHABLE in (listing.problem or "")

    # GCS: the token endpoint listed by name, the storage endpoint not: the key signs in, the listing is refused
    only_the_token = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": "localhost"})
    key = service_account_key(gcs.token.url.replace("127.0.0.1", "localhost"))
    bucket = gcs.client().create_bucket(f"b-{uuid.uuid4().hex[:10]}")
    bucket.blob("a.md").upload_from_string(b"a")
    conn = GcsConnector.open(GcsConnector.parse_config({"bucket": bucket.name, "endpoint": gcs.endpoint}),
                             json.dumps(key), external_id="x", settings=only_the_token, client_factory=None, state={})
    listing = conn.list_files()
    assert not listing.complete and listing.files == [] and NOT_REACHABLE in (listing.problem or "")


def test_a_redirect_is_never_followed_off_the_endpoint(gcs, azurite):
    from tests.remote_servers import AZURITE_ACCOUNT, AZURITE_KEY, service_account_key

    # Only 127.0.0.1 is listed; the endpoint answers 302 to 127.0.0.2 (loopback too, so a follow would land)
    elsewhere = Recorder("127.0.0.2")
    redirector = Recorder("127.0.0.1", 302, elsewhere.url + "/stolen")
    settings = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": "127.0.0.1/32"})
    try:
        cfg = AzureBlobConnector.parse_config({"account": AZURITE_ACCOUNT, "container": "docs",
                                               "endpoint": f"{redirector.url}/{AZURITE_ACCOUNT}"})
        secret = json.dumps({"account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY})
        azure_listing = AzureBlobConnector.open(cfg, secret, external_id="x", settings=settings, client_factory=None,
                                                state={}).list_files()
        gcfg = GcsConnector.parse_config({"bucket": "docs", "endpoint": redirector.url})
        gcs_listing = GcsConnector.open(gcfg, json.dumps(service_account_key(gcs.token.url)), external_id="x",
                                        settings=settings, client_factory=None, state={}).list_files()
        assert not azure_listing.complete and not gcs_listing.complete
        assert len(redirector.hits) >= 2 and elsewhere.hits == []
    finally:
        redirector.close()
        elsewhere.close()


def test_a_name_that_re_points_after_the_check_reaches_nothing_inside(azurite, gcs):
    from azure.core.pipeline.transport import RequestsTransport
    from azure.storage.blob import BlobServiceClient
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    from sluice.outbound import EndpointNotAllowed, OutboundPolicy
    from sluice.sync.connectors.sdk_http import guarded_session
    from tests.remote_servers import AZURITE_ACCOUNT, AZURITE_KEY

    # DNS rebinding: "localhost" answers the emulator's address, then the instance metadata service's
    # for the next connection; the SDK's request through the guarded session is refused at connect.
    answer = {"address": "127.0.0.1"}
    policy = OutboundPolicy.parse("127.0.0.0/8")

    def resolve(host: str) -> list[str]:
        return [answer["address"]]

    name = f"c{uuid.uuid4().hex[:10]}"
    azurite.service().create_container(name).upload_blob("a.md", b"a")
    session = guarded_session(policy, (), resolve=resolve)
    service = BlobServiceClient(
        azurite.endpoint.replace("127.0.0.1", "localhost"), retry_total=0,
        credential={"account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY},
        transport=RequestsTransport(session=session, session_owner=True, use_env_settings=False))
    assert [b.name for b in service.get_container_client(name).list_blobs()] == ["a.md"]

    bucket = gcs.client().create_bucket(f"b-{uuid.uuid4().hex[:10]}")
    gsession = guarded_session(policy, (), resolve=resolve)
    client = storage.Client(project="test", credentials=AnonymousCredentials(), _http=gsession,
                            client_options={"api_endpoint": gcs.endpoint.replace("127.0.0.1", "localhost")})
    assert list(client.list_blobs(bucket.name)) == []

    answer["address"] = "169.254.169.254"
    for s in (session, gsession):
        s.get_adapter("http://").poolmanager.clear()  # the next request needs a new connection
    with pytest.raises(EndpointNotAllowed):
        list(service.get_container_client(name).list_blobs())
    with pytest.raises(EndpointNotAllowed):
        list(client.list_blobs(bucket.name, retry=None))
