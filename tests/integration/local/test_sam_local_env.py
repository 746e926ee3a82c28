"""`sluice local up --expose` and `sluice local env --for-sam`: the local stack as `sam local`'s
containers reach it (docs/operations/sam-local.md).

One exposed stack (its own embedded PostgreSQL, moto, the product's template) for the module; the
containers' host name is 127.0.0.1 here, as the built-artifact check (tests/built) uses it."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import boto3
import psycopg
import pytest

from sluice.cli import main
from sluice.config import MissingSettingError
from sluice.local.expose import PASSWORD_FILE
from sluice.local.runtime import LocalRuntime, free_port
from sluice.local.samenv import NotExposedError, for_sam, write_state
from sluice.local.template import load

ROOT = Path(__file__).resolve().parents[3]
# One worker runs this module: its runtime (an embedded PostgreSQL, moto, the stack) starts once.
pytestmark = pytest.mark.xdist_group("exposed_runtime")


@pytest.fixture(scope="module")
def exposed(tmp_path_factory: pytest.TempPathFactory):
    rt = LocalRuntime(root=ROOT, data_dir=tmp_path_factory.mktemp("exposed"), api_port=0, pumps=False,
                      expose="127.0.0.1", pg_port=free_port())
    rt.start()
    yield rt
    rt.stop()


def env_json(data_dir: Path, host: str = "127.0.0.1") -> dict[str, dict[str, str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["local", "env", "--for-sam", "--host", host, "--data-dir", str(data_dir)]) == 0
    loaded: dict[str, dict[str, str]] = json.loads(out.getvalue())
    return loaded


def declared_variables() -> dict[str, set[str]]:
    """Every variable template.yaml declares, per function (Globals included), read from the YAML."""
    raw = load(ROOT / "template.yaml")
    shared = set(raw.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {}))
    return {name: shared | set(r["Properties"].get("Environment", {}).get("Variables", {}))
            for name, r in raw["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}


def test_env_json_covers_every_variable_of_every_function(exposed):
    env = env_json(exposed.data_dir)
    declared = declared_variables()
    assert set(env) == set(declared)
    missing = {fn: sorted(names - set(env[fn])) for fn, names in declared.items() if names - set(env[fn])}
    assert not missing, f"variables template.yaml declares that env.json lacks: {missing}"
    assert all(isinstance(v, str) for variables in env.values() for v in variables.values())


def test_env_json_points_every_function_at_the_exposed_services(exposed):
    env = env_json(exposed.data_dir, host="host.docker.internal")
    parse = env["ParseFunction"]
    assert parse["SLUICE_AWS_ENDPOINT_URL"] == f"http://host.docker.internal:{exposed.moto_port}"
    assert parse["SLUICE_BUCKET"] == exposed.bucket
    assert parse["SLUICE_KMS_KEY_ID"] == exposed.key_arn
    queue = env["ReaperFunction"]["CHUNK_QUEUE_URL"]  # a queue URL names the endpoint it was created through
    assert queue == f"http://host.docker.internal:{exposed.moto_port}/123456789012/sluice-ChunkQueue"
    assert parse["DATABASE_URL"].startswith(f"postgresql://postgres:{(exposed.data_dir / PASSWORD_FILE).read_text()}"
                                            f"@host.docker.internal:{exposed.pg_port}/")
    assert parse["DATABASE_URL"].endswith("?sslmode=disable")
    # The layer paths are the container's: sam local mounts the layers under /opt, as Lambda does.
    assert parse["SLUICE_CATALOG_PATH"] == "/opt/python/sluice/_data/catalog/embedding_models.json"
    assert {fn: e["DATABASE_URL"] for fn, e in env.items()} == {fn: parse["DATABASE_URL"] for fn in env}


def test_the_written_database_url_and_endpoint_work_over_tcp(exposed):
    env = env_json(exposed.data_dir)["SearchFunction"]
    with psycopg.connect(env["DATABASE_URL"], connect_timeout=10) as conn:
        assert conn.execute("SELECT count(*) FROM knowledge_bases").fetchone() == (0,)
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=env["SLUICE_AWS_ENDPOINT_URL"],
                      aws_access_key_id="testing", aws_secret_access_key="testing")  # noqa: S106 - moto's
    assert exposed.bucket in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def test_exposed_postgres_refuses_a_connection_without_the_generated_password(exposed):
    dbname = psycopg.conninfo.conninfo_to_dict(exposed.database_url)["dbname"]
    password = (exposed.data_dir / PASSWORD_FILE).read_text()
    assert len(password) >= 24 and (exposed.data_dir / PASSWORD_FILE).stat().st_mode & 0o077 == 0
    for attempt in ({}, {"password": "postgres"}, {"password": password[:-1]}):
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(host="127.0.0.1", port=exposed.pg_port, user="postgres", dbname=dbname,
                            sslmode="disable", connect_timeout=10, **attempt)
    with psycopg.connect(host="127.0.0.1", port=exposed.pg_port, user="postgres", dbname=dbname,
                         sslmode="disable", password=password, connect_timeout=10) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_env_refuses_a_stack_that_is_not_exposed(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    write_state(tmp_path, functions={"KbFunction": {"DATABASE_URL": "host=/tmp dbname=sluice"}}, moto_port=4566,
                database_url="host=/tmp dbname=sluice", expose=None, pg_port=None)
    with pytest.raises(NotExposedError, match="--expose"):
        for_sam(tmp_path)
    assert main(["local", "env", "--for-sam", "--data-dir", str(tmp_path)]) == 2
    assert "sluice local up --expose" in capsys.readouterr().err
    assert main(["local", "env", "--for-sam", "--data-dir", str(tmp_path / "never-started")]) == 2
    assert "start the stack first" in capsys.readouterr().err


def test_env_refuses_a_state_without_a_variable_a_function_requires(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]):
    # The documents function's settings require INGEST_QUEUE_URL (IngestQueueSettings): an env file
    # without it would start a container that refuses its first event.
    documents = {"SLUICE_BUCKET": "b", "INGEST_QUEUE_URL": ""}
    write_state(tmp_path, functions={"KbFunction": {}, "DocumentsFunction": documents}, moto_port=4566,
                database_url="host=/tmp dbname=sluice", expose="127.0.0.1", pg_port=5433)
    with pytest.raises(MissingSettingError, match=r"\(DocumentsFunction needs INGEST_QUEUE_URL\)"):
        for_sam(tmp_path)
    assert main(["local", "env", "--for-sam", "--data-dir", str(tmp_path)]) == 2
    assert "DocumentsFunction needs INGEST_QUEUE_URL" in capsys.readouterr().err


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_the_exposed_postgres_stops_with_the_stack(tmp_path: Path):
    # The exposing restart (sluice/local/expose.py) starts a postmaster pgserver does not know of:
    # its clean-up stopped the one it had started, long gone, and left the exposed one listening.
    rt = LocalRuntime(root=ROOT, data_dir=tmp_path, api_port=0, pumps=False, expose="127.0.0.1", pg_port=free_port())
    rt.start()
    pg_port, moto_port = rt.pg_port, rt.moto_port
    assert pg_port is not None and _listening(pg_port) and _listening(moto_port)
    rt.stop()
    assert not _listening(pg_port), "the exposed PostgreSQL still listens after the stack stopped"
    assert not _listening(moto_port)
    assert not (tmp_path / "pgdata" / "postmaster.pid").exists()


def exposed_state(data_dir: Path) -> None:
    data_dir.mkdir(exist_ok=True)
    write_state(data_dir, functions={"KbFunction": {"SLUICE_BUCKET": "b"}}, moto_port=4566,
                database_url="host=/tmp dbname=sluice", expose="127.0.0.1", pg_port=5433)


def test_env_out_is_written_readable_by_its_owner_only(tmp_path: Path):
    exposed_state(tmp_path)
    out = tmp_path / "env.json"
    out.write_text("{}")
    out.chmod(0o644)  # an earlier `> env.json` left it world-readable
    assert main(["local", "env", "--for-sam", "--data-dir", str(tmp_path), "--out", str(out)]) == 0
    assert out.stat().st_mode & 0o777 == 0o600
    password = (tmp_path / PASSWORD_FILE).read_text()
    assert f"postgres:{password}@host.docker.internal:5433" in json.loads(out.read_text())["KbFunction"]["DATABASE_URL"]


def test_env_out_refuses_to_overwrite_a_file_git_tracks(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    import subprocess

    exposed_state(tmp_path / "data")
    repo = tmp_path / "repo"
    repo.mkdir()
    tracked = repo / "env.json"
    tracked.write_text('{"committed": true}\n')
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "env.json"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    assert main(["local", "env", "--for-sam", "--data-dir", str(tmp_path / "data"), "--out", str(tracked)]) == 2
    assert "tracked by git" in capsys.readouterr().err
    assert tracked.read_text() == '{"committed": true}\n'


def test_env_json_at_the_root_is_ignored_by_git():
    import subprocess

    assert subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "env.json"]).returncode == 0
