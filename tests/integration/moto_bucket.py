"""The moto bucket an integration test's stages and services store objects in (the ``bucket``
fixture makes one), and the S3 events a queue would carry for its objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sluice.ingest.events import ObjectEvent
from sluice.storage import ObjectStore


@dataclass
class Bucket:
    s3: Any
    name: str
    key_id: str
    store: ObjectStore

    def keys(self, prefix: str) -> list[str]:
        listed = self.s3.list_objects_v2(Bucket=self.name, Prefix=prefix)
        return [o["Key"] for o in listed.get("Contents", [])]

    def event(self, key: str, *, created: bool = True) -> ObjectEvent:
        """The S3 event a queue would carry for ``key`` as it is now."""
        head = self.store.head(key)
        return ObjectEvent(key=key, created=created, etag=head.etag if head else None,
                           size=head.size if head else None, sequencer=None)
