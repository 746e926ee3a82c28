"""What each reader takes from its format (SPEC §4), on files built here."""

from __future__ import annotations

import io
import random
import time
import zipfile
from pathlib import Path

import pytest
from parsing_samples import (
    CORPUS,
    budget,
    docx_bytes,
    odp_bytes,
    odp_with_embedded_objects,
    ods_bytes,
    odt_bytes,
    pdf_with_filled_form,
    pptx_bytes,
    strict_ooxml,
    xlsx_bytes,
)

from sluice.errors import DocumentRefused, EncryptedDocumentError, ParseError, UnsupportedTypeError
from sluice.parsing import ParsedDocument, extract, sniff
from sluice.parsing.options import ParserOptions


def read(data: bytes, name: str, **limits: int) -> ParsedDocument:
    return extract(data, sniff(data, name), budget(**limits))


# --- Office ---------------------------------------------------------------------------------------


def test_docx_paragraphs_and_table_cells_come_in_document_order() -> None:
    data = docx_bytes(["Before the table"], table=[["Name", "Score"], ["Ada", "10"]])
    import docx

    document = docx.Document(io.BytesIO(data))
    document.add_paragraph("After the table")
    buffer = io.BytesIO()
    document.save(buffer)
    text = read(buffer.getvalue(), "scores.docx").text
    assert text.splitlines() == ["Before the table", "Name\tScore", "Ada\t10", "After the table"]


def test_pptx_reads_titles_groups_tables_and_notes_with_slides_as_pages() -> None:
    document = read(pptx_bytes(), "deck.pptx")
    assert [page.number for page in document.pages] == [1, 2]
    first = document.text[document.pages[0].start : document.pages[0].end]
    second = document.text[document.pages[1].start : document.pages[1].end]
    assert first.splitlines() == ["Quarterly results", "Grouped caption", "Say the numbers slowly"]
    assert second.splitlines() == ["Table slide", "Region\tRevenue", "North\t42"]


def test_xlsx_names_every_sheet_and_separates_cells_with_tabs() -> None:
    data = xlsx_bytes({"Sales": [["Region", "Total"], ["North", 42.0], ["South", 7.5]], "Notes": [["checked"]]})
    assert read(data, "book.xlsx").text.splitlines() == [
        "# Sheet: Sales",
        "Region\tTotal",
        "North\t42",
        "South\t7.5",
        "",
        "# Sheet: Notes",
        "checked",
    ]


@pytest.mark.parametrize(("name", "make", "expected"), [
    ("book.xlsx", lambda: xlsx_bytes({"Keys": [["key", "days"], ["signing", 90]]}),
     ["# Sheet: Keys", "key\tdays", "signing\t90"]),
    ("memo.docx", lambda: docx_bytes(["Rotate the signing key"], table=[["key", "days"]]),
     ["Rotate the signing key", "key\tdays"]),
    ("deck.pptx", pptx_bytes, ["Quarterly results", "Grouped caption", "Say the numbers slowly", "", "Table slide",
                               "Region\tRevenue", "North\t42"]),
])
def test_iso_strict_office_files_read_like_their_transitional_twins(name, make, expected) -> None:
    # Office's "Strict Open XML" names every part's namespace differently; openpyxl read such a
    # workbook as having no cell at all (../shared/corpus/real/xlsx/testEXCEL.strict.xlsx).
    transitional = make()
    strict = strict_ooxml(transitional)
    assert strict != transitional and b"purl.oclc.org" not in transitional
    assert read(strict, name).text.splitlines() == read(transitional, name).text.splitlines() == expected


def test_odt_paragraphs() -> None:
    assert read(odt_bytes(["One line", "Two lines"]), "a.odt").text == "One line\nTwo lines"


def test_ods_sheets_and_rows_with_a_huge_repeated_empty_range_cost_nothing() -> None:
    data = ods_bytes([["a", "b"], ["c", "d"]], repeated_empty_columns=16_000, repeated_empty_rows=1_000_000)
    document = read(data, "a.ods")
    assert document.text.splitlines() == ["# Sheet: Data", "a\tb", "c\td"]


def test_odp_slides_are_pages() -> None:
    document = read(odp_bytes(["First slide", "Second slide"]), "a.odp")
    assert [p.number for p in document.pages] == [1, 2]
    assert document.text[document.pages[1].start : document.pages[1].end] == "Second slide"


def test_an_encrypted_odf_file_is_refused_as_encrypted() -> None:
    data = odt_bytes(["secret"])
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            content = source.read(item)
            if item.filename == "META-INF/manifest.xml":
                content = content.replace(
                    b'manifest:full-path="content.xml"',
                    b'manifest:full-path="content.xml"><manifest:encryption-data/></manifest:file-entry'
                    b'><manifest:file-entry manifest:media-type="text/xml" manifest:full-path="x"',
                )
            target.writestr(item, content)
    with pytest.raises(EncryptedDocumentError, match="password"):
        read(out.getvalue(), "secret.odt")


