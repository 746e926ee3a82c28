"""The local runtime applies the template's function environment to this process (every function is
a thread of it): INDEXING_PAUSED_PARAMETER, the queue URLs, DATABASE_URL... Each module here gives the
environment back as it found it (set up before the module's runtime, torn down after it), so no
later test in the same worker runs as a deployed function."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="module")
def _environment_restored() -> Iterator[None]:
    before = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(before)
    from sluice import wiring
    from sluice.config import reset_settings

    reset_settings()
    wiring.reset()
