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

from sluice.config import AwsSettings, BucketSettings, EncryptionSettings, current
from sluice.storage.s3 import ObjectStore

_lock = threading.Lock()


@lru_cache(maxsize=16)
def client(service: str) -> Any:
    retries = Config(retries={"mode": "standard", "max_attempts": 5})
    config = retries.merge(Config(signature_version="s3v4")) if service == "s3" else retries
    with _lock:
        return boto3.session.Session().client(service, endpoint_url=current(AwsSettings).aws_endpoint_url or None,
                                              config=config)


def object_store() -> ObjectStore:
    return ObjectStore(client("s3"), current(BucketSettings).bucket_name, current(EncryptionSettings).kms_key_id)


@lru_cache(maxsize=1)
def _parameters() -> Any:
    from aws_lambda_powertools.utilities.parameters import SSMProvider

    return SSMProvider(boto3_client=client("ssm"))


def parameter_value(name: str, *, max_age: int, provider: Any = None) -> str | None:
    """An SSM parameter's value, cached ``max_age`` seconds by Powertools; ``None`` if it does not exist."""
    from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

    try:
        value = (provider or _parameters()).get(name, max_age=max_age)
    except GetParameterError as exc:
        if "ParameterNotFound" in repr(exc.__cause__) or "ParameterNotFound" in str(exc):
            return None
        raise
    return None if value is None else str(value)


def reset_clients() -> None:
    client.cache_clear()
    _parameters.cache_clear()
