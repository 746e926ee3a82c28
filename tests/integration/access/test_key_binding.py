"""Binding an embedding key to a base (R-EMB-1): who may lend which key, read from Secrets
Manager tags through the real adapter over moto, with the bases in the real database.

The provider's own behaviour with a key (429 then success, 401 and the R-DOC-4
summary) is tested against a real local HTTP server in tests/unit/embedding.
"""

from __future__ import annotations

import uuid

import pytest

from sluice.bases import CreateKnowledgeBase, UpdateKnowledgeBase, create_base, update_base
from sluice.db import knowledge_bases as kb_repo
from sluice.embedding import (
    EmbeddingSpec,
    SecretsManagerKeyVault,
    SecretsManagerSecretReader,
    build_embedder,
    clear_embedder_cache,
)
from sluice.errors import ValidationError
from tests.fakes import FakeOpenAI, serving
from tests.integration.access.conftest import EDIT, SECRETS, VIEW, who

ANN = who("ann", "acme", VIEW, EDIT, SECRETS)  # acme editor who may see acme's keys
BEN = who("ben", "acme", VIEW, EDIT)  # acme editor without secrets:view
CAT = who("cat", "acme", VIEW, EDIT, SECRETS)  # another acme member with her own private key
GUS = who("gus", "globex", VIEW, EDIT, SECRETS)
ADMIN = who("root", None, SECRETS, admin=True)

OPENAI = {"embedding_provider": "openai", "embedding_model": "text-embedding-3-small"}


@pytest.fixture(scope="module")
def vault(aws_client):
    sm = aws_client("secretsmanager")
    ids = {}
    run = uuid.uuid4().hex[:6]  # the package's moto server outlives this module

    def secret(name: str, **tags: str) -> None:
        ids[name] = sm.create_secret(
            Name=f"{name}-{run}", SecretString='{"api_key": "sk-test"}',
            Tags=[{"Key": f"sluice:{k}", "Value": v} for k, v in tags.items()],
        )["ARN"]

    secret("acme-shared", org_id="acme", provider="openai")
    secret("cat-private", org_id="acme", owner="cat", provider="openai")
    secret("globex-shared", org_id="globex", provider="openai")
    secret("acme-bedrock-ish", org_id="acme", provider="cohere")
    secret("untagged")
    secret("deleted", org_id="acme", provider="openai")
    sm.delete_secret(SecretId=ids["deleted"], RecoveryWindowInDays=7)
    yield SecretsManagerKeyVault(sm), ids


def create(conn, p, vault, **fields):
    fields.setdefault("name", "Keyed")
    return create_base(conn, p, CreateKnowledgeBase(**fields), vault=vault)


def refusal(conn, p, vault, **fields) -> ValidationError:
    with pytest.raises(ValidationError) as err:
        create(conn, p, vault, **fields)
    conn.rollback()
    return err.value


def test_a_member_who_sees_the_key_binds_it(conn, vault):
    v, ids = vault
    kb = create(conn, ANN, v, scope="org", embedding_secret_id=ids["acme-shared"], **OPENAI)
    assert kb.embedding_secret_id == ids["acme-shared"]
    own = create(conn, CAT, v, embedding_secret_id=ids["cat-private"], **OPENAI)
    assert own.embedding_secret_id == ids["cat-private"]


def test_every_key_the_caller_cannot_see_is_refused_as_one_the_vault_does_not_hold(conn, vault):
    v, ids = vault
    absent = refusal(conn, ANN, v, embedding_secret_id="arn:aws:secretsmanager:us-east-1:1:secret:nope", **OPENAI)
    assert absent.status == 400 and "embedding_secret_id" in absent.details["fields"]
    cases = [
        (BEN, ids["acme-shared"]),  # same organization, but no secrets:view: binding is lending
        (ANN, ids["cat-private"]),  # another member's private key (#912)
        (GUS, ids["acme-shared"]),  # another organization's key
        (ANN, ids["untagged"]),  # a deployment secret nobody may lend
        (ANN, ids["deleted"]),  # scheduled for deletion
        (ADMIN, ids["acme-shared"]),  # the app admin is no member of acme
    ]
    for p, secret_id in cases:
        err = refusal(conn, p, v, embedding_secret_id=secret_id, **OPENAI)
        # The same answer, word for word, as a key that does not exist: no enumeration.
        assert (err.message, err.details) == (absent.message, absent.details), (p.user_id, secret_id)


