"""The settings each service's context is handed: only the sections its code reads.

A context (``StageContext``, ``Intake``, ``SyncContext``, ``TeardownContext``, ``ChatResources``)
holds one of these; a function's settings (``sluice.config.functions``) include the ones of the
contexts its handler builds. Reading a setting of another section is a type error.
"""

from __future__ import annotations

from sluice.config.sections import (
    BucketSettings,
    ChatModelSettings,
    ChatSettings,
    DefaultEmbeddingSettings,
    EmbeddingSettings,
    ImageDescriptionSettings,
    OcrSettings,
    ParsingSettings,
    PoolSettings,
    RecoverySettings,
    SyncSettings,
    TeardownSettings,
    UploadSettings,
)


class StageSettings(UploadSettings, PoolSettings, ParsingSettings, OcrSettings, EmbeddingSettings,
                    ImageDescriptionSettings, RecoverySettings):
    """The pipeline's stages (parse, chunk, embed, describe) and their recovery (sluice.ingest); an
    archive's members are admitted to the pool as they are unpacked."""


class IntakeSettings(UploadSettings, PoolSettings, ParsingSettings, DefaultEmbeddingSettings):
    """Accepting an upload (sluice.ingest.uploads, sluice.admission): ceilings, the pool's limits, the
    default embedding of a pool made on first upload, and an archive's budgets when it is counted."""


class SyncContextSettings(IntakeSettings, BucketSettings, SyncSettings):
    """A source sync (sluice.sync): its own bounds, the stack's buckets no source may read, and what an
    upload is admitted by."""


class TeardownContextSettings(TeardownSettings):
    """A teardown's request and steps (sluice.teardown)."""


class ChatContextSettings(IntakeSettings, BucketSettings, EmbeddingSettings, RecoverySettings, ChatSettings,
                          ChatModelSettings):
    """Chat files and attachments (sluice.chat): tiers, the overview's model, download links, the
    uploads' ceilings and admission, the attachment embedding's batch, and the sweep's idle time."""
