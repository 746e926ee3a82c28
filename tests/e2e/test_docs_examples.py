"""The documentation's examples run against the local stack, so they cannot drift from the API: the
quickstart's curl walk-through (README.md holds the same block) with bash and curl, and the client's,
LangChain's and LlamaIndex's snippets with Python. A page marks a block for this with
``<!-- run: NAME -->`` before its fence (tools/gen_docs.py, ``marked_blocks``). What a block is given
is only what its page says it assumes: the stack's address in place of 127.0.0.1:8787, and a token."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.e2e.client_support import sluice_client, user
from tools.gen_docs import marked_blocks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
DOCUMENTED_API = "http://127.0.0.1:8787"
Sluice = sluice_client.Sluice


def block(page: str, name: str, language: str) -> str:
    found = marked_blocks((ROOT / page).read_text(encoding="utf-8"))
    assert name in found, f"{page} marks no block {name!r} to run"
    assert found[name][0] == language
    return found[name][1]


def json_values(text: str) -> list:
    """The JSON values printed one after another (curl -s ends none of them with a newline)."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        value, at = decoder.raw_decode(text, at)
        values.append(value)
    return values


@pytest.fixture(scope="module")
def walk_through(runtime):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed: the quickstart's walk-through uses it")
    if not (ROOT / ".venv" / "bin" / "sluice").exists():
        pytest.skip("no .venv/bin/sluice in this clone (make install): the walk-through mints its token with it")
    script = block("docs/quickstart.md", "quickstart-curl", "bash")
    assert DOCUMENTED_API in script and "--user alice" in script
    # A user of its own, so no other test's uploads count against this one's upload rate.
    script = script.replace(DOCUMENTED_API, runtime.api_url).replace("--user alice", f"--user {user('alice')}")
    script = f'set -eu\n{script}\nprintf "\\n%s %s %s %s\\n" "$TOKEN" "$KB_ID" "$DOC_ID" "$COLL"\n'
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=dict(os.environ), capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    printed, _, names = done.stdout.rstrip("\n").rpartition("\n")
    token, kb_id, doc_id, collection = names.split()
    return token, kb_id, doc_id, collection, json_values(printed)


def test_the_quickstart_walk_through_indexes_the_example_and_finds_it(walk_through):
    _, kb_id, doc_id, collection, (presigned, document, search) = walk_through
    assert set(presigned["upload"]) >= {"url", "fields", "expires_in"} and presigned["status"] == "processing"
    assert document["id"] == doc_id and document["status"] == "done", document
    assert document["kb_id"] == kb_id and document["collection_name"] == collection
    assert search["results"], search
    first = search["results"][0]
    assert first["document_id"] == doc_id and "SSE-KMS" in first["content"]


def test_the_client_snippet_uploads_waits_and_searches(runtime, walk_through, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # it uploads examples/security.md
    code = block("docs/guides/client.md", "python-client", "python").replace(DOCUMENTED_API, runtime.api_url)
    namespace: dict = {"TOKEN": walk_through[0]}
    exec(compile(code, "docs/guides/client.md", "exec"), namespace)
    assert namespace["doc"].status == "done" and namespace["doc"].filename == "security.md"
    printed = capsys.readouterr().out  # each hit: score, filename, page, the first 80 characters
    assert printed.startswith("0.") and " security.md p." in printed and "Encryption at rest" in printed, printed


@pytest.fixture(scope="module")
def legal_collection(runtime, walk_through):
    """A base holding examples/security.md under the unit "legal", which the LangChain snippet filters on."""
    with Sluice(runtime.api_url, token=walk_through[0]) as sluice:
        kb = sluice.create_knowledge_base(f"Legal {uuid.uuid4().hex[:6]}")
        sluice.wait(sluice.upload(kb.id, ROOT / "examples" / "security.md", organizational_unit="legal"),
                    timeout=180, poll=0.2)
        return kb.collection_name


def framework_namespace(runtime, walk_through, collection) -> dict:
    return {"Sluice": Sluice, "API": runtime.api_url, "TOKEN": walk_through[0], "COLL": collection}


def test_the_langchain_snippet_retrieves_the_example(runtime, walk_through, legal_collection):
    pytest.importorskip("sluice_client.langchain", reason="langchain-core is not installed (make install)")
    namespace = framework_namespace(runtime, walk_through, legal_collection)
    exec(compile(block("docs/guides/frameworks.md", "langchain", "python"), "langchain", "exec"), namespace)
    docs = namespace["docs"]
    assert docs and docs[0].metadata["filename"] == "security.md" and "SSE-KMS" in docs[0].page_content
    assert docs[0].metadata["metadata"]["organizational_unit"] == "legal"


def test_the_llamaindex_snippet_retrieves_the_example(runtime, walk_through, legal_collection):
    pytest.importorskip("sluice_client.llamaindex", reason="llama-index-core is not installed (make install)")
    namespace = framework_namespace(runtime, walk_through, legal_collection)
    exec(compile(block("docs/guides/frameworks.md", "llamaindex", "python"), "llamaindex", "exec"), namespace)
    nodes = namespace["nodes"]
    assert nodes and "SSE-KMS" in nodes[0].node.get_content() and nodes[0].score > 0
