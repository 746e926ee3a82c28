"""Each function's settings: the sections it needs, composed as template.yaml names the functions.

A handler is built with its model (``http_handler(app, settings=UploadsFunction)``): at cold start
the model is read, validated, and its required variables checked (``required_variables``), so a
missing queue URL or a malformed number fails by name before the first event. The same list is
what the template test asserts each function declares and what `sam local`'s env file must fill.
"""

from __future__ import annotations

from sluice.config.contexts import (
    ChatContextSettings,
    IntakeSettings,
    StageSettings,
    SyncContextSettings,
    TeardownContextSettings,
)
from sluice.config.sections import (
    DATABASE,
    AwsSettings,
    BucketSettings,
    ChatArrivalDeadLetterSettings,
    ChatDeadLetterSettings,
    ChatQueueSettings,
    ConsoleSettings,
    DatabaseSettings,
    DeadLetterSettings,
    DefaultEmbeddingSettings,
    EmbeddingSettings,
    EncryptionSettings,
    EndpointSettings,
    IngestQueueSettings,
    OcrSettings,
    PoolSettings,
    RerankerSettings,
    Section,
    StageQueueSettings,
    SyncDueQueueSettings,
    SyncWorkflowSettings,
    TeardownWorkflowSettings,
    UploadSettings,
)


class FunctionSettings(DatabaseSettings, AwsSettings):
    """What every function has: the database (each opens it) and where AWS is."""


# --- the HTTP API ------------------------------------------------------------------------------

class KbFunction(FunctionSettings, OcrSettings, DefaultEmbeddingSettings, EndpointSettings):
    """Bases and collections: a base's default embedding, the endpoints it may name, the OCR engine."""


class UploadsFunction(IntakeSettings, FunctionSettings, BucketSettings, EncryptionSettings, EndpointSettings):
    pass


class DocumentsFunction(FunctionSettings, BucketSettings, IngestQueueSettings, PoolSettings):
    """A document's detail and download link, a private pool's limits, and a retry sent to the ingest queue
    (admitted as an upload is: the kill switch, the pool's limits, DOCUMENT_MAX_RETRIES)."""


class SearchFunction(FunctionSettings, EmbeddingSettings, EndpointSettings, RerankerSettings):
    """A query is embedded with the collection's model, its candidates reranked by the deployment's."""


class ConsoleFunction(AwsSettings, ConsoleSettings, UploadSettings, BucketSettings, EncryptionSettings):
    """The console's page and assets (R-UI-1): no database; the upload ceiling its drop overlay states, and
    the bucket a presigned POST goes to, whose origin its Content-Security-Policy allows."""


class SourcesFunction(SyncContextSettings, FunctionSettings, SyncWorkflowSettings):
    pass


class TeardownsFunction(TeardownContextSettings, FunctionSettings, TeardownWorkflowSettings):
    pass


class ChatFilesFunction(ChatContextSettings, FunctionSettings, EncryptionSettings):
    pass


class ChatFunction(ChatContextSettings, FunctionSettings, EncryptionSettings, ChatQueueSettings):
    pass


# --- the pipeline ------------------------------------------------------------------------------

class ParseFunction(StageSettings, FunctionSettings, BucketSettings, EncryptionSettings):
    pass


class ChunkFunction(StageSettings, FunctionSettings, BucketSettings, EncryptionSettings):
    pass


class EmbedFunction(StageSettings, FunctionSettings, BucketSettings, EndpointSettings):
    pass


class DeadLetterFunction(StageSettings, FunctionSettings, DeadLetterSettings):
    pass


class ReaperFunction(StageSettings, SyncContextSettings, ChatContextSettings, FunctionSettings, StageQueueSettings,
                     ChatQueueSettings):
    """Resumes stalled documents and attachments, and expires old runs' file lists."""


class MigrateFunction(FunctionSettings):
    pass


# --- chat attachments --------------------------------------------------------------------------

class ChatArrivalFunction(ChatContextSettings, FunctionSettings, EncryptionSettings,
                          ChatArrivalDeadLetterSettings):
    pass


class ChatWorkerFunction(ChatContextSettings, FunctionSettings, EncryptionSettings, ChatQueueSettings,
                         ChatDeadLetterSettings):
    pass


# --- source syncs ------------------------------------------------------------------------------

class SyncTaskFunction(SyncContextSettings, FunctionSettings, EncryptionSettings, EndpointSettings):
    pass


class SyncSchedulePlan(SyncContextSettings, FunctionSettings, SyncDueQueueSettings):
    """The schedule's planning half: due runs handed out on the due queue."""


class SyncScheduleStart(SyncContextSettings, FunctionSettings, SyncWorkflowSettings):
    """The schedule's starting half: each due run started on the sync state machine."""


class SyncScheduleFunction(SyncContextSettings, FunctionSettings, SyncDueQueueSettings, SyncWorkflowSettings):
    """One function, two handlers (the rule's tick and the due queue's messages)."""


# --- teardowns ---------------------------------------------------------------------------------

class TeardownFunction(TeardownContextSettings, FunctionSettings, BucketSettings):
    pass


class TeardownSweepFunction(TeardownContextSettings, FunctionSettings, TeardownWorkflowSettings):
    pass


FUNCTIONS: dict[str, type[Section]] = {
    cls.__name__: cls
    for cls in (KbFunction, UploadsFunction, DocumentsFunction, SearchFunction, SourcesFunction, TeardownsFunction,
                ChatFilesFunction, ChatFunction, ParseFunction, ChunkFunction, EmbedFunction, DeadLetterFunction,
                ReaperFunction, MigrateFunction, ChatArrivalFunction, ChatWorkerFunction, SyncTaskFunction,
                SyncScheduleFunction, TeardownFunction, TeardownSweepFunction, ConsoleFunction)
}


def required_variables(model: type[Section]) -> tuple[str, ...]:
    """The variables ``model`` cannot run without, from its sections' REQUIRES, in MRO order (DATABASE
    stands for DATABASE_URL or DATABASE_SECRET_ID)."""
    found: list[str] = []
    for cls in reversed(model.__mro__):
        for name in vars(cls).get("REQUIRES", ()):
            if name not in found:
                found.append(name)
    if DATABASE in found:  # first, as every message has it
        found.remove(DATABASE)
        found.insert(0, DATABASE)
    return tuple(found)
