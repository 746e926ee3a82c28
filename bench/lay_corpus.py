"""A second retrieval corpus, generated: short lay questions whose one answer is a sentence buried
in a page of office boilerplate (issue 27).

SciFact's queries are long scientific claims that share many rare words with their abstracts: the
case BM25 is best at. This corpus is built from the opposite principles, the ones the issue's
failures came from (the boathouse notes; identifiers; short lay queries):

* the query is short and in other words than the answer ("who looks after the chapel" for "Priya
  Raman is responsible for the chapel"), so the lexical side matches only on the place's name, which
  several documents share (each place has one note per kind of fact: hard lexical distractors);
* the answer is one sentence in 60-90 words of boilerplate shared by every document, so a chunk's
  cosine to the query is low for every chunk, the relevant one included (the gate's failure);
* half the documents are boilerplate with no fact at all.

Deterministic (seeded): ``documents()`` and ``queries()`` return the same corpus on every run.
"""

from __future__ import annotations

import random

PLACES = (
    "boathouse", "greenhouse", "chapel", "archive", "sauna", "workshop", "attic", "cellar", "observatory",
    "laboratory", "gymnasium", "library", "kitchen", "garage", "stable", "bakery", "pharmacy", "studio",
    "courtyard", "warehouse", "darkroom", "infirmary", "armoury", "boardroom", "mailroom", "pavilion",
    "orchard", "vineyard", "lighthouse", "conservatory",
)
COLOURS = ("green", "red", "blue", "yellow", "black", "silver", "brass", "white")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
NAMES = ("Priya Raman", "Tomasz Wójcik", "Amara Obi", "Lucas Moreau", "Ingrid Solberg", "Kenji Sato",
         "Fatima Haddad", "Diego Alvarez", "Sofia Rossi", "Owen Hughes")
HOURS = ("five", "six", "seven", "eight", "nine", "ten")
WORDS = ("marmalade", "tangerine", "pinecone", "harbourlight", "copperfield", "bluebell", "driftwood")

# (fact sentence, lay question): the question shares the place's name and little else.
FACTS = (
    ("The {place} key is the {colour} one on the hook by the door.", "which key opens the {place}"),
    ("Deliveries for the {place} are made every {day} morning.", "when does stuff get dropped off at the {place}"),
    ("{name} is responsible for the {place}.", "who looks after the {place}"),
    ("The wireless password in the {place} is {word}.", "how do i get online in the {place}"),
    ("The {place} is locked at {hour} in the evening.", "what time does the {place} shut"),
)

BOILERPLATE = (
    "This page is part of the facilities handbook and is reviewed every quarter by the office team.",
    "Please report any damage or missing equipment to the front desk as soon as you notice it.",
    "Visitors must sign in at reception and wear a badge while they are on the premises.",
    "The fire assembly point is in the car park beside the main entrance.",
    "Cleaning takes place after hours; leave desks clear so that surfaces can be wiped down.",
    "Printed copies of this page may be out of date; the intranet version is the reference.",
    "Staff are reminded that food should not be left in shared fridges over the weekend.",
    "Questions about this handbook can be sent to the facilities mailbox.",
    "Health and safety training is mandatory for all new starters within their first month.",
    "Recycling bins for paper, glass and cans are located on every floor near the lifts.",
)


def _page(rng: random.Random, fact: str | None) -> str:
    lines = rng.sample(BOILERPLATE, 6)
    if fact is not None:
        lines.insert(rng.randrange(1, len(lines)), fact)
    return " ".join(lines)


def corpus(seed: int = 27) -> tuple[list[dict], list[dict], dict[str, set[str]]]:
    """(documents, queries, relevant documents per query) in SciFact's shapes."""
    rng = random.Random(seed)
    docs: list[dict] = []
    queries: list[dict] = []
    qrels: dict[str, set[str]] = {}
    for p, place in enumerate(PLACES):
        for f, (fact, question) in enumerate(FACTS):
            values = {"place": place, "colour": rng.choice(COLOURS), "day": rng.choice(DAYS),
                      "name": rng.choice(NAMES), "hour": rng.choice(HOURS), "word": rng.choice(WORDS)}
            doc_id = f"d{p:02d}{f}"
            docs.append({"_id": doc_id, "title": "", "text": _page(rng, fact.format(**values))})
            qid = f"q{p:02d}{f}"
            queries.append({"_id": qid, "text": question.format(**values)})
            qrels[qid] = {doc_id}
    for i in range(len(docs)):
        docs.append({"_id": f"b{i:03d}", "title": "", "text": _page(rng, None)})
    rng.shuffle(docs)
    return docs, queries, qrels
