"""bench/debian_corpus.py: the manual pages and the Debian FAQ read into questions and passages (issue 40).
The roff and the FAQ text are literal here, so the test holds on a machine without the packages."""

from __future__ import annotations

import gzip

from bench import debian_corpus
from bench.debian_corpus import man_sections

PAGE = r""".\" -*- coding: UTF-8 -*-
.TH LS 1 "September 2022" "GNU coreutils 9.1" "Dienstprogramme für Benutzer"
.SH BEZEICHNUNG
ls \- Verzeichnisinhalte auflisten
.SH ÜBERSICHT
\fBls\fP [\fI\,OPTION\/\fP]… [\fI\,DATEI\/\fP]…
.SH BESCHREIBUNG
.\" Add any additional description here
.PP
Auflistung von Informationen über die DATEIen (Standardvorgabe ist das
aktuelle Verzeichnis). Die Einträge werden alphabetisch sortiert, falls
weder \fB\-cftuvSUX\fP noch \fB\-\-sort\fP angegeben wurden.
.TP
.BR \-a ", " \-\-all
Einträge nicht ignorieren, die mit \(Fo.\(Fc beginnen
"""


def test_a_manual_page_reads_as_its_sections_text_without_markup():
    sections = man_sections(PAGE)
    assert [t for t, _ in sections] == ["BEZEICHNUNG", "ÜBERSICHT", "BESCHREIBUNG"]
    assert sections[0][1] == "ls - Verzeichnisinhalte auflisten"
    body = sections[2][1]
    assert body.startswith("Auflistung von Informationen über die DATEIen (Standardvorgabe ist das aktuelle")
    assert "weder -cftuvSUX noch --sort angegeben" in body
    assert "-a, --all Einträge nicht ignorieren, die mit «.» beginnen" in body
    assert "\\" not in body and "Add any additional" not in body


def test_the_summary_asks_for_the_body_it_is_not_part_of(tmp_path, monkeypatch):
    (tmp_path / "man1").mkdir()
    words = " ".join(f"wort{i}" for i in range(300))
    (tmp_path / "man1" / "ls.1.gz").write_bytes(gzip.compress((PAGE + words + "\n").encode()))
    (tmp_path / "man1" / "dir.1.gz").write_bytes(gzip.compress(b".so man1/ls.1\n"))  # an alias: not a page
    monkeypatch.setitem(debian_corpus.MAN, "german", str(tmp_path))
    monkeypatch.setitem(debian_corpus.FAQ, "german", str(tmp_path / "absent.txt.gz"))
    monkeypatch.setattr(debian_corpus, "faq", lambda language: [])
    docs, queries, qrels = debian_corpus.corpus("german")
    assert [q["text"] for q in queries] == ["Verzeichnisinhalte auflisten"]
    assert [d["_id"] for d in docs] == ["man1/ls.1"]
    assert qrels == {"q:man1/ls.1": {"man1/ls.1"}}
    assert "Verzeichnisinhalte" not in docs[0]["text"] and "OPTION" not in docs[0]["text"]
    assert len(docs[0]["text"].split()) == debian_corpus.WORDS


FAQ_TEXT = """Inhaltsverzeichnis

    1.1. Was ist diese FAQ?
    1.2. Wie kann ich ein Paket
    installieren?

1. Definitionen und Überblick

1.1.\u00a0Was ist diese FAQ?

\u00a0 \u00a0 Dieses Dokument gibt Antworten auf oft gestellte Fragen über die
    Debian-Distribution und das Debian-Projekt, so einfach wie möglich.

1.2.\u00a0Wie kann ich ein Paket
installieren?

    Mit apt install und dem Namen des Pakets, als Administrator: apt lädt das
    Paket und alles, wovon es abhängt, aus dem Archiv und richtet es ein.

2. Debian besorgen und installieren

    Ein Kapiteltext, der zu keiner Antwort gehört.
"""


def test_each_faq_question_asks_for_the_text_under_it(tmp_path, monkeypatch):
    path = tmp_path / "faq.de.txt.gz"
    path.write_bytes(gzip.compress(FAQ_TEXT.encode()))
    monkeypatch.setitem(debian_corpus.FAQ, "german", str(path))
    got = debian_corpus.faq("german")
    assert [(qid, q) for qid, q, _ in got] == [("faq1.1", "Was ist diese FAQ?"),
                                               ("faq1.2", "Wie kann ich ein Paket installieren?")]
    assert got[1][2].startswith("Mit apt install und dem Namen des Pakets")
    assert "Kapiteltext" not in got[1][2]
