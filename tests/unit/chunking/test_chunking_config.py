"""Chunking settings: defaults from the embedder window, the 422 and 400 refusals and the fields they name."""

from __future__ import annotations

import pytest

from sluice.chunking import (
    CHARS_PER_TOKEN,
    ChunkingPlan,
    IngestionConfig,
    max_chunk_chars,
    merge_override,
    resolve_plan,
    validate_collection_config,
)
from sluice.errors import UnprocessableError, ValidationError

MINILM = 256  # all-MiniLM-L6-v2 reads 256 word pieces
LARGE = 8191  # an OpenAI-sized window: the 2,500 default fits

SIZE = "ingestion_config.chunk_size"
OVERLAP = "ingestion_config.chunk_overlap"
PAIR = {"ingestion_config", SIZE, OVERLAP}


def refusal(call, *args, **kwargs) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        call(*args, **kwargs)
    return caught.value


def assert_sentences(error: ValidationError) -> None:
    # The form shows these as they are: never Pydantic's own wording.
    for sentence in error.details["fields"].values():
        assert sentence[0].isupper() and sentence.endswith(".")
        assert "Input should" not in sentence and "pydantic" not in sentence.lower()


# --- the embedder window -------------------------------------------------------------


def test_max_chunk_chars_leaves_room_for_the_special_tokens():
    assert max_chunk_chars(MINILM) == int(254 * CHARS_PER_TOKEN) == 635
    with pytest.raises(ValueError):
        max_chunk_chars(2)


def test_default_size_is_2500_when_the_embedder_reads_it_whole():
    assert resolve_plan(IngestionConfig(), max_input_tokens=LARGE) == ChunkingPlan("recursive", 2500, 200)


def test_default_size_is_derived_from_a_small_window_and_overlap_scales_down():
    # GIVEN all-MiniLM-L6-v2, where 2,500 characters would be cut roughly in half
    plan = resolve_plan(IngestionConfig(), max_input_tokens=MINILM)
    # THEN the size is what it reads whole and the overlap is 200 * 635 / 2500, rounded
    assert plan.chunk_size == 635
    assert plan.chunk_overlap == 51


def test_overlap_is_scaled_down_but_never_up():
    assert resolve_plan(IngestionConfig(chunk_size=1000), max_input_tokens=LARGE).chunk_overlap == 80
    assert resolve_plan(IngestionConfig(chunk_size=6000), max_input_tokens=LARGE).chunk_overlap == 200


def test_an_explicit_size_the_embedder_cannot_read_whole_is_refused_with_422():
    error = refusal(validate_collection_config, {"chunk_size": 2500}, max_input_tokens=MINILM)
    assert isinstance(error, UnprocessableError) and error.status == 422
    assert set(error.details["fields"]) == {SIZE}
    assert "635" in error.details["fields"][SIZE]
    assert_sentences(error)


def test_resolve_plan_refuses_a_stored_size_that_does_not_fit():
    error = refusal(resolve_plan, IngestionConfig(chunk_size=2500), max_input_tokens=MINILM)
    assert error.status == 422 and set(error.details["fields"]) == {SIZE}


def test_a_size_exactly_at_the_window_is_accepted():
    config = validate_collection_config({"chunk_size": 635}, max_input_tokens=MINILM)
    assert resolve_plan(config, max_input_tokens=MINILM).chunk_size == 635


# --- a collection's own config: 422 ------------------------------------------------


def test_an_empty_or_missing_config_takes_the_defaults():
    assert validate_collection_config({}, max_input_tokens=LARGE) == IngestionConfig()
    assert validate_collection_config(None, max_input_tokens=LARGE) == IngestionConfig()


def test_the_stored_config_keeps_derived_values_unset():
    config = validate_collection_config({"chunking_strategy": "markdown"}, max_input_tokens=MINILM)
    assert config.chunk_size is None and config.chunk_overlap is None


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"chunk_size": 99}, SIZE),
        ({"chunk_size": "big"}, SIZE),
        ({"chunk_size": 500.5}, SIZE),
        ({"chunk_size": True}, SIZE),
        ({"chunk_overlap": -1}, OVERLAP),
        ({"chunk_overlap": [1]}, OVERLAP),
        ({"chunking_strategy": "semantic"}, "ingestion_config.chunking_strategy"),
        ({"chunk_sise": 500}, "ingestion_config.chunk_sise"),
    ],
)
def test_a_bad_setting_is_a_422_naming_that_setting(raw, field):
    error = refusal(validate_collection_config, raw, max_input_tokens=LARGE)
    assert error.status == 422
    assert set(error.details["fields"]) == {field}
    assert_sentences(error)


def test_every_bad_setting_is_named_at_once():
    error = refusal(
        validate_collection_config,
        {"chunk_size": 10, "chunk_overlap": -5, "chunking_strategy": "x"},
        max_input_tokens=LARGE,
    )
    assert set(error.details["fields"]) == {SIZE, OVERLAP, "ingestion_config.chunking_strategy"}


def test_the_pair_rule_names_the_object_and_both_fields_with_422():
    error = refusal(validate_collection_config, {"chunk_size": 500, "chunk_overlap": 500}, max_input_tokens=LARGE)
    assert error.status == 422
    assert set(error.details["fields"]) == PAIR
    assert_sentences(error)


