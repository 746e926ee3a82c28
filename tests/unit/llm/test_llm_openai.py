"""OpenAI-compatible chat completions: retried, bounded, guarded, and failing without leaking."""

from __future__ import annotations

import httpx
import pytest

from sluice.config import get_settings
from sluice.embedding.endpoints import EndpointPolicy, guarded_http_client
from sluice.errors import (
    ChatModelAuthenticationError,
    ChatModelRateLimitedError,
    ChatModelRefusedError,
    ChatModelResponseError,
    ChatModelUnavailableError,
)
from sluice.llm import Image, OpenAIChatModel, build_chat_model, chat_model_for
from sluice.llm.build import ChatModelSettingError
from sluice.retry import RetryPolicy
from tests.fakes import FakeChatServer, Reply, serving

LOOPBACK = EndpointPolicy.parse("127.0.0.1")


class Secrets:
    def __init__(self) -> None:
        self.read: list[str] = []

    def get_secret(self, secret_id: str) -> str:
        self.read.append(secret_id)
        return '{"api_key": "sk-test-123"}'


@pytest.fixture
def server():
    with serving(FakeChatServer()) as s:
        yield s


def model(server, *, policy=LOOPBACK, attempts=3, waits=None, **kwargs):
    client = guarded_http_client(policy, timeout=httpx.Timeout(5.0))
    retry = RetryPolicy(max_attempts=attempts, base_delay=0.01, total_seconds=30,
                        sleep=(waits.append if waits is not None else (lambda _: None)))
    return OpenAIChatModel("small-model", http_client=client, base_url=server.base_url, retry=retry, **kwargs)


def test_a_completion_with_the_system_and_user_messages_and_the_key(server):
    secrets = Secrets()
    completion = model(server, secret_id="chat-key", secrets=secrets).complete(
        "You summarise one part of a document.", "<<< text >>>", max_tokens=120)
    assert completion.text.startswith("map summary 1:") and not completion.truncated
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["messages"] == [{"role": "system", "content": "You summarise one part of a document."},
                                           {"role": "user", "content": "<<< text >>>"}]
    assert request["body"]["max_tokens"] == 120 and request["body"]["temperature"] == 0
    assert request["headers"]["Authorization"] == "Bearer sk-test-123" and secrets.read == ["chat-key"]


def test_a_completion_stopped_at_max_tokens_says_so(server):
    server.script = [Reply(body={"choices": [{"finish_reason": "length", "message": {"content": " cut "}}]})]
    completion = model(server).complete("s", "u", max_tokens=5)
    assert completion.text == "cut" and completion.truncated


def test_rate_limits_are_retried_after_the_providers_wait(server):
    waits: list[float] = []
    server.script = [Reply(status=429, headers={"Retry-After": "2"}), Reply()]
    assert model(server, waits=waits).complete("s", "u", max_tokens=5).text
    assert len(server.requests) == 2 and 2 <= waits[0] < 2.1


@pytest.mark.parametrize(("status", "error", "tries"), [
    (401, ChatModelAuthenticationError, 1),
    (404, ChatModelRefusedError, 1),
    (400, ChatModelRefusedError, 1),
    (503, ChatModelUnavailableError, 3),
    (429, ChatModelRateLimitedError, 3),
])
def test_failures_are_classed_retried_only_when_transient_and_name_no_endpoint(server, status, error, tries):
    server.script = [Reply(status=status, body={"error": {"message": "secret internal detail"}})] * 3
    with pytest.raises(error) as failed:
        model(server).complete("s", "u", max_tokens=5)
    assert len(server.requests) == tries
    assert failed.value.transient == (tries > 1)
    assert "127.0.0.1" not in failed.value.message and "secret internal" not in failed.value.message


def test_an_answer_that_is_no_completion_is_refused(server):
    server.script = [Reply(body={"data": []})]
    with pytest.raises(ChatModelResponseError):
        model(server).complete("s", "u", max_tokens=5)


def test_an_endpoint_inside_the_network_is_not_reached_unless_allowed(server):
    with pytest.raises(ChatModelRefusedError):
        model(server, policy=EndpointPolicy()).complete("s", "u", max_tokens=5)
    assert server.requests == []


def test_the_deployment_settings_choose_the_model():
    settings = get_settings()
    assert build_chat_model(settings.model_copy(update={"chat_model_provider": "none"})) is None
    with pytest.raises(ChatModelSettingError, match="CHAT_MODEL"):
        build_chat_model(settings.model_copy(update={"chat_model_provider": "openai", "chat_model": ""}))
    with pytest.raises(ChatModelSettingError, match="CHAT_MODEL_BASE_URL"):
        build_chat_model(settings.model_copy(update={"chat_model_provider": "openai", "chat_model": "m",
                                                     "chat_model_base_url": "file:///etc/passwd"}))
    built = build_chat_model(settings.model_copy(update={"chat_model_provider": "openai", "chat_model": "m"}))
    assert isinstance(built, OpenAIChatModel) and built.model == "m"


def test_images_go_after_the_text_as_data_urls(server):
    # The vision call of image description (issue 18) uses the same protocol.
    png = b"\x89PNG\r\n\x1a\nfake-bytes"
    completion = model(server).complete("Describe the image.", "<<< page 3 >>>", max_tokens=50,
                                        images=[Image(png), Image(b"\xff\xd8jpeg", "jpeg")])
    assert completion.text
    [request] = server.requests
    assert request["body"]["messages"][1] == {"role": "user", "content": [
        {"type": "text", "text": "<<< page 3 >>>"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgpmYWtlLWJ5dGVz"}},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9hqcGVn"}},
    ]}


def test_a_model_from_plain_values_keeps_the_endpoint_guard(server):
    # A collection's own choice (issue 18) is built from plain values, through the same guarded client.
    built = chat_model_for("openai", "vision-model", base_url=server.base_url)
    with pytest.raises(ChatModelRefusedError):
        built.complete("s", "u", max_tokens=5)
    assert server.requests == []
    with pytest.raises(ChatModelSettingError):
        chat_model_for("openai", "vision-model", base_url="ftp://example.com")
    with pytest.raises(ChatModelSettingError):
        chat_model_for("mystery", "vision-model")
