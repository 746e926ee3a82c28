"""The console's browser tests: Debian's Chromium driven by Playwright (never Playwright's own browser
download), one browser per module, against the session's local stack. Skips with a sentence where the
console is not built, Playwright is not installed or no Chromium is there: a bare clone passes."""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "functions" / "console" / "static"
AXE = ROOT / "console" / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium_path() -> str | None:
    configured = os.environ.get("SLUICE_CHROMIUM", "")
    found = [shutil.which("chromium") or "", shutil.which("chromium-browser") or ""]
    for candidate in (configured, "/usr/bin/chromium", *found):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def skip_without_a_browser() -> None:
    if not (STATIC / "index.html").is_file():
        pytest.skip("the console is not built (functions/console/static): make install runs npm ci and the Vite build")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("Playwright is not installed (pip install -e '.[dev]', as make install does)")
    if chromium_path() is None:
        pytest.skip("no Chromium at /usr/bin/chromium: `make install` installs Debian's (apt-get install chromium)")


@pytest.fixture(scope="module", name="browser")
def browser_fixture() -> Iterator[Any]:
    skip_without_a_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # A fresh profile each launch (Playwright's own temporary user-data-dir).
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@dataclass
class Watched:
    """A page and what it did: every request's origin, dialogs opened, CSP complaints, script errors."""

    page: Any
    origin: str
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def foreign_requests(self, allowed: set[str]) -> list[str]:
        return [u for u in self.requests if _origin(u) not in allowed | {self.origin}]

    def csp_violations(self) -> list[str]:
        return [m for m in self.console if "Content Security Policy" in m or "Content-Security-Policy" in m]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def watch(browser: Any, api_url: str) -> Watched:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.set_default_timeout(20_000)
    w = Watched(page, _origin(api_url))
    page.on("request", lambda r: w.requests.append(r.url))
    page.on("console", lambda m: w.console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: w.errors.append(str(e)))

    def on_dialog(d: Any) -> None:
        w.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", on_dialog)
    return w


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core, from node_modules, run in the page: its serious and critical violations."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))  # evaluated through the protocol: no inline script
    result = page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations")
    return [{"id": v["id"], "impact": v["impact"], "help": v["help"],
             "nodes": [n["target"] for n in v["nodes"]][:5]}
            for v in result if v["impact"] in ("serious", "critical")]


def keyboard_unreachable(page: Any, limit: int = 400) -> list[str]:
    """The visible, enabled controls that Tab never reaches (each tagged, then Tab pressed until the
    focus comes round again)."""
    count = page.evaluate("""() => {
        const all = [...document.querySelectorAll('a[href], button, input, select, textarea, [tabindex]')]
          .filter(e => !e.disabled && e.tabIndex >= 0 && e.getClientRects().length > 0);
        all.forEach((e, i) => e.setAttribute('data-kbd', String(i)));
        return all.length;
    }""")
    reached: set[str] = set()
    page.evaluate("document.activeElement && document.activeElement.blur()")
    for _ in range(min(limit, count * 2 + 5)):
        page.keyboard.press("Tab")
        mark = page.evaluate("document.activeElement && document.activeElement.getAttribute('data-kbd')")
        if mark is not None:
            reached.add(mark)
        if len(reached) == count:
            break
    return page.evaluate("""(reached) => [...document.querySelectorAll('[data-kbd]')]
        .filter(e => !reached.includes(e.getAttribute('data-kbd')))
        .map(e => e.outerHTML.slice(0, 120))""", sorted(reached))


def file_transfer(page: Any, files: list[tuple[str, bytes, str]]) -> Any:
    """A DataTransfer in the page holding these files, as a drag from the desktop carries them."""
    payload = [{"name": n, "b64": base64.b64encode(data).decode(), "type": t} for n, data, t in files]
    return page.evaluate_handle("""(files) => {
        const dt = new DataTransfer();
        for (const f of files) {
            const bytes = Uint8Array.from(atob(f.b64), c => c.charCodeAt(0));
            dt.items.add(new File([bytes], f.name, {type: f.type}));
        }
        return dt;
    }""", payload)


def text_transfer(page: Any, text: str) -> Any:
    return page.evaluate_handle("""(text) => {
        const dt = new DataTransfer();
        dt.setData('text/plain', text);
        dt.setData('text/uri-list', 'https://example.com/');
        return dt;
    }""", text)
