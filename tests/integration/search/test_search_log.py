"""R-SRCH-6: every search logs what was asked (120 characters), how much came back, the top score and the
latency, and never a chunk's text."""

from __future__ import annotations

import logging
import uuid

from sluice.search.service import SearchRequest, search
from sluice.vectors import store
from tests.fakes import embedder_returning
from tests.integration.search.conftest import make_base, unit, viewer

Q = unit([1, 0, 0, 0, 0, 0, 0, 0])
SECRET_TEXT = "The vault combination is 12-34-56 and must never reach a log."


def test_a_search_logs_its_figures_and_no_chunk_text(conn, caplog):
    store.ensure_table(conn, "vault", 8)
    base = make_base(conn, "vault")
    store.insert_chunks(conn, "vault", [store.ChunkRow(document_id=uuid.uuid4(), kb_id=base.id, org_id="acme",
                                                       chunk_index=0, content=SECRET_TEXT, embedding=Q)])
    # No word of the query is in the chunk: the score is the vector side's alone, alpha (0.5) x its
    # normalised cosine (1: the only candidate).
    query = "where do we keep our safe code " + "x" * 200
    with caplog.at_level(logging.INFO, logger="sluice.search"):
        outcome = search(conn, viewer(), SearchRequest(query=query, collections=["vault"]), embedder_returning(Q))
    assert len(outcome.results) == 1
    [record] = [r for r in caplog.records if r.name == "sluice.search"]
    assert record.query_prefix == query[:120]
    assert record.results == 1 and record.top_score == 0.5
    assert record.latency_ms >= 0 and record.plans == {"vault": "exact"}
    logged = " ".join(str(v) for v in record.__dict__.values())
    assert "12-34-56" not in logged
