"""What every integration test shares: a connection to the test's own migrated database."""

from __future__ import annotations

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row


@pytest.fixture
def conn(db_url):
    """One connection; each test commits what it wants seen, as a request would."""
    with psycopg.connect(db_url, row_factory=dict_row, autocommit=False) as c:
        register_vector(c)
        yield c