def test_an_explicit_overlap_is_checked_against_the_derived_size():
    # 700 is legal alone, but the MiniLM-derived size is 635
    error = refusal(validate_collection_config, {"chunk_overlap": 700}, max_input_tokens=MINILM)
    assert error.status == 422 and set(error.details["fields"]) == PAIR


def test_a_config_that_is_not_an_object_is_refused():
    error = refusal(validate_collection_config, ["chunk_size", 500], max_input_tokens=LARGE)
    assert error.status == 422 and set(error.details["fields"]) == {"ingestion_config"}


def test_numeric_strings_from_a_form_are_read_as_numbers():
    config = validate_collection_config({"chunk_size": "1200", "chunk_overlap": "100"}, max_input_tokens=LARGE)
    assert (config.chunk_size, config.chunk_overlap) == (1200, 100)


def test_the_error_body_carries_the_fields():
    error = refusal(validate_collection_config, {"chunk_size": 99}, max_input_tokens=LARGE)
    body = error.body()["error"]
    assert body["code"] == "VALIDATION_ERROR" and SIZE in body["details"]["fields"]


# --- a per-upload override: validated merged, 400 --------------------------------------


def test_no_override_gives_the_collection_plan():
    config = IngestionConfig(chunking_strategy="fixed", chunk_size=1000, chunk_overlap=50)
    assert merge_override(config, None, max_input_tokens=LARGE) == ChunkingPlan("fixed", 1000, 50)
    assert merge_override(config, {}, max_input_tokens=LARGE) == ChunkingPlan("fixed", 1000, 50)


def test_an_override_changes_only_what_it_carries():
    config = IngestionConfig(chunking_strategy="fixed", chunk_size=1000, chunk_overlap=50)
    plan = merge_override(config, {"chunking_strategy": "markdown"}, max_input_tokens=LARGE)
    assert plan == ChunkingPlan("markdown", 1000, 50)


def test_a_null_in_an_override_changes_nothing():
    config = IngestionConfig(chunk_size=1000, chunk_overlap=50)
    plan = merge_override(config, {"chunk_size": None, "chunk_overlap": 60}, max_input_tokens=LARGE)
    assert plan == ChunkingPlan("recursive", 1000, 60)


def test_a_derived_overlap_follows_an_overridden_size():
    plan = merge_override(IngestionConfig(), {"chunk_size": 500}, max_input_tokens=LARGE)
    assert plan == ChunkingPlan("recursive", 500, 40)


def test_an_overlap_legal_alone_but_not_with_the_collections_size_is_a_400_naming_both():
    # GIVEN a collection chunking at 2500 WHEN an upload asks for overlap 4096
    config = IngestionConfig(chunk_size=2500)
    error = refusal(merge_override, config, {"chunk_overlap": 4096}, max_input_tokens=LARGE)
    # THEN 400, not 422, naming both settings (and the object, as the 422 does)
    assert type(error) is ValidationError and error.status == 400
    assert set(error.details["fields"]) == PAIR
    assert_sentences(error)


def test_a_size_below_the_collections_overlap_is_a_400_naming_both():
    config = IngestionConfig(chunk_size=2500, chunk_overlap=300)
    error = refusal(merge_override, config, {"chunk_size": 250}, max_input_tokens=LARGE)
    assert error.status == 400 and set(error.details["fields"]) == PAIR


def test_an_unknown_override_field_is_a_400_naming_it():
    error = refusal(merge_override, IngestionConfig(), {"chunk_overlapp": 10}, max_input_tokens=LARGE)
    assert error.status == 400
    assert set(error.details["fields"]) == {"ingestion_config.chunk_overlapp"}
    assert_sentences(error)


def test_an_override_size_the_embedder_cannot_read_is_a_400():
    error = refusal(merge_override, IngestionConfig(), {"chunk_size": 2500}, max_input_tokens=MINILM)
    assert type(error) is ValidationError and error.status == 400
    assert set(error.details["fields"]) == {SIZE}


def test_an_override_that_is_not_an_object_is_a_400():
    error = refusal(merge_override, IngestionConfig(), "chunk_size=500", max_input_tokens=LARGE)
    assert error.status == 400 and set(error.details["fields"]) == {"ingestion_config"}


def test_a_plan_that_breaks_the_splitters_rules_cannot_be_built():
    with pytest.raises(ValueError):
        ChunkingPlan("recursive", 100, 100)
    with pytest.raises(ValueError):
        ChunkingPlan("semantic", 100, 10)


def test_an_overlap_over_half_the_size_is_refused_both_ways():
    # Probed: 100 / 99 turned a 129 KB text into 19,974 chunks, each embedded on the base's key.
    error = refusal(merge_override, IngestionConfig(), {"chunk_size": 100, "chunk_overlap": 99},
                    max_input_tokens=LARGE)
    assert error.status == 400 and set(error.details["fields"]) == PAIR
    assert "at most half the chunk size (100)" in error.details["fields"][OVERLAP]
    error = refusal(validate_collection_config, {"chunk_size": 1000, "chunk_overlap": 501}, max_input_tokens=LARGE)
    assert error.status == 422 and set(error.details["fields"]) == PAIR
    # exactly half is the most allowed
    assert merge_override(IngestionConfig(), {"chunk_size": 100, "chunk_overlap": 50},
                          max_input_tokens=LARGE) == ChunkingPlan("recursive", 100, 50)
