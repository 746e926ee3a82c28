"""`sluice demo --web` (issue 38): the demo crawls a small site on loopback through a web source, finds a
page's words, and its second run asks each page whether it changed and downloads no body."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_web_demo_crawls_the_example_site_then_downloads_nothing_the_second_time():
    # The demo's own temporary directory (it removes it): the test's basetemp is too deep a path for
    # PostgreSQL's socket.
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("SYNC_ALLOWED_HOSTS", None)  # the demo allows loopback itself, for its own run only
    done = subprocess.run([sys.executable, "-m", "sluice.cli", "demo", "--web"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    first = re.search(r"first run: succeeded; listed 3, new 3, .*?(\d+) bytes downloaded", out)
    second = re.search(r"second run: succeeded; listed 3, new 0, updated 0, unchanged 3, failed 0, removed 0; "
                       r".*?(\d+) bytes downloaded", out)
    assert first and second, out
    assert int(first.group(1)) > 0 and int(second.group(1)) == 0
    assert "quillwort hitch" in out  # the mooring page answered its question
