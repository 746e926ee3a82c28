"""Bedrock Converse through an injected client: the message shape, retries, and failures by code."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from sluice.config import get_settings
from sluice.errors import ChatModelAuthenticationError, ChatModelRefusedError, ChatModelUnavailableError
from sluice.llm import BedrockChatModel, Image, build_chat_model
from sluice.retry import RetryPolicy

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"


class FakeBedrock:
    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    def converse(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "internal detail"}}, "Converse")


def reply(text: str, stop: str = "end_turn") -> dict[str, Any]:
    return {"output": {"message": {"role": "assistant", "content": [{"text": text}]}}, "stopReason": stop}


def bedrock(client: FakeBedrock) -> BedrockChatModel:
    return BedrockChatModel(MODEL, client=client, retry=RetryPolicy(max_attempts=3, sleep=lambda _: None))


def test_converse_gets_the_system_the_message_and_the_bound():
    client = FakeBedrock(reply(" an overview "))
    completion = bedrock(client).complete("system rules", "the text", max_tokens=300)
    assert completion.text == "an overview" and not completion.truncated
    assert client.calls == [{"modelId": MODEL, "system": [{"text": "system rules"}],
                             "messages": [{"role": "user", "content": [{"text": "the text"}]}],
                             "inferenceConfig": {"maxTokens": 300, "temperature": 0}}]


def test_throttling_is_retried_and_max_tokens_is_reported():
    client = FakeBedrock(error("ThrottlingException"), reply("ok", stop="max_tokens"))
    completion = bedrock(client).complete("s", "u", max_tokens=5)
    assert completion.truncated and len(client.calls) == 2


@pytest.mark.parametrize(("code", "failure", "tries"), [
    ("AccessDeniedException", ChatModelAuthenticationError, 1),
    ("ValidationException", ChatModelRefusedError, 1),
    ("ServiceUnavailableException", ChatModelUnavailableError, 3),
])
def test_failures_by_code(code, failure, tries):
    client = FakeBedrock(*[error(code)] * 3)
    with pytest.raises(failure) as failed:
        bedrock(client).complete("s", "u", max_tokens=5)
    assert len(client.calls) == tries and "internal detail" not in failed.value.message


def test_the_settings_build_a_bedrock_model_with_the_injected_client():
    client = FakeBedrock()
    settings = get_settings().model_copy(update={"chat_model_provider": "bedrock", "chat_model": MODEL})
    built = build_chat_model(settings, bedrock_client=client)
    assert isinstance(built, BedrockChatModel) and built.model == MODEL


def test_images_go_after_the_text_as_image_blocks():
    client = FakeBedrock(reply("a bar chart of revenue by quarter"))
    bedrock(client).complete("Describe the image.", "page 3", max_tokens=100, images=[Image(b"png-bytes")])
    assert client.calls[0]["messages"] == [{"role": "user", "content": [
        {"text": "page 3"}, {"image": {"format": "png", "source": {"bytes": b"png-bytes"}}}]}]
