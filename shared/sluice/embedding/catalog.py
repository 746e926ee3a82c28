"""The embedding catalog: which models each provider serves, at which widths (R-EMB-2).

The canonical file is ``infra/catalog/embedding_models.json``. It is found, in
order, at ``$SLUICE_CATALOG_PATH``, in the repository checkout this package
sits in, and as package data next to this module (where a build copies it for
a Lambda layer, which has no ``infra/`` beside it).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from sluice.config import AssetSettings, read
from sluice.errors import ValidationError

CATALOG_ENV = AssetSettings.model_fields["catalog_path"].alias
CATALOG_FILENAME = "embedding_models.json"
PROVIDERS = ("local", "openai", "bedrock")

_REPO_CATALOG = Path(__file__).resolve().parents[3] / "infra" / "catalog" / CATALOG_FILENAME
_PACKAGED_CATALOG = Path(__file__).resolve().parent / CATALOG_FILENAME


@dataclass(frozen=True)
class CatalogModel:
    provider: str
    model: str
    dim: int
    max_input_tokens: int
    allowed_dims: tuple[int, ...] = ()
    description: str = ""
    # The cosine below which a chunk is almost never relevant to a query, for this model (R-SRCH-1's
    # gate); None: the search's default. Measured, where given, by bench/retrieval_quality.py.
    vec_gate: float | None = None

    def __post_init__(self) -> None:
        if not self.allowed_dims:
            object.__setattr__(self, "allowed_dims", (self.dim,))

    @property
    def accepts_dimensions(self) -> bool:
        """Whether the provider is told the width: only a model that serves several can be."""
        return len(self.allowed_dims) > 1


def catalog_path() -> Path:
    """The catalog file this process reads."""
    override = read(AssetSettings).catalog_path
    if override:
        return Path(override)
    for candidate in (_REPO_CATALOG, _PACKAGED_CATALOG):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"embedding catalog not found: set {CATALOG_ENV}, or ship {CATALOG_FILENAME} "
        f"as package data of sluice.embedding"
    )


_T = TypeVar("_T")
_cache: dict[tuple[Path, int, Callable[[object, Path], tuple[Any, ...]]], tuple[Any, ...]] = {}
_cache_lock = threading.Lock()


def load_cached(path: Path, parse: Callable[[object, Path], tuple[_T, ...]]) -> list[_T]:
    """A JSON catalog file as ``parse`` reads it, parsed once per version of the file: keyed on its
    mtime, so a local runtime editing the file sees the edit without a restart."""
    key = (path.resolve(), path.stat().st_mtime_ns, parse)
    with _cache_lock:
        models = _cache.get(key)
    if models is None:
        models = parse(json.loads(path.read_text(encoding="utf-8")), path)
        with _cache_lock:
            _cache[key] = models
    return list(models)


def load_catalog(path: Path | None = None) -> list[CatalogModel]:
    return load_cached(Path(path) if path is not None else catalog_path(), _parse_catalog)


class _Listed(Protocol):
    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...


_M = TypeVar("_M", bound=_Listed)


def parse_models(raw: object, path: Path, build: Callable[[dict[str, Any]], _M],
                 check: Callable[[_M], str | None]) -> tuple[_M, ...]:
    """A catalog file's models: ``build`` reads an entry, ``check`` says what is wrong with it (None:
    nothing). A malformed catalog is a broken deployment, so it fails loudly rather than dropping
    entries a collection may already be bound to; a provider/model listed twice is malformed."""
    if not isinstance(raw, list):
        raise ValueError(f"{path}: the catalog must be a JSON list of models")
    models: list[_M] = []
    seen: set[tuple[str, str]] = set()
    for position, entry in enumerate(raw):
        where = f"{path}[{position}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: each model must be an object")
        try:
            model = build(entry)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc!r}") from exc
        wrong = check(model)
        if wrong is not None:
            raise ValueError(f"{where}: {wrong}")
        if (model.provider, model.model) in seen:
            raise ValueError(f"{where}: {model.provider}/{model.model} is listed twice")
        seen.add((model.provider, model.model))
        models.append(model)
    return tuple(models)


def _build(entry: dict[str, Any]) -> CatalogModel:
    return CatalogModel(
        provider=str(entry["provider"]),
        model=str(entry["model"]),
        dim=int(entry["dim"]),
        max_input_tokens=int(entry["max_input_tokens"]),
        allowed_dims=tuple(int(d) for d in entry.get("allowed_dims") or ()),
        description=str(entry.get("description", "")),
        vec_gate=float(entry["vec_gate"]) if entry.get("vec_gate") is not None else None,
    )


def _check(model: CatalogModel) -> str | None:
    if model.provider not in PROVIDERS:
        return f"unknown provider {model.provider!r}"
    if model.dim not in model.allowed_dims or min(model.allowed_dims) <= 0:
        return f"dim {model.dim} must be one of allowed_dims {model.allowed_dims}"
    if model.max_input_tokens <= 0:
        return "max_input_tokens must be positive"
    if model.vec_gate is not None and not -1.0 <= model.vec_gate <= 1.0:
        return f"vec_gate {model.vec_gate} must be a cosine, between -1 and 1"
    return None


def _parse_catalog(raw: object, path: Path) -> tuple[CatalogModel, ...]:
    return parse_models(raw, path, _build, _check)


def find_model(provider: str, model: str, dim: int | None = None) -> CatalogModel:
    """The catalog entry for a collection's choice, at the width asked for.

    ``dim`` defaults to the model's own width; a width the model serves returns
    the entry with ``dim`` set to it. Refusals name the request field to fix.
    """
    catalog = load_catalog()
    offered = [m for m in catalog if m.provider == provider]
    if not offered:
        providers = ", ".join(sorted({m.provider for m in catalog}))
        raise ValidationError(
            "Unknown embedding provider",
            fields={"embedding_provider": f"'{provider}' is not a provider; choose one of: {providers}"},
        )
    entry = next((m for m in offered if m.model == model), None)
    if entry is None:
        names = ", ".join(m.model for m in offered)
        raise ValidationError(
            "Unknown embedding model",
            fields={"embedding_model": f"'{model}' is not served by '{provider}'; choose one of: {names}"},
        )
    if dim is None or dim == entry.dim:
        return entry
    if dim not in entry.allowed_dims:
        widths = ", ".join(str(d) for d in entry.allowed_dims)
        raise ValidationError(
            "Unsupported embedding width",
            fields={"embedding_dim": f"'{model}' produces vectors of width {widths}, not {dim}"},
        )
    return replace(entry, dim=dim)


def vec_gate(provider: str, model: str) -> float | None:
    """The catalog's cosine gate for a model (R-SRCH-1); None when it names none or the model left it."""
    entry = next((m for m in load_catalog() if m.provider == provider and m.model == model), None)
    return entry.vec_gate if entry is not None else None
