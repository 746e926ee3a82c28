"""The describe step (R-PARSE-6): a PDF's images described by the collection's vision model, each
description put in the text where its pages show the image, then the parsed-text artifact.

The parse stage runs it only when the collection has image description on and the PDF shows
images: its artifact ``stage/images/<doc>.<attempt>.json`` (the text, the distinct images, already
downscaled to the model's limit, and where each page shows one) runs this step. It runs in the
embed function (the pipeline's outbound model caller, with a 900-second limit) rather than in the
parse function, whose 300 seconds cannot hold 50 vision calls and their retries.

Calls run ``IMAGE_DESCRIPTION_CONCURRENCY`` at a time, each within the vision retry policy (a 429
or a 5xx is retried with backoff, the provider's Retry-After first); the step gives up on what it
has not started after ``IMAGE_DESCRIPTION_SECONDS``. The stage progress is ``describing n/m``. A
failed or refused description never fails the document: the image goes undescribed, and the
row records how many were described, how many not, and why.
"""

from __future__ import annotations

import base64
import logging
import re
import time
import uuid
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from sluice.access.vision import ImageDescriptionChoice
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db.documents import Document
from sluice.errors import ChatModelError
from sluice.ingest.artifacts import ArtifactImage, ImagesText, ParsedText, read_images, write_parsed_text
from sluice.ingest.runner import StageContext, StaleEvent, run_stage
from sluice.llm import ChatModel, Image
from sluice.llm.protocol import ImageFormat
from sluice.retry import RetryPolicy
from sluice.storage import content_key

log = logging.getLogger("sluice.ingest")

# One vision call with its retries: a 429 or 5xx is tried again up to four times within two minutes.
VISION_RETRY = RetryPolicy(max_attempts=4, base_delay=1.0, max_delay=20.0, total_seconds=120.0)
SYSTEM = ("You describe images taken from documents so that what they show can be found by a text search. "
          "Name what the image is (chart, diagram, photo, screenshot, table, logo), transcribe its title, labels, "
          "legend and any numbers, and say what it shows. Plain prose, no preamble, no markdown.")
PROMPT = "Describe this image from page {page} of the document in at most 120 words."
MAX_TOKENS = 400
MAX_DESCRIPTION_CHARS = 1500

OVER_CAP = "more images than the {cap} a document may have described"
UNREADABLE = "the image could not be read from the PDF"
TIME_RAN_OUT = "the time for describing images ran out"
TURNED_OFF = "image description was turned off for the collection"
NOT_SET_UP = "the vision model could not be set up"
EMPTY = "the vision model answered with no description"
FAILED = "the vision model failed: {happened}"


def describe_document(ctx: StageContext, doc_id: uuid.UUID, attempt: int) -> None:
    run_stage(ctx, doc_id, attempt, "describing", lambda doc: _describe(ctx, doc, attempt))


@dataclass
class Outcome:
    descriptions: dict[int, str] = field(default_factory=dict)
    reasons: Counter[str] = field(default_factory=Counter)

    def fail(self, reason: str, count: int = 1) -> None:
        if count > 0:
            self.reasons[reason] += count


def _describe(ctx: StageContext, doc: Document, attempt: int) -> None:
    artifact = read_images(ctx.store, doc.id, attempt)
    with ctx.uow() as conn:
        kb = kb_repo.get(conn, doc.kb_id) if doc.kb_id else None
    if kb is None:
        raise StaleEvent(str(doc.id))
    outcome = Outcome()
    outcome.fail(OVER_CAP.format(cap=ctx.settings.image_description_max_per_doc), artifact.images_over_cap)
    outcome.fail(UNREADABLE, artifact.images_unreadable)
    choice = ImageDescriptionChoice.of(kb.ingestion_config)
    model = None
    if choice is None:
        outcome.fail(TURNED_OFF, len(artifact.images))
    else:
        try:
            if ctx.vision_model_for is None:
                raise ValueError("no vision model factory in this context")
            model = ctx.vision_model_for(choice)
        except Exception:
            log.exception("could not build the vision model", extra={"document_id": str(doc.id)})
            outcome.fail(NOT_SET_UP, len(artifact.images))
    if model is not None:
        _describe_images(ctx, doc.id, attempt, model, artifact, outcome)
    total = len(artifact.images) + artifact.images_over_cap + artifact.images_unreadable
    described = len(outcome.descriptions)
    note = undescribed_note(total - described, total, outcome.reasons)
    parsed = with_descriptions(artifact, outcome.descriptions)
    with ctx.uow() as conn:
        if not doc_repo.update(conn, doc.id, expect_attempt=attempt, images_described=described,
                               images_undescribed=total - described, image_note=note):
            raise StaleEvent(str(doc.id))
    ctx.store.put(content_key(doc.id), parsed.text.encode(), content_type="text/plain; charset=utf-8")
    write_parsed_text(ctx.store, parsed)


