"""Near-identical notes, each carrying one unique identifier: the search that must find a note by the
identifier alone (issue 13). Shared by the test and bench/retrieval_quality.py's exact-token row."""

from __future__ import annotations

BOILERPLATE = (
    "Customer service note. The customer called about a delayed delivery and asked for an update. "
    "The agent checked the warehouse system, confirmed the parcel is on its way, apologised for the "
    "delay and promised a follow-up call within two working days. No refund was requested. "
)
SURNAMES = ("Okonkwo", "Vasquez", "Kowalczyk", "Nakamura", "Oyelaran", "Thorsdottir", "Papadakis", "Lindqvist",
            "Mbeki", "Castellanos", "Haddad", "Quispe", "Abernathy", "Szymanski")
# Past the first round, a surname gets a suffix that makes it another word: "Kowalczyk-44" would hold
# the word "Kowalczyk", and a search for that surname would rightly find both notes.
SUFFIXES = ("berg", "feld", "stad", "wick", "holm", "ova")


def identifiers(n: int) -> list[str]:
    """``n`` distinct identifiers of five kinds: order codes, numbers with dashes, surnames,
    e-mail-like tokens and clause ids."""
    kinds = [
        lambda i: f"ORD-2024-{4100 + i * 37:05d}",
        lambda i: f"{310 + i}-{4417 + i * 13:04d}-{19 + i}",
        lambda i: SURNAMES[i % len(SURNAMES)] + ("" if i < len(SURNAMES) else SUFFIXES[i // len(SURNAMES) - 1]),
        lambda i: f"case{i:03d}.owner@support{i % 7}.example",
        lambda i: f"clause-{i % 9 + 1}.{i // 9 + 1}.{i % 4 + 1}",
    ]
    return [kinds[i % len(kinds)](i // len(kinds) + i) for i in range(n)]


def notes(n: int) -> list[tuple[str, str]]:
    """(identifier, note text) pairs: the boilerplate with the identifier in one sentence of it."""
    return [(ident, f"{BOILERPLATE}Reference: {ident}. Handled by the second-line team.")
            for ident in identifiers(n)]
