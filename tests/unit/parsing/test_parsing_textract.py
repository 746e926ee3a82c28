"""The Textract OCR engine against moto's Textract (R-PARSE-7, ocr_provider textract).

moto answers every DetectDocumentText with the same canned blocks (``TextractBackend.BLOCKS``), so these
tests check the calls: one per page carrying that page's bytes, at most N at once, throttling and server
errors tried again with backoff, a page Textract refuses (or that stays throttled) counted as an error,
an image past Textract's limits refused before any call. Failures are injected through botocore's
``before-call`` event, which answers in place of moto exactly as an HTTP error from Textract would.
"""

from __future__ import annotations

import base64
import json
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from moto import mock_aws
from moto.textract.models import TextractBackend

from sluice.config import reset_settings
from sluice.parsing.ocr import PageImage
from sluice.parsing.textract import TEXTRACT_MAX_BYTES, TextractEngine, image_refusal, page_text, textract_engine
from sluice.retry import RetryPolicy

# A page as Textract answers it: the PAGE block lists its lines in reading order, which here is not the
# order the LINE blocks come in (a two-column page: the right column's line was found first).
CANNED = [
    {"BlockType": "PAGE", "Id": "p", "Relationships": [{"Type": "CHILD", "Ids": ["l1", "l2", "l3"]}]},
    {"BlockType": "LINE", "Id": "l3", "Text": "third line"},
    {"BlockType": "LINE", "Id": "l1", "Text": "Scanned contract"},
    {"BlockType": "WORD", "Id": "w1", "Text": "Scanned"},
    {"BlockType": "LINE", "Id": "l2", "Text": "second line"},
]
CANNED_TEXT = "Scanned contract\nsecond line\nthird line"


def png(width: int = 8, height: int = 8, shade: int = 0) -> bytes:
    """A real grey PNG; ``shade`` makes pages' bytes differ."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + bytes([shade % 256]) * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def pages(count: int) -> list[PageImage]:
    return [PageImage(number=i + 1, png=png(shade=i), dpi=300) for i in range(count)]


class Calls:
    """What reaches Textract: each DetectDocumentText's page bytes as sent (decoded from the request body),
    how many were in flight at once, and an optional answer given instead of moto's."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: list[bytes] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.answer: Callable[[bytes, int], tuple[int, str] | None] = lambda image, nth: None
        self.hold: threading.Barrier | None = None

    def before(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        image = base64.b64decode(json.loads(params["body"])["Document"]["Bytes"])
        with self.lock:
            self.sent.append(image)
            nth = sum(1 for s in self.sent if s == image)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        if self.hold is not None:
            self.hold.wait(timeout=10)
        failure = self.answer(image, nth)
        if failure is None:
            return None
        status, code = failure
        body = {"Error": {"Code": code, "Message": f"injected {code}"}, "ResponseMetadata": {"HTTPStatusCode": status}}
        return AWSResponse("https://textract.us-east-1.amazonaws.com/", status, {}, None), body

    def after(self, **_: Any) -> None:
        with self.lock:
            self.in_flight -= 1


@pytest.fixture
def canned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(TextractBackend, "BLOCKS", CANNED)


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch, canned: None) -> Iterator[Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield boto3.client(
            "textract", region_name="us-east-1", config=Config(retries={"mode": "standard", "max_attempts": 1})
        )


@pytest.fixture
def calls(client: Any) -> Calls:
    seen = Calls()
    client.meta.events.register("before-call.textract.DetectDocumentText", seen.before)
    client.meta.events.register("after-call.textract.DetectDocumentText", seen.after)
    return seen


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def engine(
    client: Any,
    *,
    concurrency: int = 1,
    attempts: int = 4,
    seconds: float = 60,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] | None = None,
) -> TextractEngine:
    options: dict[str, Any] = {
        "max_attempts": attempts,
        "base_delay": 0.4,
        "max_delay": 1.0,
        "total_seconds": seconds,
        "sleep": sleep or Sleeps(),
    }
    if clock is not None:
        options["clock"] = clock
    return textract_engine(client, max_concurrency=concurrency, retry=RetryPolicy(**options))