def test_a_visible_key_for_another_provider_is_refused(conn, vault):
    v, ids = vault
    err = refusal(conn, ANN, v, embedding_secret_id=ids["acme-bedrock-ish"], **OPENAI)
    assert "openai" in err.details["fields"]["embedding_secret_id"]


def test_keyless_providers_and_app_wide_bases_name_no_key(conn, vault, allow_endpoints):
    v, ids = vault
    err = refusal(conn, ANN, v, embedding_secret_id=ids["acme-shared"], embedding_provider="local")
    assert "takes no key" in err.details["fields"]["embedding_secret_id"]
    err = refusal(conn, ANN, v, embedding_secret_id=ids["acme-shared"], embedding_provider="bedrock",
                  embedding_model="amazon.titan-embed-text-v2:0")
    assert "takes no key" in err.details["fields"]["embedding_secret_id"]
    err = refusal(conn, ADMIN, v, scope="app", embedding_secret_id=ids["acme-shared"], **OPENAI)
    assert "app-wide" in err.details["fields"]["embedding_secret_id"]
    # an app-wide base may embed through a keyless endpoint on the deployment's network, once allowed
    allow_endpoints("ollama.internal")
    app = create(conn, ADMIN, v, scope="app", embedding_base_url="http://ollama.internal:11434/v1",
                 embedding_provider="openai", embedding_model="nomic-embed-text")
    assert app.embedding_secret_id is None


def test_the_default_openai_endpoint_needs_a_key(conn, vault):
    v, _ = vault
    err = refusal(conn, ANN, v, **OPENAI)
    assert "embedding_secret_id" in err.details["fields"]


def test_a_base_on_an_existing_name_adopts_the_key_only_if_the_caller_could_bind_it(conn, vault):
    v, ids = vault
    create(conn, ANN, v, scope="org", collection_name="shared_space", embedding_secret_id=ids["acme-shared"],
           **OPENAI)
    conn.commit()
    mine = create(conn, ANN, v, name="Mine", collection_name="shared_space")
    assert mine.embedding_secret_id == ids["acme-shared"]
    conn.rollback()
    # Ben may write acme's base but not see its key: he must name a key of his own
    err = refusal(conn, BEN, v, name="Ben's", collection_name="shared_space")
    assert "embedding_secret_id" in err.details["fields"]


def test_patch_binds_a_new_key_by_the_same_rules(conn, vault, allow_endpoints):
    v, ids = vault
    allow_endpoints("eu.example")  # a public name this offline machine cannot resolve
    kb = create(conn, ANN, v, scope="org", embedding_secret_id=ids["acme-shared"], **OPENAI)
    conn.commit()
    # another editor may change other settings without seeing the key already bound
    renamed = update_base(conn, BEN, str(kb.id), UpdateKnowledgeBase(description="new words"), vault=v)
    assert (renamed.description, renamed.embedding_secret_id) == ("new words", ids["acme-shared"])
    conn.commit()
    # a member who sees the key may move it to another endpoint: the key stays bound
    moved = update_base(conn, ANN, str(kb.id), UpdateKnowledgeBase(embedding_base_url="https://eu.example/v1"),
                        vault=v)
    assert (moved.embedding_base_url, moved.embedding_secret_id) == ("https://eu.example/v1", ids["acme-shared"])
    conn.commit()
    # but may not bind a key he cannot see, nor another organization's
    for p, secret_id in [(BEN, ids["cat-private"]), (ANN, ids["globex-shared"]), (ANN, ids["cat-private"])]:
        with pytest.raises(ValidationError) as err:
            update_base(conn, p, str(kb.id), UpdateKnowledgeBase(embedding_secret_id=secret_id), vault=v)
        assert "embedding_secret_id" in err.value.details["fields"]
        conn.rollback()
    # Cat binds her own key to the org base: she lends it
    lent = update_base(conn, CAT, str(kb.id), UpdateKnowledgeBase(embedding_secret_id=ids["cat-private"]), vault=v)
    assert lent.embedding_secret_id == ids["cat-private"]


