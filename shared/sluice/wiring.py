"""The composition root: adapters built once per process, handed to domain code."""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import TYPE_CHECKING

from sluice import aws
from sluice.access.vision import ImageDescriptionChoice
from sluice.admission import ParameterReader
from sluice.bases import DefaultEmbedding
from sluice.config import (
    ChatContextSettings,
    ChatModelSettings,
    ChatQueueSettings,
    DefaultEmbeddingSettings,
    EmbeddingSettings,
    IngestQueueSettings,
    IntakeSettings,
    RerankerSettings,
    StageQueueSettings,
    StageSettings,
    SyncContextSettings,
    SyncDueQueueSettings,
    SyncWorkflowSettings,
    TeardownContextSettings,
    TeardownWorkflowSettings,
    current,
)
from sluice.db.connection import transaction
from sluice.embedding import (
    Embedder,
    EmbeddingSpec,
    SecretsManagerKeyVault,
    SecretsManagerSecretReader,
    build_embedder,
    find_model,
)
from sluice.embedding.rerank import Reranker, build_reranker
from sluice.ingest.recovery import StageQueues
from sluice.ingest.runner import StageContext
from sluice.ingest.uploads import Intake
from sluice.storage import JobQueue, ObjectStore, StepFunctionsWorkflow
from sluice.sync.connectors import ConnectorOpener, SecretValues
from sluice.sync.context import StepFunctionsExecutions, SyncContext
from sluice.teardown import TeardownContext

if TYPE_CHECKING:
    from sluice.chat.resources import ChatResources
    from sluice.llm import ChatModel

_lock = threading.Lock()


@lru_cache(maxsize=1)
def secret_reader() -> SecretsManagerSecretReader:
    return SecretsManagerSecretReader(aws.client("secretsmanager"))


@lru_cache(maxsize=1)
def key_vault() -> SecretsManagerKeyVault:
    return SecretsManagerKeyVault(aws.client("secretsmanager"))


def embedder_for(spec: EmbeddingSpec) -> Embedder:
    bedrock = aws.client("bedrock-runtime") if spec.provider == "bedrock" else None
    return build_embedder(spec, secrets=secret_reader(), bedrock_client=bedrock,
                          batch_size=current(EmbeddingSettings).embed_batch_size)


@lru_cache(maxsize=1)
def reranker() -> Reranker | None:
    """The deployment's reranker (RERANKER_* settings), or None; built once per cold start."""
    settings = current(RerankerSettings)
    bedrock = aws.client("bedrock-agent-runtime") if settings.reranker_provider == "bedrock" else None
    secrets = secret_reader() if settings.reranker_secret_id else None
    return build_reranker(settings, bedrock_agent_client=bedrock, secrets=secrets)


def default_embedding() -> DefaultEmbedding:
    """The deployment's default embedding, checked against the catalog (a typo fails by name)."""
    settings = current(DefaultEmbeddingSettings)
    entry = find_model(settings.default_embedding_provider, settings.default_embedding_model)
    return DefaultEmbedding(entry.provider, entry.model)


@lru_cache(maxsize=1)
def object_store() -> ObjectStore:
    """The document bucket's SSE-KMS store, one per process, shared by every context."""
    return aws.object_store()


def job_queue() -> JobQueue:
    return JobQueue(aws.client("sqs"), current(IngestQueueSettings).ingest_queue_url)


def stage_queues() -> StageQueues:
    s, sqs = current(StageQueueSettings), aws.client("sqs")
    return StageQueues(ingest=JobQueue(sqs, s.ingest_queue_url), chunk=JobQueue(sqs, s.chunk_queue_url),
                       embed=JobQueue(sqs, s.embed_queue_url))


def vision_model_for(choice: ImageDescriptionChoice) -> ChatModel:
    """A collection's image-description model (R-PARSE-6): its key read from the vault, an ``openai``
    endpoint reached through the guarded client, Bedrock through the function's role."""
    from sluice.ingest.describe import VISION_RETRY
    from sluice.llm import chat_model_for

    bedrock = aws.client("bedrock-runtime") if choice.provider == "bedrock" else None
    return chat_model_for(choice.provider, choice.model, base_url=choice.base_url, secret_id=choice.secret_id,
                          secrets=secret_reader() if choice.secret_id else None, bedrock_client=bedrock,
                          retry=VISION_RETRY)


