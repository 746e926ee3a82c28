"""What the sluice-client tests share: a client for a user of the local stack, and a planted fact."""

from __future__ import annotations

import uuid

import pytest

sluice_client = pytest.importorskip("sluice_client", reason="sluice-client is not installed (make install)")

PLANTED = ("Clause 14. If the Supplier delivers the forklift chargers late, the Supplier pays the Buyer "
           "two percent of the Contract Price for each full week of delay, at most twenty percent.")
QUESTION = "What penalty does the supplier pay for late delivery of the chargers?"
UNRELATED = [
    ("sourdough.txt", "Feed the sourdough starter twice a day with equal weights of flour and water."),
    ("comets.txt", "A comet's tail always points away from the Sun because the solar wind pushes the gas outward."),
    ("espresso.txt", "A good espresso extracts in about twenty-five seconds from eighteen grams of coffee."),
    ("chess.txt", "In the opening, control the centre, develop knights before bishops and castle early."),
]


def user(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:6]}"


def planted_base(sluice) -> tuple:  # type: ignore[no-untyped-def]
    """A personal base holding the planted clause (page 2 of contract.pdf, unit "legal") among unrelated
    notes (unit "kitchen"), every document indexed."""
    from tests.unit.parsing.parsing_samples import pdf_bytes

    kb = sluice.create_knowledge_base(f"Planted {uuid.uuid4().hex[:6]}")
    contract = pdf_bytes(["Supply agreement between Northwind and Harbour. Definitions and scope.", PLANTED])
    accepted = [sluice.upload(kb.id, contract, filename="contract.pdf", organizational_unit="legal",
                              document_type="contract")]
    accepted += [sluice.upload(kb.id, text.encode(), filename=name, organizational_unit="kitchen")
                 for name, text in UNRELATED]
    docs = [sluice.wait(a, timeout=180, poll=0.2) for a in accepted]
    return kb, docs
