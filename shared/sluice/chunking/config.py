"""Chunking settings: a collection's stored config, a per-upload override, and the plan they resolve to.

R-CHUNK-1 sets the defaults and the embedder limit, R-CHUNK-2 the two refusals:
a collection's own config is refused with 422, a per-upload override (checked
merged with the collection's config, never on its own) with 400. Both name the
same fields, ``ingestion_config.<field>`` for a setting of its own and
``ingestion_config`` plus both fields for the pair rule, so a form marks the
same inputs whichever entry point refused. Neither ever carries Pydantic's
own error format: every field gets a sentence written here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, field_validator, model_validator
from pydantic_core import PydanticCustomError

from sluice.chunking.parser import CHECK_INSTALLED, PARSER_LABELS, PARSER_SETTINGS, ParserOverride, ParserSettings
from sluice.errors import UnprocessableError, ValidationError
from sluice.parsing.options import ParserOptions

Strategy = Literal["recursive", "markdown", "fixed"]
STRATEGIES: tuple[str, ...] = ("recursive", "markdown", "fixed")

DEFAULT_CHUNK_SIZE = 2500
DEFAULT_CHUNK_OVERLAP = 200

# Below a sentence or two a chunk carries too little context to be found by a
# search, and a tiny size turns one document into a row per word.
MIN_CHUNK_SIZE = 100

# The overlap is at most this share of the size. Each chunk advances by size - overlap,
# so an overlap just under the size (100/99) turned a 129 KB text into 19,974 chunks,
# each one embedded and paid for; at most half, a chunk advances at least size / 2 and a
# document makes at most about 2 x its length / size chunks. The count is bounded again,
# whatever the settings, by MAX_CHUNKS_PER_DOCUMENT (sluice.config) in the chunk stage.
MAX_OVERLAP_SHARE = 0.5

# Measured with the all-MiniLM-L6-v2 WordPiece tokenizer on real English:
# scifact (7.8 M chars of scientific abstracts) averages 4.48 chars a word
# piece, the GPL-3.0 text 5.09, IDLE's changelog (identifiers, issue numbers)
# 3.66 — but a chunk must fit whole, so what matters is the dense tail, not the
# mean. Cutting each text into windows of (254 * c) characters and counting
# windows over 254 pieces: c=3.0 overflows 0.73% of scifact windows and 5.5%
# of the changelog's; c=2.5 overflows 0.16% of scifact's and none of the
# others'. 2.5 it is: a chunk a little smaller than it could be costs nothing
# at search time, a chunk the model silently truncates loses its tail.
# (Text outside the Latin script tokenizes denser still; no constant covers
# every script, which is why the embed stage must still tell truncation apart.)
CHARS_PER_TOKEN: float = 2.5

# [CLS] and [SEP] (or a model's equivalent) come out of the same window.
_SPECIAL_TOKENS = 2

_SETTINGS = ("chunking_strategy", "chunk_size", "chunk_overlap")
_LABELS = {
    "chunking_strategy": "Chunking strategy",
    "chunk_size": "Chunk size",
    "chunk_overlap": "Chunk overlap",
}
_PREFIX = "ingestion_config"
# A config as sent (not read back from storage): its OCR languages are checked against the machine.
_SENT = {CHECK_INSTALLED: True}
_RULE = "sluice_rule"
_PAIR_RULE = "sluice_pair_rule"


def max_chunk_chars(max_input_tokens: int) -> int:
    """The most characters an embedder reading ``max_input_tokens`` word pieces is sure to read whole."""
    if max_input_tokens <= _SPECIAL_TOKENS:
        raise ValueError(f"max_input_tokens must be more than {_SPECIAL_TOKENS}, got {max_input_tokens}")
    return int((max_input_tokens - _SPECIAL_TOKENS) * CHARS_PER_TOKEN)


def default_overlap(chunk_size: int) -> int:
    """200 at the default size, scaled down in proportion for a smaller one; never above 200."""
    scaled = math.floor(DEFAULT_CHUNK_OVERLAP * chunk_size / DEFAULT_CHUNK_SIZE + 0.5)
    return min(DEFAULT_CHUNK_OVERLAP, scaled)


@dataclass(frozen=True)
class ChunkingPlan:
    """The settings a document is split with: resolved, validated, nothing left to derive."""

    strategy: str
    chunk_size: int
    chunk_overlap: int

    def __post_init__(self) -> None:
        # The splitters rely on these; a plan that breaks them is a programming error, not user input.
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown chunking strategy {self.strategy!r}")
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be positive")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ValueError("chunk_overlap must be at least 0 and smaller than chunk_size")


class _ChunkingSettings(BaseModel):
    """The fields and single-field rules shared by a collection's config and an override."""

    model_config = ConfigDict(extra="forbid")

    chunking_strategy: Strategy | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None

    @field_validator("chunk_size", "chunk_overlap", mode="before")
    @classmethod
    def _no_booleans(cls, value: Any) -> Any:
        # Pydantic's lax mode reads true as 1, which no form means.
        if isinstance(value, bool):
            raise PydanticCustomError("int_type", "not a number")
        return value

    @field_validator("chunk_size")
    @classmethod
    def _size_floor(cls, value: int | None) -> int | None:
        if value is not None and value < MIN_CHUNK_SIZE:
            raise PydanticCustomError(
                _RULE,
                "Chunk size must be at least {minimum} characters; smaller chunks carry too little "
                "text to be found by a search.",
                {"minimum": MIN_CHUNK_SIZE},
            )
        return value

    @field_validator("chunk_overlap")
    @classmethod
    def _overlap_floor(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise PydanticCustomError(_RULE, "Chunk overlap cannot be negative.")
        return value


class IngestionConfig(_ChunkingSettings):
    """A collection's stored chunking config (``knowledge_bases.ingestion_config``).

    ``None`` means "derive": the size from the collection embedder's window,
    the overlap from the size. It stays ``None`` in storage so the stored
    config says what the user chose, not what it resolved to.
    """

    chunking_strategy: Strategy = "recursive"
    # R-PARSE-6: the collection's image-description choice, opaque here; sluice.access.vision checks it
    # (it needs the caller and the key vault) and the parse and describe steps read it.
    image_description: dict[str, Any] | None = None
    # R-PARSE-7: how documents are read (parser, OCR); None reads them as pymupdf with OCR off.
    parser: ParserSettings | None = None

    @model_validator(mode="after")
    def _overlap_below_size(self) -> IngestionConfig:
        if self.chunk_size is not None and self.chunk_overlap is not None:
            _check_pair(self.chunk_size, self.chunk_overlap, derived=False)
        return self


class IngestionOverride(_ChunkingSettings):
    """A per-upload override: only the settings it changes. ``null`` changes nothing."""

    parser: ParserOverride | None = None


def _check_pair(size: int, overlap: int, *, derived: bool) -> None:
    if overlap > size * MAX_OVERLAP_SHARE:
        where = ", the most the collection's embedding model reads whole" if derived else ""
        raise PydanticCustomError(
            _PAIR_RULE,
            "Chunk overlap ({overlap}) must be at most half the chunk size ({size}{where}); a larger overlap "
            "repeats most of every chunk in the next one.",
            {"overlap": overlap, "size": size, "where": where},
        )


def _pair_fields(message: str) -> dict[str, str]:
    # Pydantic attributes an after-validator to neither field, so the object is
    # named too; both fields are named so either input can be marked (R-CHUNK-2).
    return {
        _PREFIX: message,
        f"{_PREFIX}.chunk_size": message,
        f"{_PREFIX}.chunk_overlap": message,
    }


def _sentence(error: Any) -> str:
    """One human sentence for one Pydantic error, keyed on the error type."""
    loc = error["loc"]
    in_parser = len(loc) > 1 and loc[0] == "parser"
    field = loc[-1] if in_parser else (loc[0] if loc else None)
    label = (PARSER_LABELS if in_parser else _LABELS).get(str(field), "This setting")
    kind = error["type"]
    if kind in (_RULE, _PAIR_RULE):
        return str(error["msg"])
    if kind == "extra_forbidden":
        if in_parser:
            return f"Unknown parser setting {field!r}; the parser settings are {', '.join(PARSER_SETTINGS)}."
        return f"Unknown setting {field!r}; the chunking settings are {', '.join(_SETTINGS)}."
    if kind == "literal_error":
        if in_parser:
            return f"{label} must be one of {error['ctx']['expected']}."
        return f"{label} must be one of {', '.join(STRATEGIES)}."
    if kind.startswith("int_") and in_parser:
        return f"{label} must be a whole number."
    if kind in ("model_type", "model_attributes_type", "dict_type") and field == "parser":
        return "The parser settings must be a JSON object."
    if kind == "string_type":
        return f"{label} must be a string."
    if kind.startswith("int_"):
        return f"{label} must be a whole number of characters."
    return f"{label} is not valid."


def _fields_of(exc: pydantic.ValidationError) -> dict[str, str]:
    fields: dict[str, str] = {}
    for error in exc.errors(include_url=False):
        if error["type"] == _PAIR_RULE:
            fields.update(_pair_fields(_sentence(error)))
            continue
        key = _PREFIX
        loc = error["loc"]
        if loc:
            # ingestion_config.parser.ocr_languages for a parser setting, ingestion_config.chunk_size otherwise.
            named = [str(part) for part in loc[:2]] if loc[0] == "parser" and len(loc) > 1 else [str(loc[0])]
            key = ".".join([_PREFIX, *named])
        fields.setdefault(key, _sentence(error))
    return fields


def _refuse(error: type[ValidationError], fields: dict[str, str]) -> ValidationError:
    if fields and all(key.startswith(f"{_PREFIX}.parser") for key in fields):
        return error("The parser settings are not valid.", fields=fields)
    return error("The chunking settings are not valid.", fields=fields)


def _resolve(config: IngestionConfig, *, max_input_tokens: int, error: type[ValidationError]) -> ChunkingPlan:
    window = max_chunk_chars(max_input_tokens)
    if config.chunk_size is None:
        # Below MIN_CHUNK_SIZE only for an embedder no one would index with; the
        # floor is about what a user asks for, the window about what fits.
        size = min(DEFAULT_CHUNK_SIZE, window)
    elif config.chunk_size > window:
        raise _refuse(
            error,
            {
                f"{_PREFIX}.chunk_size": (
                    f"Chunk size {config.chunk_size} is larger than the {window} characters this "
                    f"collection's embedding model reads whole ({max_input_tokens} word pieces); "
                    f"choose {window} or less."
                )
            },
        )
    else:
        size = config.chunk_size
    if config.chunk_overlap is None:
        overlap = default_overlap(size)
    else:
        overlap = config.chunk_overlap
        try:
            _check_pair(size, overlap, derived=config.chunk_size is None)
        except PydanticCustomError as exc:
            raise _refuse(error, _pair_fields(exc.message())) from None
    return ChunkingPlan(strategy=config.chunking_strategy, chunk_size=size, chunk_overlap=overlap)


def resolve_plan(config: IngestionConfig, *, max_input_tokens: int) -> ChunkingPlan:
    """The plan a collection's own config splits with; a size the embedder cannot read whole is a 422."""
    return _resolve(config, max_input_tokens=max_input_tokens, error=UnprocessableError)


def validate_collection_config(raw: Any, *, max_input_tokens: int) -> IngestionConfig:
    """Check a collection's chunking config as sent (JSON object or ``None``) → 422 naming its fields."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _refuse(UnprocessableError, {_PREFIX: "The ingestion config must be a JSON object."})
    try:
        config = IngestionConfig.model_validate(raw, context=_SENT)
    except pydantic.ValidationError as exc:
        raise _refuse(UnprocessableError, _fields_of(exc)) from None
    # The embedder window and a derived size are only known here, not in the model.
    _resolve(config, max_input_tokens=max_input_tokens, error=UnprocessableError)
    return config


def merge_override(config: IngestionConfig, override: Any, *, max_input_tokens: int) -> ChunkingPlan:
    """Apply a per-upload override and validate the merged settings → 400 naming the fields.

    The pair rule is checked on the merge, because two values each legal alone
    (an overlap of 4096 against a stored size of 2500) make a config that is not.
    """
    if override is None:
        override = {}
    if not isinstance(override, dict):
        raise _refuse(ValidationError, {_PREFIX: "The ingestion config must be a JSON object."})
    try:
        merged = _merged(config, override, context=_SENT)
    except pydantic.ValidationError as exc:
        raise _refuse(ValidationError, _fields_of(exc)) from None
    return _resolve(merged, max_input_tokens=max_input_tokens, error=ValidationError)


def _merged(config: IngestionConfig, override: dict[str, Any], context: dict[str, Any] | None = None
            ) -> IngestionConfig:
    changes = IngestionOverride.model_validate(override, context=context).model_dump(exclude_none=True)
    stored = config.model_dump()
    if "parser" in changes:
        # The parser override changes only the fields it names; the collection's others stand.
        mine = config.parser.model_dump(exclude_none=True) if config.parser is not None else {}
        changes["parser"] = {**mine, **changes["parser"]}
    return IngestionConfig.model_validate({**stored, **changes}, context=context)


def parser_options(config: IngestionConfig, override: Any) -> ParserOptions:
    """How one document is read: the collection's parser settings with the upload's override on top
    (both were validated when stored; a stored override that no longer validates is a 400 here)."""
    if not isinstance(override, dict):
        override = {}
    try:
        merged = _merged(config, override)
    except pydantic.ValidationError as exc:
        raise _refuse(ValidationError, _fields_of(exc)) from None
    return (merged.parser or ParserSettings()).options()
