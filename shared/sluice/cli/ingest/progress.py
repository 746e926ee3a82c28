"""What ``sluice ingest`` shows while it runs: a progress bar on a terminal, plain lines in logs,
pipes and CI, and the columns of its closing tables."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TextIO


class Progress(Protocol):
    def line(self, text: str) -> None: ...

    def step(self, title: str, total: int) -> contextlib.AbstractContextManager[Callable[[], None]]: ...


class PlainProgress:
    """Progress as lines: for logs, pipes and CI (no terminal)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        with self._lock:
            print(text, file=self.out, flush=True)

    @contextlib.contextmanager
    def step(self, title: str, total: int) -> Iterator[Callable[[], None]]:
        self.line(f"{title}: {total}")  # each file then says its own line
        yield lambda: None


class RichProgress:
    """A progress bar on a terminal (``rich``, in the local extra)."""

    def __init__(self, console: Any) -> None:
        self.console = console

    def line(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)

    @contextlib.contextmanager
    def step(self, title: str, total: int) -> Iterator[Callable[[], None]]:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        with Bar(TextColumn(title), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                 console=self.console, transient=False) as bar:
            task = bar.add_task(title, total=total)
            yield lambda: bar.advance(task)


def progress_for(out: TextIO) -> Progress:
    if out.isatty():
        try:
            from rich.console import Console
        except ImportError:
            return PlainProgress(out)
        return RichProgress(Console(file=out))
    return PlainProgress(out)


def table(head: Sequence[str], rows: Sequence[Sequence[str]], width: int = 100) -> str:
    """Plain columns; the last one takes what is left and wraps."""
    import textwrap

    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head[:-1])]
    widths = [min(w, 48) for w in widths]
    rest = max(30, width - sum(widths) - 2 * len(widths))
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, [*widths, 0], strict=True)).rstrip(),
             "  ".join("-" * w for w in [*widths, min(rest, max(len(head[-1]), *(len(r[-1]) for r in rows)))])]
    for r in rows:
        wrapped = textwrap.wrap(r[-1], rest) or [""]
        cells = [c if len(c) <= w else c[: w - 1] + "…" for c, w in zip(r[:-1], widths, strict=True)]
        lines.append("  ".join([*(c.ljust(w) for c, w in zip(cells, widths, strict=True)), wrapped[0]]))
        pad = " " * (sum(widths) + 2 * len(widths))
        lines += [pad + more for more in wrapped[1:]]
    return "\n".join(lines)
