"""The S3 adapter. Every write names SSE-KMS and the configured key (R-UP-4)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from botocore.exceptions import ClientError

from sluice.errors import StoredFileMissingError
from sluice.storage.keys import safe_filename

_MISSING = ("404", "NoSuchKey", "NotFound")


def _missing() -> StoredFileMissingError:
    return StoredFileMissingError("The stored file is gone; upload the document again.")


@dataclass(frozen=True)
class StoredObject:
    key: str
    size: int
    etag: str
    metadata: dict[str, str]


class ObjectStore:
    def __init__(self, s3_client: Any, bucket: str, kms_key_id: str) -> None:
        self._s3 = s3_client
        self.bucket = bucket
        self.kms_key_id = kms_key_id

    def _key(self) -> str:
        """The stack's key, which every write names: the bucket policy denies a write that does not
        (one asking for aws:kms without a key id would get the aws/s3 managed key)."""
        if not self.kms_key_id:
            raise RuntimeError("SLUICE_KMS_KEY_ID is not set: the bucket accepts only writes that name "
                               "the stack's KMS key (template.yaml DocumentsBucketPolicy).")
        return self.kms_key_id

    def _sse(self) -> dict[str, str]:
        return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self._key()}

    def put(
        self,
        key: str,
        body: bytes,
        *,
        content_type: str = "application/octet-stream",
        metadata: dict[str, str] | None = None,
        only_if_absent: bool = False,
    ) -> bool:
        """Write an object; with ``only_if_absent`` an existing key is left alone and False returned."""
        args: dict[str, Any] = {
            "Bucket": self.bucket,
            "Key": key,
            "Body": body,
            "ContentType": content_type,
            "Metadata": metadata or {},
            **self._sse(),
        }
        if only_if_absent:
            args["IfNoneMatch"] = "*"
        try:
            self._s3.put_object(**args)
        except ClientError as exc:
            if only_if_absent and exc.response["Error"]["Code"] in ("PreconditionFailed", "412"):
                return False
            raise
        return True

    def copy(self, source: str, key: str, *, metadata: dict[str, str] | None = None) -> None:
        """A server-side copy within the bucket, written under SSE-KMS like every other write."""
        self._s3.copy_object(
            Bucket=self.bucket, Key=key, CopySource={"Bucket": self.bucket, "Key": source},
            MetadataDirective="REPLACE", Metadata=metadata or {}, **self._sse(),
        )

    def _get_object(self, key: str) -> Any:
        try:
            return self._s3.get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response["Error"]["Code"] in _MISSING:
                raise _missing() from None
            raise

    def get(self, key: str) -> bytes:
        """The object's bytes; an absent key raises ``StoredFileMissingError``."""
        data: bytes = self._get_object(key)["Body"].read()
        return data

    def get_limited(self, key: str, max_bytes: int) -> tuple[bytes, int]:
        """Read at most ``max_bytes`` + 1 bytes: the caller learns it is too big without holding it all."""
        resp = self._get_object(key)
        size = int(resp["ContentLength"])
        body = resp["Body"].read(max_bytes + 1)
        resp["Body"].close()
        return body, size

    def head(self, key: str) -> StoredObject | None:
        try:
            resp = self._s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response["Error"]["Code"] in _MISSING:
                return None
            raise
        return StoredObject(key, int(resp["ContentLength"]), resp["ETag"].strip('"'), resp.get("Metadata", {}))

    def first_key(self, prefix: str) -> str | None:
        """The first key under ``prefix``, or None: a listing, so it needs no read of any object."""
        listed = self._s3.list_objects_v2(Bucket=self.bucket, Prefix=prefix, MaxKeys=1)
        contents = listed.get("Contents") or []
        return str(contents[0]["Key"]) if contents else None

    def exists(self, key: str) -> bool:
        """Whether ``key`` is stored, by listing (the reaper may list the bucket, not read it)."""
        return self.first_key(key) == key

    def delete(self, key: str) -> None:
        self._s3.delete_object(Bucket=self.bucket, Key=key)

    def delete_many(self, keys: Iterable[str]) -> list[str]:
        """Delete the keys, 1,000 a DeleteObjects call; an absent key is deleted already.
        Returns the keys S3 refused to delete (none, normally)."""
        refused: list[str] = []
        batch: list[dict[str, str]] = []
        for key in keys:
            batch.append({"Key": key})
            if len(batch) == 1000:
                refused += self._delete_objects(batch)
                batch = []
        if batch:
            refused += self._delete_objects(batch)
        return refused

    def _delete_objects(self, batch: list[dict[str, str]]) -> list[str]:
        # Quiet: the answer lists only the keys that could not be deleted.
        resp = self._s3.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
        return [str(e["Key"]) for e in resp.get("Errors", [])]

    def listed(self, prefix: str) -> dict[str, int]:
        """Every key under ``prefix`` with its size in bytes (ListObjectsV2, a page of 1,000 at a time)."""
        found: dict[str, int] = {}
        args: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        while True:
            resp = self._s3.list_objects_v2(**args)
            for item in resp.get("Contents", []):
                found[str(item["Key"])] = int(item["Size"])
            if not resp.get("IsTruncated"):
                return found
            args["ContinuationToken"] = resp["NextContinuationToken"]

    def presigned_post(self, key: str, *, max_bytes: int, expires_in: int, metadata: dict[str, str]
                       ) -> dict[str, Any]:
        """A POST policy pinning the key, the size range and SSE-KMS with the stack's key (R-UP-2)."""
        sse = {"x-amz-server-side-encryption": "aws:kms", "x-amz-server-side-encryption-aws-kms-key-id": self._key()}
        fields: dict[str, str] = dict(sse)
        conditions: list[Any] = [["content-length-range", 1, max_bytes], *({k: v} for k, v in sse.items())]
        for name, value in metadata.items():
            fields[f"x-amz-meta-{name}"] = value
            conditions.append({f"x-amz-meta-{name}": value})
        post = self._s3.generate_presigned_post(
            Bucket=self.bucket, Key=key, Fields=fields, Conditions=conditions, ExpiresIn=expires_in
        )
        return {"url": post["url"], "fields": post["fields"], "expires_in": expires_in}

    def presigned_get(self, key: str, *, expires_in: int, filename: str) -> str:
        url: str = self._s3.generate_presigned_url(
            "get_object",
            Params={"Bucket": self.bucket, "Key": key, "ResponseContentDisposition": attachment(filename)},
            ExpiresIn=expires_in,
        )
        return url


def attachment(filename: str) -> str:
    """A Content-Disposition that names the file and nothing else (RFC 6266).

    The stored name is the user's: a quote in it, written inside ``filename="…"``,
    would close the value and let the rest add parameters. ``filename`` gets the
    storage-safe ASCII form (no quote, no backslash, no control character) for old
    clients, and ``filename*`` the exact name, percent-encoded as UTF-8.
    """
    ascii_name = safe_filename(unicodedata.normalize("NFKD", filename).encode("ascii", "ignore").decode())
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}"
