"""The embedding refusals: what the tracking row and an API answer may say (R-DOC-4, R-ERR-1)."""

from __future__ import annotations

import pytest

from sluice import errors
from sluice.errors import EmbeddingCallError, EmbeddingError, SluiceError

# Each refusal and the name R-DOC-4's summary gives it, written out.
KINDS = {
    errors.EmbeddingAuthenticationError: "AuthenticationError",
    errors.EmbeddingCredentialMissingError: "CredentialMissingError",
    errors.EmbeddingRateLimitedError: "RateLimitedError",
    errors.EmbeddingProviderError: "ProviderError",
    errors.EmbeddingModelNotServedError: "ModelNotServedError",
    errors.EmbeddingInputRejectedError: "InputRejectedError",
    errors.EmbeddingResponseError: "ResponseError",
    errors.EmbeddingEndpointRefusedError: "EndpointRefusedError",
}
REFUSALS = list(KINDS)


@pytest.mark.parametrize("refusal, kind", list(KINDS.items()))
def test_each_refusal_summarises_as_r_doc_4_asks(refusal, kind):
    error = refusal("openai", "text-embedding-3-small")

    assert isinstance(error, EmbeddingError) and isinstance(error, SluiceError)
    assert error.kind == kind
    assert error.summary().startswith(f"The document could not be indexed ({kind}) - ")
    assert error.summary().endswith(", then retry the upload. The worker log has the full error.")
    assert error.summary(stage="searched").startswith(f"The document could not be searched ({kind})")
    assert error.body() == {
        "error": {
            "code": "EMBEDDING_FAILED",
            "message": str(error),
            "details": {"provider": "openai", "model": "text-embedding-3-small", "kind": kind},
        }
    }
    assert error.status == 502


def test_only_waiting_can_cure_a_transient_refusal():
    transient = {r.__name__ for r in REFUSALS if r.transient}
    assert transient == {"EmbeddingRateLimitedError", "EmbeddingProviderError"}
    assert not EmbeddingCallError.transient


def test_the_r_doc_4_example_is_word_for_word():
    assert errors.EmbeddingAuthenticationError("bedrock", "amazon.titan-embed-text-v2:0").summary() == (
        "The document could not be indexed (AuthenticationError) - check the collection's embedding "
        "credential, then retry the upload. The worker log has the full error."
    )