def test_each_page_is_one_call_with_its_own_bytes_and_its_lines_in_reading_order(client, calls):
    # GIVEN three rendered pages
    given = pages(3)

    # WHEN Textract reads them
    read = engine(client, concurrency=2).recognise(given, "eng")

    # THEN one DetectDocumentText each, carrying that page's PNG, and each page's lines come back in the
    # order Textract's PAGE block lists them, in the pages' order
    assert sorted(calls.sent) == sorted(p.png for p in given)
    assert [(r.number, r.text, r.error) for r in read] == [(n, CANNED_TEXT, None) for n in (1, 2, 3)]


def test_no_more_than_the_bound_are_in_flight_and_the_bound_is_used(client, calls):
    # GIVEN nine pages and a bound of three, each call held until three have arrived together
    calls.hold = threading.Barrier(3)

    # WHEN they are read
    read = engine(client, concurrency=3).recognise(pages(9), "eng")

    # THEN three calls ran at once (the barrier was never broken), never more, and every page was read
    assert not calls.hold.broken
    assert calls.most_in_flight == 3
    assert len(calls.sent) == 9
    assert all(r.text == CANNED_TEXT for r in read)


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, "ThrottlingException"),
        (400, "ProvisionedThroughputExceededException"),
        (400, "LimitExceededException"),
        (500, "InternalServerError"),
        (503, "SomethingNew"),
    ],
)
def test_throttling_and_server_errors_are_tried_again_with_backoff(client, calls, status, code):
    # GIVEN Textract answering the first two calls with a throttle or a server error
    calls.answer = lambda image, nth: (status, code) if nth <= 2 else None
    sleeps = Sleeps()

    # WHEN one page is read
    read = engine(client, attempts=4, sleep=sleeps).recognise(pages(1), "eng")

    # THEN it was sent three times, waiting between tries within the growing full-jitter ceilings
    # (base 0.4 s, then 0.8 s), and its text came back
    assert len(calls.sent) == 3
    assert len(sleeps.waits) == 2
    assert 0 <= sleeps.waits[0] <= 0.4 and 0 <= sleeps.waits[1] <= 0.8
    assert read[0].text == CANNED_TEXT and read[0].error is None


def test_a_page_still_throttled_after_its_tries_is_an_error_and_the_others_are_read(client, calls):
    # GIVEN Textract throttling every call for page 2 only
    given = pages(3)
    calls.answer = lambda image, nth: (400, "ThrottlingException") if image == given[1].png else None

    # WHEN the pages are read with three tries each
    read = engine(client, concurrency=2, attempts=3).recognise(given, "eng")

    # THEN page 2 was tried three times and comes back with no text and a sentence; 1 and 3 were read
    assert calls.sent.count(given[1].png) == 3
    assert read[1].number == 2 and read[1].text is None
    assert read[1].error == "Amazon Textract was still busy or failing after 3 tries, so the page was not read."
    assert [r.text for r in (read[0], read[2])] == [CANNED_TEXT, CANNED_TEXT]


@pytest.mark.parametrize(
    ("code", "sentence"),
    [
        ("BadDocumentException", "Amazon Textract could not read this page image."),
        ("UnsupportedDocumentException", "Amazon Textract does not support this page image's format."),
        ("InvalidParameterException", "Amazon Textract refused the page image as an invalid request."),
        ("DocumentTooLargeException", "The page image is larger than Amazon Textract reads in one call (10 MB)."),
    ],
)
def test_a_page_textract_refuses_is_not_tried_again_and_says_why(client, calls, code, sentence):
    # GIVEN Textract refusing page 1's image
    given = pages(2)
    calls.answer = lambda image, nth: (400, code) if image == given[0].png else None
    sleeps = Sleeps()

    # WHEN the pages are read
    read = engine(client, sleep=sleeps).recognise(given, "eng")

    # THEN page 1 was sent once, never again, and carries the sentence; page 2 was read
    assert calls.sent.count(given[0].png) == 1
    assert sleeps.waits == []
    assert (read[0].text, read[0].error) == (None, sentence)
    assert read[1].text == CANNED_TEXT


