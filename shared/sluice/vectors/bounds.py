"""How long one search may hold the database (R-SRCH-8).

Every statement a search runs (the candidates of a collection or of a chat's attachments, the
filter values) runs under a statement timeout set for its transaction only: the server cancels a
statement past it, so nothing keeps running after the caller has given up, and the pooled connection
is rolled back and clean for the next request. The caller gets a 503 with a sentence.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from sluice.db.connection import Connection, set_statement_timeout
from sluice.errors import SearchTimeoutError

# API Gateway answers a request after 29 s whatever the function does; a search also embeds its query
# (a remote model may take seconds) and may rerank. 10 s for the database leaves both their share, and
# is 100 times the 100k-chunk p95 (bench/search_latency.py).
SEARCH_STATEMENT_TIMEOUT_MS = 10_000


def timeout_sentence(ms: int) -> str:
    return (f"This search took longer than the {ms / 1000:g} s Sluice allows one search in the database, and "
            "was stopped. Try fewer or more specific words, or a narrower filter.")


@contextmanager
def bounded(conn: Connection, ms: int | None = None) -> Iterator[None]:
    """Run the block's statements under the search's statement timeout; past it, SearchTimeoutError."""
    limit = SEARCH_STATEMENT_TIMEOUT_MS if ms is None else ms
    set_statement_timeout(conn, limit)
    try:
        yield
    except psycopg.errors.QueryCanceled as exc:
        raise SearchTimeoutError(timeout_sentence(limit)) from exc
