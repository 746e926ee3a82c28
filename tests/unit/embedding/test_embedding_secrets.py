"""Reading a collection's embedding key from Secrets Manager."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber

from sluice.embedding import SecretsManagerSecretReader, api_key_from_secret

SECRET_ID = "sluice/org-1/openai"


@pytest.mark.parametrize(
    ("stored", "key"),
    [
        ("sk-plain", "sk-plain"),
        (" sk-padded\n", "sk-padded"),
        (json.dumps({"api_key": "sk-json"}), "sk-json"),
    ],
)
def test_a_key_is_stored_plain_or_as_json(stored, key):
    assert api_key_from_secret(stored) == key


@pytest.mark.parametrize("stored", ["", "   ", json.dumps({"apiKey": "x"}), json.dumps({"api_key": ""})])
def test_a_secret_without_a_key_is_refused(stored):
    with pytest.raises(LookupError):
        api_key_from_secret(stored)


def test_the_reader_keeps_a_key_until_it_is_forgotten():
    client = boto3.client(
        "secretsmanager",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    answer = {
        "ARN": f"arn:aws:secretsmanager:us-east-1:123456789012:secret:{SECRET_ID}-AbCdEf",
        "Name": SECRET_ID,
        "SecretString": json.dumps({"api_key": "sk-one"}),
    }
    with Stubber(client) as stub:
        stub.add_response("get_secret_value", answer, {"SecretId": SECRET_ID})
        stub.add_response("get_secret_value", {**answer, "SecretString": "sk-two"}, {"SecretId": SECRET_ID})
        reader = SecretsManagerSecretReader(client)

        # one call serves both reads; after forget() the rotated key is read
        assert reader.get_secret(SECRET_ID) == "sk-one"
        assert reader.get_secret(SECRET_ID) == "sk-one"
        reader.forget(SECRET_ID)
        assert reader.get_secret(SECRET_ID) == "sk-two"
        stub.assert_no_pending_responses()
