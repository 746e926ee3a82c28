"""A legacy Word (.doc) upload goes through every stage to searchable chunks, read by LibreOffice
in the parse child. The .doc is a generated .docx converted by LibreOffice; where it is absent
the test skips with a sentence saying so."""

from __future__ import annotations

import pytest

from sluice.ingest.documents import parsed_text
from tests.unit.parsing.parsing_samples import SOFFICE_ABSENT, doc_bytes

PARAGRAPHS = ["Legacy memo: the loading dock closes at six on Fridays.",
              "Deliveries after six wait at the north gate until Monday."]


def test_a_doc_upload_is_read_chunked_and_embedded(harness):
    try:
        (doc,) = doc_bytes([PARAGRAPHS])
    except LookupError:
        pytest.skip(SOFFICE_ABSENT)
    h = harness
    doc_id = h.upload("memo.doc", doc)

    h.run_pipeline(doc_id)

    row = h.document(doc_id)
    assert row.status == "done", row.error_message
    assert row.filetype == "application/msword"
    assert parsed_text(h.ctx.store, row).split("\n")[:2] == PARAGRAPHS
    assert h.chunk_count(doc_id) >= 1
