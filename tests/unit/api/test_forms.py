"""A file sent in the request is refused over the direct-upload limit, or over the route's own
ceiling when that is lower, naming the presigned route that takes it."""

from __future__ import annotations

import pytest

from sluice.api.forms import fit_a_direct_upload
from sluice.config import reset_settings
from sluice.errors import FileTooLargeError

MIB = 1024 * 1024


@pytest.fixture
def direct_limit_mb(monkeypatch: pytest.MonkeyPatch):
    def set_to(mb: int) -> None:
        monkeypatch.setenv("DIRECT_UPLOAD_MAX_MB", str(mb))
        reset_settings()

    yield set_to
    monkeypatch.delenv("DIRECT_UPLOAD_MAX_MB", raising=False)
    reset_settings()


def test_a_file_at_the_direct_limit_is_taken_and_one_byte_more_is_refused_naming_the_presigned_route(
        direct_limit_mb) -> None:
    direct_limit_mb(4)
    fit_a_direct_upload(b"a" * (4 * MIB), ceiling_mb=50, presigned_route="/kb/{kb_id}/uploads")

    with pytest.raises(FileTooLargeError) as refused:
        fit_a_direct_upload(b"a" * (4 * MIB + 1), ceiling_mb=50, presigned_route="/kb/{kb_id}/uploads")

    assert refused.value.details == {"limit_bytes": 4 * MIB}
    assert str(refused.value) == ("Direct uploads take files up to 4 MB; for larger files (up to 50 MB) use "
                                  "POST /kb/{kb_id}/uploads.")


def test_a_ceiling_under_the_direct_limit_is_the_limit(direct_limit_mb) -> None:
    direct_limit_mb(6)

    with pytest.raises(FileTooLargeError) as refused:
        fit_a_direct_upload(b"a" * (5 * MIB + 1), ceiling_mb=5, presigned_route="/files/uploads",
                            larger="chat files")

    assert refused.value.details == {"limit_bytes": 5 * MIB}
    assert str(refused.value) == ("Direct uploads take files up to 5 MB; for larger chat files (up to 5 MB) use "
                                  "POST /files/uploads.")
