"""``sluice sync run SOURCE_ID``: start a run of a sync source, follow it with a progress bar, and
print what it did with every file (R-OPS-2).

Two ways to reach the service, as ``sluice search`` has:

* ``--api URL`` (or ``SLUICE_API_URL``): through a running API (``sluice local up`` or the
  deployed one) as the bearer ``--token`` (``SLUICE_TOKEN``), who must write the source's base;
* directly (the default): ``DATABASE_URL`` and ``SYNC_STATE_MACHINE_ARN`` in this process, as
  the operator, who holds the database anyway.

The bar counts decided files out of those listed; its line says how many the pipeline has
indexed and how many it is still indexing. Exit status 0 when the run succeeded, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Protocol

TERMINAL = ("succeeded", "failed")


def add_parser(sub: Any) -> None:
    sync = sub.add_parser("sync", help="source syncs").add_subparsers(dest="sync", required=True)
    p = sync.add_parser("run", help="run a sync source now, follow it, and print what it did per file")
    p.add_argument("source_id")
    p.add_argument("--api", default=os.environ.get("SLUICE_API_URL"), help="a running API instead of DATABASE_URL")
    p.add_argument("--token", default=os.environ.get("SLUICE_TOKEN"), help="bearer token for --api")
    p.add_argument("--no-follow", action="store_true", help="start the run and print its id only")
    p.add_argument("--json", action="store_true", help="print the run and its files as JSON instead of a table")
    p.add_argument("--poll", type=float, default=1.0, help="seconds between progress reads")
    p.add_argument("--timeout", type=float, default=6 * 3600, help="stop following after this many seconds")
    p.set_defaults(func=run)


class Runs(Protocol):
    def start(self, source_id: str) -> dict[str, Any]: ...

    def get(self, run_id: str) -> dict[str, Any]: ...

    def files(self, run_id: str) -> list[dict[str, Any]]: ...


class Refused(Exception):
    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body)
        self.body = body


class ApiRuns:
    """The routes of SourcesFunction through sluice-client, as the token's holder."""

    def __init__(self, url: str, token: str) -> None:
        from sluice.cli.api_client import connect

        self._api = connect(url, token, timeout=120)

    def start(self, source_id: str) -> dict[str, Any]:
        source = self._api.find_sync_source(source_id)
        run: dict[str, Any] = self._api.start_sync_run(source.kb_id, source_id).model_dump(mode="json")
        return run

    def get(self, run_id: str) -> dict[str, Any]:
        run: dict[str, Any] = self._api.get_sync_run(run_id).model_dump(mode="json")
        return run

    def files(self, run_id: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            page = self._api.sync_run_files(run_id, offset=offset, limit=1000)
            out += [f.model_dump(mode="json") for f in page.files]
            offset = page.next_offset
        return out


class DirectRuns:
    """The sync service in this process, as the operator: the same bodies the API answers."""

    def __init__(self) -> None:
        from sluice.wiring import sync_context

        self._ctx = sync_context()

    def start(self, source_id: str) -> dict[str, Any]:
        from sluice.api.views_sync import run_view
        from sluice.sync.runs import run_state, start_for_source
        from sluice.sync.sources import parse_id

        ident = parse_id(source_id)
        if ident is None:
            raise Refused({"error": {"code": "NOT_FOUND", "message": "No such source", "details": {}}})
        found = start_for_source(self._ctx, ident, trigger="manual", started_by="operator")
        with self._ctx.uow() as conn:
            return run_view(run_state(conn, found)).model_dump(mode="json")

    def get(self, run_id: str) -> dict[str, Any]:
        from sluice.api.views_sync import run_view
        from sluice.db import sync_runs
        from sluice.sync.runs import run_state
        from sluice.sync.sources import parse_id

        with self._ctx.uow() as conn:
            found = sync_runs.get(conn, parse_id(run_id))  # type: ignore[arg-type]  # an id this command made
            assert found is not None
            return run_view(run_state(conn, found)).model_dump(mode="json")

    def files(self, run_id: str) -> list[dict[str, Any]]:
        from sluice.api.views_sync import file_view
        from sluice.db import sync_runs
        from sluice.sync.sources import parse_id

        ident = parse_id(run_id)
        assert ident is not None
        out: list[dict[str, Any]] = []
        with self._ctx.uow() as conn:
            while True:
                page, total = sync_runs.files_page(conn, ident, limit=1000, offset=len(out))
                out += [file_view(f).model_dump(mode="json") for f in page]
                if not page or len(out) >= total:
                    return out


def follow(runs: Runs, run_id: str, *, poll: float, timeout: float, show: bool = True) -> dict[str, Any]:
    """Read the run until it ends, drawing its progress on stderr."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    deadline = time.monotonic() + timeout
    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, disable=not show) as bar:
        task = bar.add_task("queued", total=None)
        while True:
            state = runs.get(run_id)
            c = state["counts"]
            bar.update(task, total=max(c["listed"], 1) if state["status"] != "queued" else None,
                       completed=c["decided"],
                       description=f"{state['status']}: listed {c['listed']}, decided {c['decided']}, "
                                   f"indexed {c['ingested']}, indexing {c['indexing']}")
            if state["status"] in TERMINAL or time.monotonic() > deadline:
                return state
            time.sleep(poll)


def report(state: dict[str, Any], files: list[dict[str, Any]]) -> str:
    """The per-file table and the run's totals, as plain text."""
    head = ["outcome", "file", "size", "reason"]
    rows = [[f["outcome"] or "undecided", f["source_path"], "-" if f["size"] is None else str(f["size"]),
             f["reason"] or ""] for f in files]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head[:-1])]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head[:-1], widths, strict=True)) + "  reason",
             "  ".join("-" * w for w in widths) + "  ------"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1] for r in rows]
    c = state["counts"]
    lines.append(f"run {state['id']} {state['status']}: listed {c['listed']}, new {c['new']}, updated {c['updated']},"
                 f" unchanged {c['unchanged']}, ignored {c['ignored']}, failed {c['failed']}, removed {c['removed']}")
    if state.get("requests_made") is not None:
        lines.append(f"requests {state['requests_made']}, bytes downloaded {state.get('bytes_downloaded') or 0}")
    if state.get("error"):
        lines.append(f"error: {state['error']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from sluice.errors import SluiceError

    try:
        if args.api:
            if not args.token:
                raise SystemExit("--api needs --token (or SLUICE_TOKEN); `sluice local token --user NAME` mints one")
            runs: Runs = ApiRuns(args.api, args.token)
        else:
            runs = DirectRuns()
        started = runs.start(args.source_id)
        if args.no_follow:
            print(started["id"])
            return 0
        state = follow(runs, started["id"], poll=args.poll, timeout=args.timeout, show=not args.json)
        files = runs.files(started["id"])
    except SluiceError as exc:
        print(json.dumps(exc.body(), indent=2), file=sys.stderr)
        return 1
    except Refused as exc:
        print(json.dumps(exc.body, indent=2), file=sys.stderr)
        return 1
    except Exception as exc:
        from sluice.cli.api_client import refusal_of

        refused = refusal_of(exc)
        if refused is None:
            raise
        print(json.dumps(refused, indent=2), file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"run": state, "files": files}, indent=2))
    else:
        print(report(state, files))
    return 0 if state["status"] == "succeeded" else 1
