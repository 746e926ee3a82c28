"""Chat models behind one protocol: OpenAI-compatible chat completions and Amazon Bedrock Converse.

Used for attachment overviews (sluice.chat.overview) and image description: ``complete`` takes
images after the text for a vision-capable model, and ``chat_model_for`` builds a model from plain
values (a collection's own choice) through the same endpoint guard as the deployment's.
The deployment configures one (CHAT_MODEL_PROVIDER, CHAT_MODEL, CHAT_MODEL_BASE_URL,
CHAT_MODEL_SECRET_ID); ``none`` means no model, and callers fall back to what they can
do without one. A failure raises a ``ChatModelError`` whose message names no host, URL or key.
"""

from sluice.llm.bedrock import BedrockChatModel
from sluice.llm.build import build_chat_model, chat_model_for
from sluice.llm.openai import OpenAIChatModel
from sluice.llm.protocol import ChatModel, Completion, Image

__all__ = ["BedrockChatModel", "ChatModel", "Completion", "Image", "OpenAIChatModel", "build_chat_model",
           "chat_model_for"]
