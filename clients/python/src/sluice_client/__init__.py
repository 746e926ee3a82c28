"""sluice-client: the Sluice HTTP API from Python, sync (``Sluice``) and async (``AsyncSluice``).

    from sluice_client import Sluice
    with Sluice("https://api.example.com", token="…") as sluice:
        doc = sluice.wait(sluice.upload(kb_id, "contract.pdf"))
        hits = sluice.search("penalty for late delivery", [doc.collection_name]).results
"""

from sluice_client import errors, models
from sluice_client._core import Op, RetryPolicy
from sluice_client.aio import AsyncSluice
from sluice_client.client import Sluice
from sluice_client.errors import (
    ApiError,
    Conflict,
    DocCapReached,
    Failed,
    FileTooLarge,
    IndexingPaused,
    NotFound,
    RateLimitExceeded,
    SluiceError,
    StorageRefused,
    Unauthorized,
    Unreachable,
    ValidationError,
    WaitTimeout,
)

__version__ = "0.1.0"
__all__ = [
    "ApiError", "AsyncSluice", "Conflict", "DocCapReached", "Failed", "FileTooLarge", "IndexingPaused", "NotFound",
    "RateLimitExceeded", "RetryPolicy", "Sluice", "SluiceError", "StorageRefused", "Unauthorized", "Unreachable",
    "Op", "ValidationError", "WaitTimeout", "errors", "models",
]
