"""The embedding catalog file and the lookups that validate a collection's choice (R-EMB-1, R-EMB-2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluice.embedding import CatalogModel, catalog, find_model, load_catalog
from sluice.errors import ValidationError

REPO_CATALOG = Path(__file__).resolve().parents[3] / "infra" / "catalog" / "embedding_models.json"


def test_the_repository_catalog_lists_every_provider_with_a_usable_width():
    # GIVEN the canonical catalog WHEN it is loaded
    models = load_catalog(REPO_CATALOG)

    # THEN every provider is served and every default width is one the model allows
    assert {m.provider for m in models} == {"local", "openai", "bedrock"}
    for m in models:
        assert m.dim in m.allowed_dims
        assert m.max_input_tokens > 0
    raw = json.loads(REPO_CATALOG.read_text())
    assert all(
        {"provider", "model", "dim", "allowed_dims", "max_input_tokens", "description"} <= set(e) for e in raw
    )


def test_the_default_catalog_is_the_repository_file(monkeypatch):
    monkeypatch.delenv("SLUICE_CATALOG_PATH", raising=False)
    assert catalog.catalog_path() == REPO_CATALOG
    local = find_model("local", "all-MiniLM-L6-v2")
    assert (local.dim, local.max_input_tokens) == (384, 256)


def test_titan_serves_three_widths_and_answers_at_the_one_asked_for():
    titan = find_model("bedrock", "amazon.titan-embed-text-v2:0")
    assert titan.dim == 1024
    assert titan.allowed_dims == (256, 512, 1024)
    assert find_model("bedrock", "amazon.titan-embed-text-v2:0", 512).dim == 512


def test_only_models_with_several_widths_are_told_the_width():
    assert find_model("openai", "text-embedding-3-small").accepts_dimensions
    assert not find_model("openai", "nomic-embed-text").accepts_dimensions


@pytest.mark.parametrize(
    ("provider", "model", "dim", "field"),
    [
        ("cohere", "embed-english-v3.0", None, "embedding_provider"),
        ("openai", "all-MiniLM-L6-v2", None, "embedding_model"),
        ("local", "text-embedding-3-small", None, "embedding_model"),
        ("bedrock", "amazon.titan-embed-text-v2:0", 768, "embedding_dim"),
        ("local", "all-MiniLM-L6-v2", 1536, "embedding_dim"),
    ],
)
def test_a_choice_the_catalog_does_not_serve_is_refused_naming_the_field(provider, model, dim, field):
    with pytest.raises(ValidationError) as refused:
        find_model(provider, model, dim)
    assert refused.value.status == 400
    assert list(refused.value.details["fields"]) == [field]


def test_the_environment_names_another_catalog(tmp_path, monkeypatch):
    path = tmp_path / "models.json"
    path.write_text(json.dumps([{"provider": "openai", "model": "m", "dim": 8, "max_input_tokens": 10}]))
    monkeypatch.setenv("SLUICE_CATALOG_PATH", str(path))

    assert find_model("openai", "m") == CatalogModel("openai", "m", 8, 10, (8,))


def test_packaged_catalog_is_found_when_no_repository_sits_beside_the_package(tmp_path, monkeypatch):
    # GIVEN a Lambda layer: no infra/ next to the package, the file shipped as package data
    packaged = tmp_path / "embedding_models.json"
    packaged.write_text(REPO_CATALOG.read_text())
    monkeypatch.delenv("SLUICE_CATALOG_PATH", raising=False)
    monkeypatch.setattr(catalog, "_REPO_CATALOG", tmp_path / "absent.json")
    monkeypatch.setattr(catalog, "_PACKAGED_CATALOG", packaged)

    assert catalog.catalog_path() == packaged
    monkeypatch.setattr(catalog, "_PACKAGED_CATALOG", tmp_path / "also-absent.json")
    with pytest.raises(FileNotFoundError, match="SLUICE_CATALOG_PATH"):
        catalog.catalog_path()


@pytest.mark.parametrize(
    "entries",
    [
        {"provider": "local"},
        [{"provider": "local", "model": "m"}],
        [{"provider": "azure", "model": "m", "dim": 8, "max_input_tokens": 10}],
        [{"provider": "openai", "model": "m", "dim": 8, "allowed_dims": [4], "max_input_tokens": 10}],
        [{"provider": "openai", "model": "m", "dim": 8, "max_input_tokens": 10}] * 2,
    ],
)
def test_a_malformed_catalog_fails_loudly(tmp_path, entries):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(entries))
    with pytest.raises(ValueError):
        load_catalog(path)
