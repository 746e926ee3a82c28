"""``ingestion_config.parser`` (R-PARSE-7) validated as the chunking settings are (R-CHUNK-2): a
collection's config refused with 422, an upload's override (merged) with 400, each naming
``ingestion_config.parser.<field>``."""

from __future__ import annotations

import pytest

from sluice.chunking import merge_override, parser_options, validate_collection_config
from sluice.errors import UnprocessableError, ValidationError
from sluice.parsing.options import ParserOptions
from tests.ocr_samples import needs_tesseract

WINDOW = 256


def refused(raw: dict, error: type[ValidationError] = UnprocessableError) -> dict[str, str]:
    with pytest.raises(error) as caught:
        validate_collection_config(raw, max_input_tokens=WINDOW)
    assert type(caught.value) is error
    return caught.value.details["fields"]


def test_an_unknown_ocr_language_is_refused_naming_the_field() -> None:
    fields = refused({"parser": {"ocr": "auto", "ocr_languages": "eng+qqq"}})
    assert list(fields) == ["ingestion_config.parser.ocr_languages"]
    assert fields["ingestion_config.parser.ocr_languages"].startswith("No OCR language data is installed for qqq")


@pytest.mark.parametrize(("parser", "field", "sentence"), [
    ({"ocr": "sometimes"}, "ocr", "OCR must be one of 'off', 'auto' or 'force'."),
    ({"name": "llamaparse"}, "name", "Parser must be one of 'pymupdf' or 'layout'."),
    ({"max_pages": 0}, "max_pages", "Maximum pages must be between 1 and 10,000."),
    ({"max_pages": True}, "max_pages", "Maximum pages must be a whole number."),
    ({"ocr_languages": "English"}, "ocr_languages",
     "OCR languages must be Tesseract language codes joined by +, such as eng or eng+spa."),
    ({"dpi": 600}, "dpi",
     "Unknown parser setting 'dpi'; the parser settings are name, ocr, ocr_languages, output, max_pages."),
])  # fmt: skip
def test_each_bad_parser_setting_is_refused_with_its_own_sentence(parser: dict, field: str, sentence: str) -> None:
    assert refused({"parser": parser}) == {f"ingestion_config.parser.{field}": sentence}


def test_a_parser_that_is_not_an_object_is_refused() -> None:
    assert refused({"parser": "layout"}) == {"ingestion_config.parser": "The parser settings must be a JSON object."}


@needs_tesseract
def test_an_installed_language_and_layout_are_accepted_and_stored_as_sent() -> None:
    config = validate_collection_config({"parser": {"name": "layout", "ocr": "auto", "ocr_languages": "eng"}},
                                        max_input_tokens=WINDOW)
    assert config.model_dump(exclude_none=True)["parser"] == {"name": "layout", "ocr": "auto", "ocr_languages": "eng"}


def test_an_override_changes_only_the_parser_fields_it_names() -> None:
    config = validate_collection_config({"parser": {"ocr": "auto", "max_pages": 5}}, max_input_tokens=WINDOW)
    assert parser_options(config, {"parser": {"ocr": "force"}}) == ParserOptions(ocr="force", max_pages=5)
    assert parser_options(config, None) == ParserOptions(ocr="auto", max_pages=5)


def test_a_bad_override_is_a_400_naming_the_field_checked_merged() -> None:
    config = validate_collection_config({"parser": {"ocr": "auto"}}, max_input_tokens=WINDOW)
    with pytest.raises(ValidationError) as caught:
        merge_override(config, {"parser": {"max_pages": 20_000}}, max_input_tokens=WINDOW)
    assert caught.value.status == 400
    assert caught.value.details["fields"] == {
        "ingestion_config.parser.max_pages": "Maximum pages must be between 1 and 10,000."
    }


def test_no_parser_reads_as_pymupdf_with_ocr_off() -> None:
    config = validate_collection_config({}, max_input_tokens=WINDOW)
    assert parser_options(config, None) == ParserOptions()
    assert ParserOptions().ocr_on is False
