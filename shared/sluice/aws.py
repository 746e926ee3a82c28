"""AWS clients for the adapters, built once per process and never at import time.

Building a client reads the endpoint and credentials from the environment, which
the local runtime (moto) sets before the first handler runs.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

import boto3
from botocore.config import Config

from sluice.config import get_settings
from sluice.storage.s3 import ObjectStore

_lock = threading.Lock()


@lru_cache(maxsize=16)
def client(service: str) -> Any:
    with _lock:
        return boto3.session.Session().client(
            service, config=Config(retries={"mode": "standard", "max_attempts": 5}, signature_version="s3v4")
            if service == "s3" else Config(retries={"mode": "standard", "max_attempts": 5}),
        )


def object_store() -> ObjectStore:
    s = get_settings()
    return ObjectStore(client("s3"), s.bucket_name, s.kms_key_id)


def reset_clients() -> None:
    client.cache_clear()
