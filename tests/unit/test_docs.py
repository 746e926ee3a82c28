"""The documentation site: its reference pages are what the code makes now (tools/gen_docs.py), a setting
added to sections.py without regenerating fails here, the README stays a front page whose links lead
somewhere, and `mkdocs build --strict` (make lint) fails on a broken link."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools import gen_docs

ROOT = Path(__file__).resolve().parents[2]


def test_the_checked_in_reference_pages_are_what_the_code_makes():
    assert gen_docs.stale_pages() == [], "run `make docs` (python tools/gen_docs.py) and commit docs/reference/"


def test_every_setting_of_sections_py_is_on_the_settings_page():
    page = (ROOT / "docs" / "reference" / "settings.md").read_text(encoding="utf-8")
    source = gen_docs.SECTIONS.read_text(encoding="utf-8")
    assert gen_docs.settings_missing(page, source) == []
    # Every alias the module declares was read (the parser misses none: a count from the text itself).
    aliases = set(re.findall(r'alias="([A-Z0-9_]+)"', source))
    assert {s.variable for sec in gen_docs.read_sections(source) for s in sec.settings} == aliases


def test_a_variable_added_to_sections_py_is_missing_from_the_page_until_it_is_regenerated():
    page = (ROOT / "docs" / "reference" / "settings.md").read_text(encoding="utf-8")
    source = gen_docs.SECTIONS.read_text(encoding="utf-8").replace(
        '    chat_model: str = Field("", alias="CHAT_MODEL")\n',
        '    chat_model: str = Field("", alias="CHAT_MODEL")\n'
        '    # How long one overview call may take.\n'
        '    chat_model_seconds: int = Field(30, ge=1, alias="CHAT_MODEL_SECONDS")\n')
    assert gen_docs.settings_missing(page, source) == ["CHAT_MODEL_SECONDS"]
    regenerated = gen_docs.settings_page(source)
    assert gen_docs.settings_missing(regenerated, source) == []
    assert "| `CHAT_MODEL_SECONDS` | `int` | `30` | How long one overview call may take. Allowed: ge 1. |" \
        in regenerated


def test_the_settings_page_gives_each_default_and_why():
    page = gen_docs.settings_page()
    assert "| `ARCHIVE_MAX_BYTES` | `int` | `200 * MIB (209,715,200)` |" in page
    assert "| `PRESIGN_EXPIRES_SECONDS` | `int` | `300` | Long enough to start a 50 MB upload" in page
    assert "Required: `SLUICE_BUCKET`." in page


def test_the_cli_page_has_every_command_of_the_parser():
    page = gen_docs.cli_page()
    for command in ("local up", "local token", "ingest", "search", "sync run", "drop", "collections",
                    "db migrate", "openapi", "model export", "mcp"):
        assert f"## `sluice {command}`" in page, command
    assert "| `--direct-limit" in page and "| `--transport {stdio,streamable-http}` | `stdio` |" in page


def test_the_error_page_has_every_code_of_errors_py():
    from sluice import errors

    page = gen_docs.errors_page()
    codes = {c.code for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.SluiceError)}
    assert codes and all(f"| `{code}` |" in page for code in codes)
    assert "| `SEARCH_TIMEOUT` | 503 | `SearchTimeoutError` |" in page


def test_the_api_page_has_every_operation_of_the_openapi_document():
    import json

    doc = json.loads(gen_docs.OPENAPI.read_text(encoding="utf-8"))
    page = gen_docs.http_api_page(doc)
    for path, operations in doc["paths"].items():
        for method in operations:
            assert f"### `{method.upper()} {path}`" in page


def test_the_readme_is_a_front_page_whose_links_lead_somewhere():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    assert len(targets) > 20
    assert [t for t in targets if not t.startswith("http") and not (ROOT / t).exists()] == []


def test_the_readme_walks_through_exactly_what_the_quickstart_runs():
    readme = gen_docs.marked_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    quickstart = gen_docs.marked_blocks((ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8"))
    assert readme["quickstart-curl"] == quickstart["quickstart-curl"]
    assert readme["quickstart-curl"][0] == "bash"


def test_marked_blocks_takes_the_block_after_each_marker_only():
    text = ("<!-- run: one (why) -->\n```bash\necho 1\n```\n\n```bash\nnot marked\n```\n"
            "<!-- run: two -->\n\n```python\nprint(2)\n```\n")
    assert gen_docs.marked_blocks(text) == {"one": ("bash", "echo 1\n"), "two": ("python", "print(2)\n")}


# --- the site ------------------------------------------------------------------------------------

def _site_copy(tmp_path: Path) -> Path:
    for name in ("mkdocs.yml", "SCALING.md", "ARCHITECTURE.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    return tmp_path


def _build(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder / "site")],
                          cwd=folder, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(folder)})


@pytest.mark.slow
def test_the_site_builds_strictly_and_a_broken_link_fails_the_build(tmp_path):
    pytest.importorskip("material", reason="mkdocs-material is not installed (make install installs the docs extra)")
    site = _site_copy(tmp_path)
    built = _build(site)
    assert built.returncode == 0, built.stderr
    assert (site / "site" / "reference" / "settings.html").exists()

    page = site / "docs" / "guides" / "search.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [the tuning page](tuning.md).\n", encoding="utf-8")
    broken = _build(site)
    assert broken.returncode != 0
    assert "guides/search.md" in broken.stderr and "tuning.md" in broken.stderr