def test_doc_without_libreoffice_says_the_text_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    from parsing_samples import cfb_bytes

    from sluice.parsing import legacy_word

    data = cfb_bytes({"WordDocument": b"\xec\xa5" + b"\0" * 4094})

    monkeypatch.setattr(legacy_word, "soffice_path", lambda: None)
    with pytest.raises(ParseError) as caught:
        read(data, "letter.doc")
    assert "unavailable" in caught.value.message and "LibreOffice" in caught.value.message


def test_msg_headers_body_and_attachments_listed_not_read() -> None:
    path = CORPUS / "msg" / "testMSG_att_doc.msg"
    if not path.exists():
        pytest.skip(f"needs a real message with attachments from the shared corpus ({path}), absent on a bare clone")
    document = read(path.read_bytes(), "mail.msg")
    lines = document.text.splitlines()
    assert lines[0].startswith("From: ") and any(line.startswith("Subject: ") for line in lines[:5])
    assert "Attachments (listed, not read):" in document.text
    listed = [line for line in document.text.split("Attachments (listed, not read):")[1].splitlines() if line]
    assert any(name.endswith(".doc") for name in listed)
    assert document.notes == [f"{len(listed)} attachments listed, not read"]


# --- text --------------------------------------------------------------------------------------------


def test_utf8_with_a_bom_and_utf16_with_a_bom_are_decoded() -> None:
    assert read("\ufeffcafé".encode(), "a.txt").text == "café"
    assert read("naïve\nline".encode("utf-16"), "a.txt").text == "naïve\nline"
    assert read("naïve".encode("utf-16-be").join([b"\xfe\xff", b""]), "a.md").text == "naïve"


def test_a_legacy_single_byte_text_is_recognised() -> None:
    text = "Les élèves étudient l'économie à l'école. " * 20
    assert read(text.encode("cp1252"), "a.txt").text == text


def test_text_in_no_recognisable_encoding_is_refused_with_a_sentence() -> None:
    rng = random.Random(7)
    data = bytes(rng.choice(range(0x80, 0x100)) for _ in range(4000))
    with pytest.raises(ParseError) as caught:
        read(data, "noise.txt")
    assert "not UTF-8 text" in caught.value.message


def test_json_must_be_valid_but_may_be_a_sequence_of_values() -> None:
    assert read(b'{"a": 1}\n{"a": 2}\n', "lines.json").text == '{"a": 1}\n{"a": 2}\n'
    with pytest.raises(ParseError, match="not valid JSON"):
        read(b'{"a": 1,}', "bad.json")
    with pytest.raises(ParseError, match="nests its values too deeply"):
        read(b"[" * 100_000, "deep.json")
    with pytest.raises(ParseError, match="not valid UTF-8"):
        read(b'{"a": "\xff"}', "bytes.json")


def test_html_keeps_readable_text_and_drops_script_and_style() -> None:
    page = b"""<html><head><title>Page title</title><style>p{color:red}</style>
    <script>var secret = 1;</script></head><body><h1>Heading</h1><p>One &amp; two</p>
    <table><tr><td>a</td><td>b</td></tr></table><script>alert(1)</script></body></html>"""
    assert read(page, "a.html").text.splitlines() == ["Page title", "Heading", "One & two", "a\tb"]


def test_html_loose_end_tags_and_an_unclosed_tail_read_as_a_browser_would() -> None:
    page = b"<p>before</p><script>hidden()</script  >\n<p>shown</p><style>p{}</STYLE\n><p>also</p>a < b <c"
    assert read(page, "a.html").text.splitlines() == ["before", "shown", "also", "a < b <c"]


