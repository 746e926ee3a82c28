"""Settings per function (issue 31): each variable has one home section, a function's model is its
sections, what it requires comes from them, and it is read and checked at cold start."""

from __future__ import annotations

import inspect

import pytest
from pydantic import ValidationError

from sluice import config
from sluice.config import sections
from sluice.config.functions import DocumentsFunction, KbFunction, SyncTaskFunction, UploadsFunction


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch: pytest.MonkeyPatch):
    for name in ("DATABASE_URL", "DATABASE_SECRET_ID", "INGEST_QUEUE_URL", "PRIVATE_DOC_CAP", "SLUICE_KMS_KEY_ID"):
        monkeypatch.delenv(name, raising=False)
    config.reset_settings()
    yield
    config.reset_settings()


def _sections() -> list[type[sections.Section]]:
    return [c for _, c in inspect.getmembers(sections, inspect.isclass)
            if issubclass(c, sections.Section) and c is not sections.Section]


def test_each_variable_has_one_home():
    homes: dict[str, list[str]] = {}
    for cls in _sections():
        for name in vars(cls).get("__annotations__", {}):
            if name != "REQUIRES":
                homes.setdefault(cls.model_fields[name].alias or name, []).append(cls.__name__)
    # At least the 84 of the one Settings object before, the reranker's 6 and 8 file locations; each new
    # setting adds one (a count that every branch adding a setting would fight over says nothing more).
    assert len(homes) >= 98
    assert {alias: where for alias, where in homes.items() if len(where) > 1} == {}
    assert homes["PRIVATE_DOC_CAP"] == ["PoolSettings"] and homes["RERANKER_URL"] == ["RerankerSettings"]


def test_the_whole_settings_hold_every_section_but_the_file_locations():
    everything = {f.alias for f in config.Settings.model_fields.values()}
    every_section = {f.alias for cls in _sections() for f in cls.model_fields.values()}
    assert every_section - everything == {f.alias for f in config.AssetSettings.model_fields.values()}


def test_what_a_function_requires_comes_from_its_sections():
    assert config.required_variables(KbFunction) == (config.DATABASE,)
    assert config.required_variables(DocumentsFunction) == (config.DATABASE, "INGEST_QUEUE_URL", "SLUICE_BUCKET")
    assert config.required_variables(UploadsFunction) == (config.DATABASE, "SLUICE_KMS_KEY_ID", "SLUICE_BUCKET")


def test_a_function_refuses_to_start_without_a_variable_it_requires(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql:///sluice")
    with pytest.raises(config.MissingSettingError) as refused:
        config.check(DocumentsFunction)
    assert str(refused.value) == "This function needs INGEST_QUEUE_URL set; see template.yaml."
    monkeypatch.setenv("INGEST_QUEUE_URL", "https://sqs.eu-west-1.amazonaws.com/1/ingest")
    config.reset_settings()
    config.check(DocumentsFunction)


def test_without_a_database_the_message_names_both_ways_to_give_one():
    with pytest.raises(config.MissingSettingError, match="needs DATABASE_URL or DATABASE_SECRET_ID set"):
        config.check(KbFunction)


def test_a_malformed_value_fails_at_cold_start_by_name(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql:///sluice")
    monkeypatch.setenv("SLUICE_KMS_KEY_ID", "alias/sluice")
    monkeypatch.setenv("PRIVATE_DOC_CAP", "twenty")
    with pytest.raises(ValidationError, match="PRIVATE_DOC_CAP"):
        config.check(UploadsFunction)


def test_a_function_that_does_not_admit_uploads_ignores_their_variables(monkeypatch: pytest.MonkeyPatch):
    # A malformed pool cap is no concern of the bases API, which has no PoolSettings.
    monkeypatch.setenv("DATABASE_URL", "postgresql:///sluice")
    monkeypatch.setenv("PRIVATE_DOC_CAP", "twenty")
    config.check(KbFunction)
    assert not hasattr(config.current(KbFunction), "private_doc_cap")


def test_settings_are_read_once_until_reset(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PRIVATE_DOC_CAP", "7")
    first = config.current(config.PoolSettings)
    monkeypatch.setenv("PRIVATE_DOC_CAP", "8")
    assert config.current(config.PoolSettings) is first and first.private_doc_cap == 7
    config.reset_settings()
    assert config.current(config.PoolSettings).private_doc_cap == 8
    assert config.read(config.PoolSettings).private_doc_cap == 8


def test_a_context_is_handed_only_its_sections(monkeypatch: pytest.MonkeyPatch):
    from sluice import wiring

    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    wiring.reset()
    stage = wiring.stage_context().settings
    assert isinstance(stage, config.StageSettings) and not isinstance(stage, config.Settings)
    assert stage.max_chunks_per_document == 10_000
    assert not hasattr(stage, "sync_batch_files") and not hasattr(stage, "chat_queue_url")
    teardown = wiring.teardown_context().settings
    assert teardown.teardown_step_budget_seconds == 60 and not hasattr(teardown, "private_doc_cap")
    wiring.reset()


def test_a_sync_task_has_the_sections_of_the_contexts_it_builds():
    assert issubclass(SyncTaskFunction, config.SyncContextSettings)
    assert issubclass(SyncTaskFunction, config.EncryptionSettings)
    assert not issubclass(SyncTaskFunction, config.ChatSettings)
