"""Settings, read from the environment (and, on AWS, the function's configuration).

Each variable has one home, a section of ``sluice.config.sections``; the sections a service's
context is handed are composed in ``contexts``, and each function's in ``functions`` (the
template's names). Domain code is handed its sections; only the composition root
(``sluice.wiring``), the handlers, the command line, the local runtime and the adapters named in
``tests/unit/test_layers.py`` read them (``current``, ``read``, ``get_settings``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from sluice.config.contexts import (
    ChatContextSettings,
    IntakeSettings,
    StageSettings,
    SyncContextSettings,
    TeardownContextSettings,
)
from sluice.config.functions import FUNCTIONS, FunctionSettings, required_variables
from sluice.config.sections import (
    DATABASE,
    MIB,
    AssetSettings,
    AwsSettings,
    BucketSettings,
    ChatArrivalDeadLetterSettings,
    ChatDeadLetterSettings,
    ChatModelSettings,
    ChatQueueSettings,
    ChatSettings,
    ConsoleSettings,
    DatabaseSettings,
    DeadLetterSettings,
    DefaultEmbeddingSettings,
    DevSettings,
    EmbeddingSettings,
    EncryptionSettings,
    EndpointSettings,
    ImageDescriptionSettings,
    IngestQueueSettings,
    OcrSettings,
    ParsingSettings,
    PoolSettings,
    RecoverySettings,
    RerankerSettings,
    Section,
    StageQueueSettings,
    SyncDueQueueSettings,
    SyncSettings,
    SyncWorkflowSettings,
    TeardownSettings,
    TeardownWorkflowSettings,
    UploadSettings,
)

__all__ = [
    "DATABASE", "FUNCTIONS", "MIB", "AssetSettings", "AwsSettings", "BucketSettings", "ChatArrivalDeadLetterSettings",
    "ChatContextSettings", "ChatDeadLetterSettings", "ChatModelSettings", "ChatQueueSettings", "ChatSettings",
    "ConsoleSettings",
    "DatabaseSettings", "DeadLetterSettings", "DefaultEmbeddingSettings", "DevSettings", "EmbeddingSettings",
    "EncryptionSettings", "EndpointSettings", "FunctionSettings", "ImageDescriptionSettings", "IngestQueueSettings",
    "IntakeSettings", "MissingSettingError", "OcrSettings", "ParsingSettings", "PoolSettings", "RecoverySettings",
    "RerankerSettings", "Section", "Settings", "StageQueueSettings", "StageSettings", "SyncContextSettings",
    "SyncDueQueueSettings", "SyncSettings", "SyncWorkflowSettings", "TeardownContextSettings", "TeardownSettings",
    "TeardownWorkflowSettings", "UploadSettings", "check", "current", "get_settings", "read", "required_variables",
    "reset_settings", "unset",
]

S = TypeVar("S", bound=Section)


class Settings(StageSettings, SyncContextSettings, ChatContextSettings, TeardownContextSettings, FunctionSettings,
               EncryptionSettings, EndpointSettings, StageQueueSettings, DeadLetterSettings, RerankerSettings,
               SyncWorkflowSettings, SyncDueQueueSettings, TeardownWorkflowSettings, ChatQueueSettings,
               ChatDeadLetterSettings, ChatArrivalDeadLetterSettings, ConsoleSettings, DevSettings):
    """Every section at once: what the command line, the local runtime and the tests read. A
    deployed function reads its own model (``FUNCTIONS``), never this."""


class MissingSettingError(RuntimeError):
    """A function started without a variable it needs: it names the variable, at cold start."""


_cache: dict[type[Section], Section] = {}
_lock = threading.Lock()


def current(model: type[S]) -> S:
    """``model`` as the environment has it, read once and kept until ``reset_settings``."""
    found = _cache.get(model)
    if found is None:
        with _lock:
            found = _cache.setdefault(model, model())
    assert isinstance(found, model)
    return found


def read(model: type[S]) -> S:
    """``model`` read afresh (the file locations of ``AssetSettings``, which tests point elsewhere)."""
    return model()


def get_settings() -> Settings:
    return current(Settings)


def reset_settings() -> None:
    """Forget the read settings (the local runtime and tests change the environment)."""
    with _lock:
        _cache.clear()


def unset(model: type[Section], is_set: Callable[[str], bool]) -> list[str]:
    """The variables ``model`` requires that ``is_set`` says are not: of a function's parsed settings
    (``check``), of `sam local`'s env file, of what the template declares. DATABASE is either of two."""
    out = []
    for name in required_variables(model):
        if name == DATABASE:
            if not (is_set("DATABASE_URL") or is_set("DATABASE_SECRET_ID")):
                out.append("DATABASE_URL or DATABASE_SECRET_ID")
        elif not is_set(name):
            out.append(name)
    return out


def check(model: type[Section]) -> None:
    """Read ``model`` (a malformed value fails here, by name) and refuse to run without every variable
    it requires set (non-empty)."""
    settings = current(model)
    by_alias = {field.alias: name for name, field in model.model_fields.items()}
    absent = unset(model, lambda alias: bool(getattr(settings, by_alias[alias])))
    if absent:
        raise MissingSettingError("This function needs " + ", ".join(absent) + " set; see template.yaml.")
