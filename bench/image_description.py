"""Image description (R-PARSE-6): what describing a PDF's images adds to its parse, Sluice's own cost.

    .venv/bin/python bench/image_description.py        # about a minute

The vision model is a fake OpenAI-compatible server on loopback (tests/fakes.py FakeChatServer)
answering at once, so the figures are Sluice's own work: the parse child collecting, hashing and
downscaling the images, the describe step's HTTP calls (IMAGE_DESCRIPTION_CONCURRENCY at a time)
and putting the descriptions in the text. Measured against the same parse with description off.

1. A generated PDF of 20 pages, each showing one of 10 distinct 800x600 photos-like images (two
   pages a picture): added seconds per described image (median of 5).
2. Every PDF of ../shared/corpus/real/pdf whose pages show images: added seconds per document.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "shared"), str(ROOT)]
os.environ.setdefault("EMBEDDING_ALLOWED_ENDPOINTS", "127.0.0.1")

from sluice.config import get_settings  # noqa: E402
from sluice.ingest.artifacts import ArtifactImage, ImagesText  # noqa: E402
from sluice.ingest.describe import VISION_RETRY, _describe_one, with_descriptions  # noqa: E402
from sluice.llm import chat_model_for  # noqa: E402
from sluice.parsing import ParseBudget, extract_isolated, sniff  # noqa: E402
from sluice.parsing.images import ImageOptions  # noqa: E402
from tests.fakes import FakeChatServer, serving  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "real" / "pdf"
RUNS = 5


def generated_pdf(distinct: int = 10) -> bytes:
    import pymupdf

    document = pymupdf.open()
    images: list[int] = []
    for n in range(distinct * 2):
        page = document.new_page()
        page.insert_text((72, 72), f"Page {n + 1}: the text above the figure.")
        rect = pymupdf.Rect(72, 100, 472, 400)
        if n < distinct:
            pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 800, 600), False)
            for band in range(8):  # a little structure, so the PNG is not trivially small
                colour = ((n * 37 + band * 29) % 256, band * 30, 90)
                pix.set_rect(pymupdf.IRect(0, band * 75, 800, band * 75 + 75), colour)
            images.append(page.insert_image(rect, stream=pix.tobytes("png")))
        else:
            page.insert_image(rect, xref=images[n - distinct])
        page.insert_text((72, 450), "The text below the figure.")
    return document.tobytes()


def parse_and_describe(data: bytes, budget: ParseBudget, options: ImageOptions | None, model: object,
                       concurrency: int) -> tuple[float, int]:
    """The parse child's read, then (on) the describe step's calls and insertion; seconds, images."""
    started = time.perf_counter()
    parsed = extract_isolated(data, sniff(data, "bench.pdf"), budget, options)
    images = parsed.images or []
    if options is not None and images:
        import base64

        artifact = ImagesText(
            document_id="00000000-0000-0000-0000-000000000000", attempt=1, mime="application/pdf", kind="pdf",
            text=parsed.text, pages=[(p.number, p.start, p.end) for p in parsed.pages or []],
            images=[ArtifactImage(id=i.id, sha256=i.sha256, width=i.width, height=i.height, format=i.format,
                                  data=base64.b64encode(i.data).decode()) for i in images],
            placements=[(p.page, p.offset, p.image) for p in parsed.placements or []])
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            texts = list(pool.map(lambda image: _describe_one(model, image, 1), artifact.images))  # type: ignore[arg-type]
        with_descriptions(artifact, {image.id: text for image, text in zip(artifact.images, texts, strict=True)})
    return time.perf_counter() - started, len(images)


def median_pair(data: bytes, budget: ParseBudget, options: ImageOptions, model: object,
                concurrency: int) -> tuple[float, float, int]:
    off, on, count = [], [], 0
    for _ in range(RUNS):
        off.append(parse_and_describe(data, budget, None, model, concurrency)[0])
        seconds, count = parse_and_describe(data, budget, options, model, concurrency)
        on.append(seconds)
    return statistics.median(off), statistics.median(on), count


def main() -> None:
    settings = get_settings()
    budget = ParseBudget.from_settings(settings)
    options = ImageOptions(max_images=settings.image_description_max_per_doc,
                           min_pixels=settings.image_description_min_pixels, max_side=2048, max_bytes=5_000_000)
    rows: list[tuple[str, str, str, str]] = []
    with serving(FakeChatServer()) as server:
        model = chat_model_for("openai", "gpt-4o-mini", base_url=server.base_url, retry=VISION_RETRY)
        data = generated_pdf()
        off, on, count = median_pair(data, budget, options, model, settings.image_description_concurrency)
        rows.append(("generated 20 pages, 10 distinct 800x600 images: parse, s (median of 5)",
                     f"{on:.3f} on", f"{off:.3f} off", f"{on / off:.2f}"))
        rows.append(("  added per described image, ms", f"{(on - off) / count * 1000:.1f}", "-", "-"))
        if not CORPUS.is_dir():
            print(f"({CORPUS} is absent: the real-corpus rows are skipped; they need the shared corpus.)")
        else:
            for path in sorted(CORPUS.glob("*.pdf")):
                pdf = path.read_bytes()
                try:
                    _, found = parse_and_describe(pdf, budget, options, model, settings.image_description_concurrency)
                except Exception as exc:  # a refused corpus file (encrypted, scanned) has no figure
                    print(f"({path.name}: {type(exc).__name__}, no figure)")
                    continue
                if not found:
                    continue
                off, on, count = median_pair(pdf, budget, options, model, settings.image_description_concurrency)
                rows.append((f"real {path.name} ({count} images): parse, s", f"{on:.3f} on", f"{off:.3f} off",
                             f"{on / off:.2f}"))
        calls = server.calls.get("describe", 0)
    print(f"\n(vision calls answered by the fake server: {calls})\n")
    width = max(len(r[0]) for r in rows)
    print(f"| {'figure'.ljust(width)} | Sluice | comparison | ratio |")
    print(f"|{'-' * (width + 2)}|---|---|---|")
    for figure, sluice, comparison, ratio in rows:
        print(f"| {figure.ljust(width)} | {sluice} | {comparison} | {ratio} |")


if __name__ == "__main__":
    main()