def test_an_image_past_textracts_limits_is_refused_before_any_call(client, calls):
    # GIVEN a page over 10 MB, one wider than 10,000 pixels, one that is no PNG or JPEG, and a good one
    oversized = png() + b"\x00" * (TEXTRACT_MAX_BYTES - len(png()) + 1)
    given = [
        PageImage(1, oversized, 300),
        PageImage(2, png(width=10_001, height=4), 300),
        PageImage(3, b"GIF89a" + b"\x00" * 32, 300),
        PageImage(4, png(shade=9), 300),
    ]

    # WHEN they are read
    read = engine(client).recognise(given, "eng")

    # THEN only the good page was sent; each other one says which limit it passed
    assert calls.sent == [given[3].png]
    assert read[0].text is None and read[0].error is not None and "10 MB" in read[0].error
    assert read[1].error == "The page image is 10001 x 4 pixels; Amazon Textract reads at most 10,000 pixels a side."
    assert read[2].error == "The page image is not a PNG or JPEG image, the formats Amazon Textract reads from bytes."
    assert read[3].text == CANNED_TEXT


def test_the_deadline_ends_the_retries_and_the_pages_not_yet_sent(client, calls):
    # GIVEN Textract throttling everything, and a clock that jumps 20 s with every wait of a 30 s deadline
    now = [0.0]
    calls.answer = lambda image, nth: (400, "ThrottlingException")

    def sleep(seconds: float) -> None:
        now[0] += 20

    # WHEN two pages are read one at a time with many tries allowed
    read = engine(client, attempts=50, seconds=30, sleep=sleep, clock=lambda: now[0]).recognise(pages(2), "eng")

    # THEN page 1 stopped trying when the deadline came, and page 2 was never sent
    assert 1 < len(calls.sent) < 50 and set(calls.sent) == {pages(2)[0].png}
    assert read[0].error == (
        "Amazon Textract was still busy or failing when OCR's 30 seconds for this "
        "document ran out, so the page was not read."
    )
    assert read[1].error == "OCR ran out of its 30 seconds for this document before the page was sent."


def test_a_deployment_textract_refuses_sends_no_further_page(client, calls):
    # GIVEN a role without textract:DetectDocumentText
    calls.answer = lambda image, nth: (400, "AccessDeniedException")

    # WHEN three pages are read one at a time
    read = engine(client).recognise(pages(3), "eng")

    # THEN one call was made, and every page says the deployment may not call Textract
    assert len(calls.sent) == 1
    assert {r.error for r in read} == {
        "This deployment may not call Amazon Textract (AccessDeniedException): check the stack's OcrProvider "
        "and the parse function's role."
    }
    assert all(r.text is None for r in read)


def test_languages_are_textracts_own_and_the_settings_give_the_bounds(client, monkeypatch):
    # GIVEN the deployment's settings
    monkeypatch.setenv("TEXTRACT_MAX_CONCURRENCY", "7")
    monkeypatch.setenv("TEXTRACT_SECONDS", "45")
    reset_settings()
    try:
        # WHEN the engine is built from them
        built = textract_engine(client)
    finally:
        reset_settings()

    # THEN it takes no languages, and its bound and deadline are the settings'
    assert built.name == "textract"
    assert built.languages() is None
    assert built._concurrency == 7
    assert built._retry.total_seconds == 45


def test_lines_no_page_block_names_follow_in_the_answers_order():
    answer = {
        "Blocks": [
            {"BlockType": "LINE", "Id": "b", "Text": "first"},
            {"BlockType": "LINE", "Id": "a", "Text": "second"},
        ]
    }
    assert page_text(answer) == "first\nsecond"
    assert page_text({"Blocks": []}) == ""


def test_a_jpegs_size_is_read_from_its_frame_header():
    def jpeg(width: int, height: int) -> bytes:
        app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x01\x01\x00\x00\x01\x00\x01\x00\x00"
        sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
        return b"\xff\xd8" + app0 + sof + b"\xff\xd9"

    assert image_refusal(jpeg(2480, 3508)) is None
    assert image_refusal(jpeg(12_000, 100)) == (
        "The page image is 12000 x 100 pixels; Amazon Textract reads at most 10,000 pixels a side."
    )
