"""The local runtime's OCR settings: Tesseract by default, moto's Textract only when asked, and no AWS
layer place (/opt) where the distribution's tesseract finds its own data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sluice.local.runtime import LocalRuntime
from sluice.local.template import Resolver

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def environment() -> Iterator[None]:
    before = dict(os.environ)
    for name in ("SLUICE_OCR_PROVIDER", "TESSDATA_PREFIX"):
        os.environ.pop(name, None)
    yield
    os.environ.clear()
    os.environ.update(before)
    from sluice import wiring
    from sluice.config import reset_settings

    reset_settings()
    wiring.reset()


def applied(tmp_path: Path, shell: dict[str, str]) -> dict[str, str]:
    runtime = LocalRuntime(root=ROOT, data_dir=tmp_path, database_url="postgresql://local/unused")
    t = runtime.template
    runtime.resolve = Resolver(
        t, {n: f"local-{n}" for n in t.raw["Resources"]}, {(n, "Arn"): f"arn:local:{n}" for n in t.raw["Resources"]}
    )
    os.environ.update(shell)
    runtime._apply_environment()
    return dict(os.environ)


def test_locally_ocr_is_tesseract_with_its_own_data_folder(tmp_path, environment):
    env = applied(tmp_path, {})
    assert env["SLUICE_OCR_PROVIDER"] == "tesseract"
    assert "TESSDATA_PREFIX" not in env


def test_locally_the_shell_may_choose_textract_and_name_the_tessdata_folder(tmp_path, environment):
    env = applied(tmp_path, {"SLUICE_OCR_PROVIDER": "textract", "TESSDATA_PREFIX": "/usr/share/tessdata"})
    assert env["SLUICE_OCR_PROVIDER"] == "textract"
    assert env["TESSDATA_PREFIX"] == "/usr/share/tessdata"
