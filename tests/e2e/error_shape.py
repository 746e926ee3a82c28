"""R-ERR-1 as one check the HTTP tests share: the shape of every error body, and what none may show."""

from __future__ import annotations

import json
from typing import Any

# What no error body may show (R-ERR-1): SQL, a stack trace, a host, a bucket, a key.
LEAKS = ("traceback", "select ", "insert into", "psycopg", "sqlstate", 'file "', "127.0.0.1", "localhost",
         "s3://", "amazonaws.com", "arn:aws", "akia")


def r_err_1(response: Any) -> list[str]:
    """What is wrong with an error answer's body, against R-ERR-1."""
    try:
        body = json.loads(response.content)
    except ValueError:
        return [f"an error body that is not JSON: {response.content[:200]!r}"]
    problems = []
    error = body.get("error") if isinstance(body, dict) else None
    if set(body) != {"error"} or not isinstance(error, dict) or set(error) != {"code", "message", "details"}:
        return [f"not the R-ERR-1 shape: {body!r:.300}"]
    if not (isinstance(error["code"], str) and error["code"].isupper() and isinstance(error["message"], str)
            and error["message"] and isinstance(error["details"], dict)):
        problems.append(f"code, message or details of the wrong kind: {error!r:.300}")
    fields = error["details"].get("fields")
    if fields is not None and not (isinstance(fields, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in fields.items())):
        problems.append(f"details.fields is not a map of field to sentence: {fields!r:.300}")
    if response.status_code in (400, 422) and error["code"] == "VALIDATION_ERROR" and not fields:
        problems.append("a validation error that names no field")
    # The sentences, not the field names (embedding_secret_id is a field, not a secret).
    text = " ".join([error["message"], *(fields or {}).values()]).lower()
    problems += [f"the error shows {leak!r}: {text[:300]}" for leak in LEAKS if leak in text]
    return problems
