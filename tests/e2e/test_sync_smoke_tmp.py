import pytest
from tests.e2e.sync_support import sync_world  # noqa: F401

pytestmark = pytest.mark.e2e


def test_smoke(sync_world):
    w = sync_world
    b = w.bucket()
    for i in range(3):
        w.put(b, f"docs/f{i}.md", f"# Doc {i}\n\nParagraph about topic {i} with enough words to index.\n".encode())
    src = w.source(b)
    run = w.run(src)
    print(run)
    print(w.files(run["id"]))
    print([ (d["filename"], d["status"], d["source_path"]) for d in w.documents()])
    run2 = w.run(src)
    print(run2)
    print(w.calls)