def undescribed_note(undescribed: int, total: int, reasons: Counter[str]) -> str | None:
    """"3 of 12 images were not described: the vision model refused the request." (None when all were.)"""
    if undescribed <= 0:
        return None
    verb = "was" if undescribed == 1 else "were"
    head = f"{undescribed} of {total} image{'s' if total != 1 else ''} {verb} not described"
    if len(reasons) == 1:
        return f"{head}: {next(iter(reasons))}."
    return f"{head}: " + "; ".join(f"{count} because {reason}" for reason, count in reasons.most_common()) + "."


def _describe_images(ctx: StageContext, doc_id: uuid.UUID, attempt: int, model: ChatModel,
                     artifact: ImagesText, outcome: Outcome) -> None:
    first_page = {image: page for page, _, image in sorted(artifact.placements, reverse=True)}
    images = artifact.images
    deadline = time.monotonic() + ctx.settings.image_description_seconds
    _progress(ctx, doc_id, attempt, 0, len(images))

    def one(image: ArtifactImage) -> str:
        if time.monotonic() > deadline:
            raise _TimeRanOut
        return _describe_one(model, image, first_page.get(image.id, 1))

    done = 0
    pool = ThreadPoolExecutor(max_workers=ctx.settings.image_description_concurrency,
                              thread_name_prefix="describe")
    try:
        pending: dict[Future[str], ArtifactImage] = {pool.submit(one, image): image for image in images}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                image = pending.pop(future)
                _settle(future, image, outcome)
                done += 1
            _progress(ctx, doc_id, attempt, done, len(images))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class _TimeRanOut(Exception):
    pass


def _settle(future: Future[str], image: ArtifactImage, outcome: Outcome) -> None:
    try:
        text = future.result()
    except _TimeRanOut:
        outcome.fail(TIME_RAN_OUT)
    except ChatModelError as exc:
        outcome.fail(FAILED.format(happened=exc.happened))
    except Exception:
        log.exception("an image description failed", extra={"image": image.id})
        outcome.fail(FAILED.format(happened="an unexpected error"))
    else:
        if text:
            outcome.descriptions[image.id] = text
        else:
            outcome.fail(EMPTY)


def _describe_one(model: ChatModel, image: ArtifactImage, page: int) -> str:
    fmt: ImageFormat = "jpeg" if image.format == "jpeg" else "png"
    answer = model.complete(SYSTEM, PROMPT.format(page=page), max_tokens=MAX_TOKENS,
                            images=[Image(data=base64.b64decode(image.data), format=fmt)])
    return clean_description(answer.text)


def clean_description(text: str) -> str:
    """One line, no brackets that would end the ``[Image: …]`` marker, at most 1,500 characters."""
    text = re.sub(r"\s+", " ", text.replace("[", "(").replace("]", ")")).strip()
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return text


def _progress(ctx: StageContext, doc_id: uuid.UUID, attempt: int, done: int, total: int) -> None:
    with ctx.uow() as conn:
        if not doc_repo.update(conn, doc_id, expect_attempt=attempt, progress_done=done, progress_total=total):
            raise StaleEvent(str(doc_id))


def with_descriptions(artifact: ImagesText, descriptions: dict[int, str]) -> ParsedText:
    """The parsed text with ``[Image: <description>]`` where each page shows a described image;
    page spans move with the text inserted before and inside them."""
    text = artifact.text
    spans = {number: (start, end) for number, start, end in artifact.pages or []}
    inserts: list[tuple[int, int, str]] = []  # (offset, page, inserted text)
    for page, offset, image in sorted(artifact.placements, key=lambda p: (p[1], p[0])):
        description = descriptions.get(image)
        if description is None:
            continue
        start, end = spans.get(page, (0, len(text)))
        at = min(max(offset, start), end, len(text))
        marker = f"[Image: {description}]"
        at_line_start = at == 0 or text[at - 1] == "\n"
        inserts.append((at, page, f"{marker}\n" if at_line_start and at < end else f"\n{marker}"))
    pieces: list[str] = []
    cursor = 0
    for at, _, inserted in sorted(inserts, key=lambda i: i[0]):
        pieces.append(text[cursor:at])
        pieces.append(inserted)
        cursor = at
    pieces.append(text[cursor:])
    added_on: Counter[int] = Counter()
    for _, page, inserted in inserts:
        added_on[page] += len(inserted)
    pages = None
    if artifact.pages is not None:
        pages, shift = [], 0
        for number, start, end in artifact.pages:
            pages.append((number, start + shift, end + shift + added_on[number]))
            shift += added_on[number]
    new_text = "".join(pieces)
    return ParsedText(document_id=artifact.document_id, attempt=artifact.attempt, mime=artifact.mime,
                      kind=artifact.kind, text=new_text, pages=pages, notes=artifact.notes,
                      truncated=artifact.truncated, word_count=len(new_text.split()))


