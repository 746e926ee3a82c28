"""`sluice search` directly against DATABASE_URL prints the service's results as a table."""

from __future__ import annotations

import uuid

from sluice import cli
from sluice.vectors import store
from tests.fakes import embedder_returning
from tests.integration.search.conftest import make_base, unit

Q = unit([1, 0, 0, 0, 0, 0, 0, 0])


def test_direct_search_prints_a_table_and_respects_scope(conn, monkeypatch, capsys):
    import sluice.wiring

    store.ensure_table(conn, "manuals", 8)
    base = make_base(conn, "manuals", org="acme")
    store.insert_chunks(conn, "manuals", [
        store.ChunkRow(document_id=uuid.uuid4(), kb_id=base.id, org_id="acme", chunk_index=3,
                       content="Reset the router by holding the button for ten seconds.", embedding=Q,
                       filename="router.pdf", page_start=2, page_end=2, organizational_unit="support",
                       source="upload")])
    conn.commit()
    monkeypatch.setattr(sluice.wiring, "embedder_for", embedder_returning(Q))

    assert cli.main(["search", "how do I reset the router", "-c", "manuals"]) == 0
    out = capsys.readouterr().out
    header, _, row, *_ = out.splitlines()
    assert header.split()[:5] == ["#", "score", "vec", "text", "rerank"]
    assert "router.pdf" in row and "2-2" in row and "support" in row and "Reset the router" in row
    assert "1 result(s)" in out

    # as a user of another organization the collection does not exist
    assert cli.main(["search", "router", "-c", "manuals", "--user", "eve", "--org", "globex"]) == 1
    assert "Collection not found" in capsys.readouterr().err

    assert cli.main(["search", "router", "-c", "manuals", "--diagnostic", "--unit", "support"]) == 0
    head, _, row, *_ = capsys.readouterr().out.splitlines()
    assert head.split()[5:10] == ["vec_n", "text_n", "by", "gate", "passed"]
    assert row.split()[7:10] == ["vector+text", "vec_gate", "True"]

    # alpha and min_vec_score go to the service, which checks them
    assert cli.main(["search", "printer", "-c", "manuals", "--min-vec-score", "0.5", "--alpha", "0"]) == 0
    assert "1 result(s)" in capsys.readouterr().out
    assert cli.main(["search", "printer", "-c", "manuals", "--alpha", "1.5"]) == 1
    assert '"alpha"' in capsys.readouterr().err
    assert cli.main(["search", "printer", "-c", "manuals", "--min-vec-score", "2"]) == 1
    assert '"min_vec_score"' in capsys.readouterr().err
