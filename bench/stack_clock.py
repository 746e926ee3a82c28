"""`sluice local up` with a clock on every queue pump: each batch a pump delivers is one line of a JSON
Lines file (the queue, when it started, how long the function took, how many messages), written as it
ends. The pump is the local runtime's server of a queue (one batch at a time, sluice/local/pump.py),
so these are the service times `simulate.py --validate-load` needs, measured in the run it checks.

    .venv/bin/python bench/stack_clock.py TIMINGS.jsonl local up --data-dir DIR --port N   # load.py runs it

The embed pump's batch is split once more: the provider's calls (``embed``) and the transaction that
stores (``store``), lines of their own with ``"part"`` set, as ingest.py's StageClock splits them.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class Clock:
    def __init__(self, path: Path) -> None:
        self._out = path.open("a")
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._out.write(json.dumps(record) + "\n")
            self._out.flush()

    def install(self) -> None:
        from sluice.local.pump import QueuePump

        deliver = QueuePump._deliver
        clock = self

        def timed(pump: QueuePump, messages: list[dict[str, Any]]) -> None:
            started, t0 = time.time(), time.perf_counter()
            try:
                deliver(pump, messages)
            finally:
                clock.write({"queue": pump.name, "start": started, "seconds": time.perf_counter() - t0,
                             "messages": len(messages)})

        QueuePump._deliver = timed  # type: ignore[method-assign,assignment]
        try:
            from sluice.ingest import embed
        except ImportError:
            return
        for name, part in (("_embed_with_progress", "embed"), ("store_chunks", "store")):
            if hasattr(embed, name):
                self._wrap(embed, name, part)

    def _wrap(self, module: Any, name: str, part: str) -> None:
        inner = getattr(module, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started, t0 = time.time(), time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.write({"part": part, "start": started, "seconds": time.perf_counter() - t0})

        setattr(module, name, timed)


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> int:
    sys.path.insert(0, str(ROOT / "shared"))
    out = Path(sys.argv[1])
    Clock(out).install()
    from sluice.cli import main as cli

    return cli(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