def test_patch_changes_provider_and_config_but_never_the_space(conn, vault):
    v, ids = vault
    kb = create(conn, ANN, v, **{**OPENAI, "embedding_dim": 512}, embedding_secret_id=ids["acme-shared"])
    conn.commit()
    for body, field in [
        ({"embedding_model": "text-embedding-3-large"}, "embedding_model"),
        ({"embedding_dim": 1536}, "embedding_dim"),
        ({"collection_name": "elsewhere"}, "collection_name"),
        ({"scope": "org"}, "scope"),
        ({"embedding_provider": "bedrock"}, "embedding_provider"),
    ]:
        with pytest.raises(ValidationError) as err:
            update_base(conn, ANN, str(kb.id), UpdateKnowledgeBase(**body), vault=v)
        assert err.value.status == 400 and field in err.value.details["fields"], body
        conn.rollback()
    # restating the fixed values is not a change
    same = update_base(conn, ANN, str(kb.id), UpdateKnowledgeBase(embedding_model="text-embedding-3-small",
                                                                  embedding_dim=512), vault=v)
    assert same.embedding_dim == 512
    with pytest.raises(ValidationError) as err:
        update_base(conn, ANN, str(kb.id), UpdateKnowledgeBase(ingestion_config={"chunk_overlap": -1}), vault=v)
    assert err.value.status == 422
    conn.rollback()
    markdown = UpdateKnowledgeBase(ingestion_config={"chunking_strategy": "markdown"})
    changed = update_base(conn, ANN, str(kb.id), markdown, vault=v)
    assert changed.ingestion_config["chunking_strategy"] == "markdown"
    # clearing the key of a base on the default endpoint would leave it unable to embed
    with pytest.raises(ValidationError) as err:
        update_base(conn, ANN, str(kb.id), UpdateKnowledgeBase(embedding_secret_id=None), vault=v)
    assert "embedding_secret_id" in err.value.details["fields"]


def test_an_endpoint_must_be_public_unless_the_operator_allows_it(conn, vault, allow_endpoints):
    # Any writer of a base chooses where the workers POST: not into the deployment's network.
    v, _ = vault
    keyless = {"scope": "app", "embedding_provider": "openai", "embedding_model": "nomic-embed-text"}
    for url in ("http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:9001/v1", "http://10.0.0.7/v1",
                "http://[::1]:11434/v1", "http://localhost:11434/v1"):
        err = refusal(conn, ADMIN, v, embedding_base_url=url, **keyless)
        assert err.status == 400 and "public address" in err.details["fields"]["embedding_base_url"], url
    allow_endpoints("10.0.0.0/24")
    kb = create(conn, ADMIN, v, embedding_base_url="http://10.0.0.7/v1", **keyless)
    conn.commit()
    # the same rule on a change: the range allowed is not a pass for another internal address
    with pytest.raises(ValidationError) as err:
        update_base(conn, ADMIN, str(kb.id), UpdateKnowledgeBase(embedding_base_url="http://169.254.169.254/v1"),
                    vault=v)
    assert "embedding_base_url" in err.value.details["fields"]


def test_moving_a_bound_key_to_another_endpoint_is_a_new_binding(conn, vault, allow_endpoints):
    """Probed: a writer without secrets:view re-pointed a keyed base at his own server, and the
    next embedding call sent the organization's key there. Now the move clears the key, and an
    explicit request to keep it is refused, so nothing the key owner did not choose receives it."""
    v, ids = vault
    allow_endpoints("127.0.0.1")
    kb = create(conn, ANN, v, scope="org", embedding_secret_id=ids["acme-shared"], **OPENAI)
    conn.commit()
    with serving(FakeOpenAI()) as attacker:
        with pytest.raises(ValidationError) as err:
            update_base(conn, BEN, str(kb.id), UpdateKnowledgeBase(embedding_base_url=attacker.base_url,
                                                                   embedding_secret_id=ids["acme-shared"]), vault=v)
        assert "embedding_secret_id" in err.value.details["fields"]
        conn.rollback()

        moved = update_base(conn, BEN, str(kb.id), UpdateKnowledgeBase(embedding_base_url=attacker.base_url),
                            vault=v)
        conn.commit()
        assert (moved.embedding_base_url, moved.embedding_secret_id) == (attacker.base_url, None)

        # the next upload's embedding call, as the embed stage builds it from the stored base
        stored = kb_repo.get(conn, kb.id)
        assert stored is not None and stored.embedding_secret_id is None
        spec = EmbeddingSpec(stored.embedding_provider, stored.embedding_model, stored.embedding_dim,
                             base_url=stored.embedding_base_url, secret_id=stored.embedding_secret_id)
        secrets = SecretsManagerSecretReader(v._client)  # noqa: SLF001 - the moto client behind the vault
        clear_embedder_cache()
        build_embedder(spec, secrets=secrets).embed_documents(["quarterly numbers"])

    assert len(attacker.requests) == 1
    assert "Authorization" not in attacker.requests[0]["headers"]