@lru_cache(maxsize=1)
def stage_context() -> StageContext:
    return StageContext(uow=transaction, store=object_store(), settings=current(StageSettings),
                        embedder_for=embedder_for, vision_model_for=vision_model_for)


def parameter_reader() -> ParameterReader:
    """Reads the kill switch's SSM parameter (INDEXING_PAUSED_PARAMETER), cached briefly."""
    return aws.parameter_value


def intake() -> Intake:
    # Settings as they are now (the cached read): an operator's switch is seen without a restart.
    return Intake(uow=transaction, store=object_store(), settings=current(IntakeSettings),
                  read_parameter=aws.parameter_value)


# --- source syncs (issue 14) ---------------------------------------------------------------------

@lru_cache(maxsize=1)
def sync_context() -> SyncContext:
    """The sync service's adapters: the connectors open with each source's own secret, runs start on
    the sync state machine (SYNC_STATE_MACHINE_ARN), due runs are handed out on SYNC_DUE_QUEUE_URL."""
    settings = current(SyncContextSettings)
    arn, due = current(SyncWorkflowSettings).sync_state_machine_arn, current(SyncDueQueueSettings).sync_due_queue_url
    executions = StepFunctionsExecutions(aws.client("stepfunctions"), arn) if arn else None
    due_queue = JobQueue(aws.client("sqs"), due) if due else None
    return SyncContext(uow=transaction, store=object_store(), settings=settings,
                       connectors=ConnectorOpener(settings, SecretValues(aws.client("secretsmanager"))),
                       executions=executions, vault=key_vault(), read_parameter=aws.parameter_value,
                       due_queue=due_queue)


# --- teardowns (issue 15) ------------------------------------------------------------------------

def teardown_context() -> TeardownContext:
    return TeardownContext(uow=transaction, store=object_store(), settings=current(TeardownContextSettings))


def teardown_workflow() -> StepFunctionsWorkflow | None:
    """The teardown state machine (TEARDOWN_STATE_MACHINE_ARN), or None where none is configured."""
    arn = current(TeardownWorkflowSettings).teardown_state_machine_arn
    return StepFunctionsWorkflow(aws.client("stepfunctions"), arn) if arn else None


# --- chat (SPEC §12) ---------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _chat_model_for(provider: str, model: str, base_url: str, secret_id: str) -> ChatModel | None:
    from sluice.llm import build_chat_model

    settings = current(ChatModelSettings)
    bedrock = aws.client("bedrock-runtime") if provider == "bedrock" else None
    return build_chat_model(settings, secrets=secret_reader() if secret_id else None, bedrock_client=bedrock)


def chat_model() -> ChatModel | None:
    """The deployment's chat model (CHAT_MODEL_*), built once per configuration."""
    s = current(ChatModelSettings)
    return _chat_model_for(s.chat_model_provider, s.chat_model, s.chat_model_base_url, s.chat_model_secret_id)


def chat_queue_backlog() -> bool:
    """Whether the chat queue holds messages no worker has taken (the reaper waits for them)."""
    return JobQueue(aws.client("sqs"), current(ChatQueueSettings).chat_queue_url).waiting() > 0


def chat_resources() -> ChatResources:
    """What the chat routes and worker need; settings as they are now, adapters built once."""
    from sluice.chat.resources import ATTACHMENT_EMBEDDING, ChatResources
    from sluice.embedding.tokens import bundled_token_counter

    settings = current(ChatContextSettings)

    def send_job(message: dict[str, object]) -> None:
        JobQueue(aws.client("sqs"), current(ChatQueueSettings).chat_queue_url).send(message)

    return ChatResources(uow=transaction, store=object_store(), settings=settings,
                         embedder=lambda: embedder_for(ATTACHMENT_EMBEDDING), tokens=bundled_token_counter,
                         chat_model=chat_model, send_job=send_job, intake=intake)


def reset() -> None:
    """Forget built adapters (the local runtime restarts with new endpoints in tests)."""
    with _lock:
        _chat_model_for.cache_clear()
        stage_context.cache_clear()
        object_store.cache_clear()
        secret_reader.cache_clear()
        key_vault.cache_clear()
        reranker.cache_clear()
        sync_context.cache_clear()
        aws.reset_clients()