@pytest.mark.parametrize("fragment", ["</script", "</", "<!--", "<a b='"])
def test_html_made_of_unclosed_fragments_is_read_in_linear_time(fragment: str) -> None:
    # Probed: about 1 MB of "</script" fragments held a parse worker until its timeout (the regex
    # that loosened end tags rescanned the rest of the page from every fragment, and html.parser
    # does the same for every unclosed opening at the end of its input). Linear, it takes well
    # under a second here; quadratic, a minute and more. The bound is generous for a loaded machine.
    page = (fragment * (1_000_000 // len(fragment))).encode()
    started = time.perf_counter()
    read(page, "bomb.html")
    assert time.perf_counter() - started < 15


def test_html_declared_charset_is_honoured() -> None:
    page = '<meta charset="windows-1251"><p>Привет</p>'.encode("cp1251")
    assert read(page, "a.html").text == "Привет"


def test_xml_text_by_declared_encoding() -> None:
    data = '<?xml version="1.0" encoding="ISO-8859-1"?><doc><t>Grüße</t><t>zwei</t></doc>'.encode("latin-1")
    assert read(data, "a.xml").text == "Grüße\nzwei"


@pytest.mark.parametrize(
    "doctype",
    [
        '<!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>',
        '<!DOCTYPE d [<!ENTITY e SYSTEM "file:///etc/passwd">]>',
        '<!DOCTYPE d [<!ENTITY % p SYSTEM "http://example.invalid/x.dtd"> %p;]>',
    ],
)
def test_xml_entity_declarations_are_refused(doctype: str) -> None:
    data = f'<?xml version="1.0"?>{doctype}<d>&b;</d>'.encode()
    with pytest.raises(ParseError, match="declares entities"):
        read(data, "bomb.xml")


def test_unparsed_ndata_entities_expand_nothing_and_are_read() -> None:
    # An NDATA entity names a file (an image) for an application; no parser substitutes it into text.
    data = (
        b'<?xml version="1.0"?><!DOCTYPE manual [<!NOTATION png SYSTEM "image/png">'
        b'<!ENTITY logo SYSTEM "logo.png" NDATA png><!ATTLIST figure src ENTITY #IMPLIED>]>'
        b'<manual><figure src="logo"/><p>Lift the lid before descaling.</p></manual>'
    )
    assert read(data, "manual.xml").text == "Lift the lid before descaling."


def test_a_parsed_entity_beside_an_ndata_one_is_still_refused() -> None:
    data = (
        b'<?xml version="1.0"?><!DOCTYPE d [<!NOTATION png SYSTEM "image/png">'
        b'<!ENTITY logo SYSTEM "logo.png" NDATA png><!ENTITY a "aaaa">]><d>&a;</d>'
    )
    with pytest.raises(ParseError, match="declares entities"):
        read(data, "mixed.xml")


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_text_without_a_byte_order_mark_is_read(encoding: str) -> None:
    text = "Der Wärmetauscher wird jährlich geprüft.\nΗ αντλία ελέγχεται κάθε μήνα.\n" * 20
    assert read(text.encode(encoding), "export.txt").text == text


def test_binary_data_with_scattered_nuls_is_still_binary() -> None:
    noise = random.Random(7).randbytes(4096)
    with pytest.raises(UnsupportedTypeError, match="binary data"):
        sniff(noise, "data.txt")


def test_an_external_dtd_is_never_loaded(tmp_path: Path) -> None:
    dtd = tmp_path / "secret.dtd"
    dtd.write_text('<!ENTITY leak "SECRET-FROM-DISK">')
    data = f'<?xml version="1.0"?><!DOCTYPE d SYSTEM "{dtd.as_uri()}"><d>visible</d>'.encode()
    document = read(data, "a.xml")
    assert document.text == "visible"
    assert "SECRET" not in document.text


def test_table_rows_and_cells_inside_content_controls_are_read() -> None:
    from parsing_samples import docx_with_content_controls

    data = docx_with_content_controls([["Title", "Annual safety report"], ["Author", "Ines Carvalho"]])
    assert read(data, "cover.docx").text == "Title\tAnnual safety report\nAuthor\tInes Carvalho"


def test_a_word_package_missing_an_optional_part_it_names_is_read() -> None:
    from parsing_samples import without_zip_member

    data = without_zip_member(docx_bytes(["Torque the bolts to 40 Nm."]), "word/webSettings.xml")
    assert read(data, "bolts.docx").text == "Torque the bolts to 40 Nm."


def test_a_word_package_missing_its_main_part_is_still_damaged() -> None:
    from parsing_samples import without_zip_member

    data = without_zip_member(docx_bytes(["gone"]), "word/document.xml")
    with pytest.raises(DocumentRefused):
        read(data, "gone.docx")


def test_a_chart_keeps_its_title_series_and_categories() -> None:
    from parsing_samples import pptx_with_chart

    assert read(pptx_with_chart(), "inspections.pptx").text == (
        "Inspections by city, 2026\nSeries: Boiler inspections, Chimney sweeps\nCategories: Lisbon, Porto, Faro"
    )


# --- PDF forms ------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", [False, True], ids=["pymupdf", "layout"])
def test_a_filled_forms_values_are_read_even_where_no_appearance_shows_them(layout: bool) -> None:
    data = pdf_with_filled_form()
    parser = ParserOptions(name="layout" if layout else "pymupdf")
    text = extract(data, sniff(data, "form.pdf"), budget(), parser=parser).text
    assert "Ada Lovelace" in text
    assert "Marylebone" in text
    assert "Received by the registry" in text  # the form XObject's text


def test_odp_text_inside_embedded_objects_is_read_on_its_slide() -> None:
    document = read(odp_with_embedded_objects(), "deck.odp")
    assert [page.number for page in document.pages] == [1]
    assert document.text.splitlines() == [
        "Revenue by region",
        "\tRevenue",
        "North\t42",
        "South\t17",
        "Footnote kept in an embedded text frame",
    ]


@pytest.mark.parametrize(
    ("make", "kind", "words"),
    [
        (lambda: docx_bytes(["Quarterly letter"]), "docx", "Quarterly letter"),
        (lambda: xlsx_bytes({"Sales": [["North", 42.0]]}), "xlsx", "North"),
        (pptx_bytes, "pptx", "Quarterly results"),
        (lambda: odt_bytes(["Minutes of the meeting"]), "odt", "Minutes of the meeting"),
    ],
    ids=["docx", "xlsx", "pptx", "odt"],
)
def test_an_office_file_renamed_zip_is_read_as_the_document_not_unpacked(make, kind: str, words: str) -> None:
    data = make()
    found = sniff(data, "bundle.zip")
    assert found.kind == kind and found.note is not None
    document = extract(data, found, budget())
    assert words in document.text
    assert document.members is None
