"""Every extension GET /rag/supported-formats lists for a knowledge base goes through the parse
stage (the list is what the pipeline routes, not an aspiration), and an archive uploaded to a
base becomes one document per supported member (R-ARC-2)."""

from __future__ import annotations

import io
import tarfile
import zipfile

import pytest

from sluice.db import documents as doc_repo
from sluice.db.connection import transaction
from sluice.errors import DocCapReachedError
from sluice.parsing import SUPPORTED_EXTENSIONS
from sluice.storage import rag_key, stage_key
from tests.integration.ingest.conftest import paragraphs
from tests.unit.parsing.parsing_samples import sample_for

TEXT = "The on-call engineer rotates the signing keys every ninety days.\n"


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def tar_gz_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# Every extension a generated sample exists for (tests/unit/parsing/parsing_samples.sample_for).
SAMPLES = [
    ".pdf", ".docx", ".docm", ".xlsx", ".xlsm", ".xls", ".ods", ".pptx", ".pptm", ".odp", ".odt", ".msg",
    ".txt", ".md", ".markdown", ".csv", ".json", ".xml", ".xlf", ".xliff", ".html", ".htm",
    ".zip", ".tar.gz", ".tgz",
]  # fmt: skip
# A legacy Word sample is made by LibreOffice, and read by it: tests/integration/ingest/test_legacy_doc.py.
NO_SAMPLE = {".doc"}
KB_EXTENSIONS = sorted(ext for ext, family in SUPPORTED_EXTENSIONS.items() if family != "image")


def test_every_listed_extension_has_a_sample():
    assert set(KB_EXTENSIONS) == set(SAMPLES) | NO_SAMPLE


@pytest.mark.parametrize("ext", sorted(SAMPLES))
def test_each_listed_type_goes_through_the_parse_stage(harness, ext):
    h = harness
    doc_id = h.upload(f"sample{ext}", sample_for(ext))
    h.deliver(h.parse_message(doc_id))
    doc = h.document(doc_id)
    if SUPPORTED_EXTENSIONS[ext] == "archive":
        assert doc.status == "done", doc.error_message
        with transaction() as conn:
            members = doc_repo.list_for_kb(conn, h.kb.id, limit=10, offset=0)
        assert any(m.source_path == "sample" + ext + "!/a.txt" for m in members)
    else:
        assert doc.status == "processing", doc.error_message
        assert h.keys(stage_key("parsed", doc_id, 1)), f"{ext} produced no parsed text"


def test_an_archive_becomes_one_document_per_supported_member(harness):
    h = harness
    archive = zip_bytes({
        "docs/policy.md": f"# Policy\n\n{TEXT}".encode(),
        "docs/notes.txt": b"Badges are grey and are renewed every year at the front desk.\n",
        "img/logo.png": b"\x89PNG\r\n\x1a\n" + b"\x00" * 64,
        "tool.exe": b"MZ" + b"\x00" * 64,
    })
    doc_id = h.upload("bundle.zip", archive)
    h.deliver(h.parse_message(doc_id))
    h.deliver(h.parse_message(doc_id))  # a duplicate delivery opens nothing twice

    with transaction() as conn:
        rows = doc_repo.list_for_kb(conn, h.kb.id, limit=20, offset=0)
    archive_row = next(r for r in rows if r.id == doc_id)
    members = {r.source_path: r for r in rows if r.id != doc_id}
    assert archive_row.status == "done" and archive_row.chunk_count == 0
    assert set(members) == {"bundle.zip!/docs/policy.md", "bundle.zip!/docs/notes.txt"}

    # each member's object exists and its own event indexes it like an upload
    for member in members.values():
        assert member.filename in ("policy.md", "notes.txt") and member.storage_path.startswith("rag/")
        h.run_pipeline(member.id)
        done = h.document(member.id)
        assert done.status == "done" and h.chunk_count(member.id) == done.chunk_count > 0

    # the archive's text lists the members, the skipped ones with why
    from sluice.ingest.documents import parsed_text

    listing = parsed_text(h.ctx.store, archive_row)
    assert "docs/policy.md" in listing and "img/logo.png (skipped:" in listing and "tool.exe (skipped:" in listing


def _zip_of_notes(n: int) -> bytes:
    return zip_bytes({f"notes/{i:02d}.txt": paragraphs(2, f"topic {i}") for i in range(n)})


def test_an_archive_counts_each_member_against_the_private_pool_cap_at_upload(harness):
    """Probed: a pool at its cap of 20 took one zip of 25 files and ended with 26 documents."""
    h = harness
    h.ctx.settings = h.ctx.settings.model_copy(update={"private_doc_cap": 5, "upload_rate_per_minute": 50})
    h.upload("one.txt", paragraphs(2))

    with pytest.raises(DocCapReachedError) as err:
        h.upload("bundle.zip", _zip_of_notes(6))
    # the archive and its six members would be seven; four fit
    assert (err.value.details["room"], err.value.details["requested"]) == (4, 7)
    assert "room for 4 more" in err.value.message
    with transaction() as conn:
        assert doc_repo.count_for_kb(conn, h.kb.id) == 1
    assert h.keys("rag/") == [k for k in h.keys("rag/") if k.endswith("one.txt")]

    h.upload("bundle.zip", _zip_of_notes(3))  # four documents: exactly what fits
    with transaction() as conn:
        assert doc_repo.count_for_kb(conn, h.kb.id) == 2  # the members are opened when it is unpacked


def test_an_archive_unpacked_into_a_full_pool_fails_with_the_room_left(harness):
    # A presigned archive is only read when it arrives: the cap is checked again at unpacking.
    h = harness
    h.ctx.settings = h.ctx.settings.model_copy(update={"private_doc_cap": 5})
    with transaction() as conn:
        doc = doc_repo.insert(conn, kb_id=h.kb.id, org_id=None, collection_name=h.kb.collection_name,
                              filename="bundle.zip", storage_path=rag_key(h.kb.collection_name, "bundle.zip"),
                              source="upload", uploaded_by="alice")
    h.ctx.store.put(doc.storage_path, _zip_of_notes(6))
    h.deliver(h.parse_message(doc.id))

    failed = h.document(doc.id)
    assert failed.status == "error"
    assert "would add 6 documents" in failed.error_message and "room for 4 more" in failed.error_message
    with transaction() as conn:
        assert doc_repo.count_for_kb(conn, h.kb.id) == 1


def test_a_file_under_another_supported_kinds_name_is_indexed_as_what_it_is_with_a_note(harness):
    # R-UP-6 (revised 2026-12-02): a legacy .xls saved as .xlsx is read as the .xls it is, and says so.
    from tests.unit.parsing.parsing_samples import xls_bytes

    h = harness
    doc_id = h.upload("q3-budget.xlsx", xls_bytes({"Budget": [["heating oil", 1250.0], ["boathouse repairs", 880.0]]}))
    h.run_pipeline(doc_id)
    doc = h.document(doc_id)
    assert doc.status == "done", doc.error_message
    assert doc.filetype == "application/vnd.ms-excel" and h.chunk_count(doc_id) > 0
    assert doc.parse_notes == [
        "q3-budget.xlsx is named as an Excel workbook (.xlsx) but is a legacy Excel workbook (.xls): "
        "it was read as one."
    ]


def test_a_file_read_as_its_name_says_has_no_notes(harness):
    h = harness
    doc_id = h.upload("rotation.md", paragraphs(3))
    h.run_pipeline(doc_id)
    assert h.document(doc_id).parse_notes is None
