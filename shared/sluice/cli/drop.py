"""``sluice drop NAME [--knowledge-base ID]``: the operator's drop, through the same teardown as
the delete routes (R-OPS-2, seed 000 "rag-drop"), followed to its receipt.

Against ``DATABASE_URL``: the rows go and the name is reserved in one transaction; then the
teardown workflow runs — the deployment's state machine where ``TEARDOWN_STATE_MACHINE_ARN`` is
set (the command follows its receipt), otherwise the same steps in this process. One base on the
name is torn down (a default one cleared); several are refused, listed, unless
``--knowledge-base`` names one (the table then stays for the others); a name no base holds is
dropped with its rows. The last holder's table goes whatever it holds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from typing import Any

POLL_SECONDS = 0.5


def add_parser(sub: Any) -> None:
    p = sub.add_parser("drop", help="tear down a collection (or one base on it) and print the receipt")
    p.add_argument("name", help="the collection name")
    p.add_argument("--knowledge-base", dest="kb_id", help="the base to tear down when several hold the name")
    p.add_argument("--yes", action="store_true", help="do not ask before deleting")
    p.add_argument("--json", action="store_true", help="print the receipt as JSON")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds to follow a workflow before giving up")
    p.set_defaults(func=run)


def _confirmed(args: argparse.Namespace) -> bool:
    if args.yes:
        return True
    if not sys.stdin.isatty():
        print("sluice drop deletes documents, chunks and files; pass --yes to run it without a terminal.",
              file=sys.stderr)
        return False
    what = f"knowledge base {args.kb_id} of '{args.name}'" if args.kb_id else f"collection '{args.name}'"
    answer = input(f"Delete the {what} and everything of it? Type the name to confirm: ")
    return bool(answer.strip() == args.name)


def _line(td: Any) -> str:
    return (f"{td.collection_name}: {td.state} at {td.step} - {td.documents_removed:,} documents, "
            f"{td.chunks_removed:,} chunks, {td.objects_removed:,} objects ({td.bytes_removed:,} bytes) removed")


class _Progress:
    """A rich spinner on stderr where rich is installed (the local extra); plain lines otherwise."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._task: Any = None
        self._last = ""

    def __enter__(self) -> _Progress:
        try:
            from rich.console import Console
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
        except ImportError:
            return self
        self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                             console=Console(stderr=True), transient=False)
        self._bar.__enter__()
        self._task = self._bar.add_task("requested", total=None)
        return self

    def __call__(self, td: Any) -> None:
        line = _line(td)
        if self._bar is not None:
            self._bar.update(self._task, description=line)
        elif line != self._last:
            print(line, file=sys.stderr, flush=True)
        self._last = line

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


def _follow(teardown_id: uuid.UUID, progress: _Progress, timeout: float) -> Any:
    from sluice.db import teardowns as td_repo
    from sluice.db.connection import transaction

    deadline = time.monotonic() + timeout
    while True:
        with transaction() as conn:
            td = td_repo.get(conn, teardown_id)
        assert td is not None
        progress(td)
        if td.state in ("done", "failed") or time.monotonic() > deadline:
            return td
        time.sleep(POLL_SECONDS)


def print_receipt(receipt: dict[str, Any]) -> None:
    removed = receipt["removed"]
    rows = [
        ("teardown", receipt["id"]),
        ("collection", receipt["collection_name"]),
        ("state", receipt["state"] + (f" (step {receipt['step']})" if receipt["state"] != "done" else "")),
        ("bases", ", ".join(f"{b['id']} {b['action']}" for b in receipt["knowledge_bases"]) or "none"),
        ("table", {"drop": "dropped" if receipt["table_dropped"] else "to drop",
                   "keep": "kept (another base holds the name)"}[receipt["table"]]),
        ("documents removed", f"{removed['documents']:,}"),
        ("chunks removed", f"{removed['chunks']:,}"),
        ("objects removed", f"{removed['objects']:,} ({removed['bytes']:,} bytes)"),
        ("sync sources removed", f"{removed['sync_sources']:,}"),
    ]
    if receipt["unfiled_documents_failed"]:
        rows.append(("other tenants' rows marked failed", f"{receipt['unfiled_documents_failed']:,}"))
    if receipt["left"] is not None:
        rows.append(("left", ", ".join(f"{k} {v}" for k, v in receipt["left"].items())))
    if receipt["error"]:
        rows.append(("failed", f"{receipt['error']['step']}: {receipt['error']['reason']}"))
    width = max(len(k) for k, _ in rows)
    print("\n".join(f"{k.ljust(width)}  {v}" for k, v in rows))


def run(args: argparse.Namespace) -> int:
    from sluice import teardown
    from sluice.config import get_settings
    from sluice.db.connection import transaction
    from sluice.errors import SluiceError
    from sluice.wiring import teardown_context, teardown_workflow

    if not _confirmed(args):
        return 1
    try:
        with transaction() as conn:
            td = teardown.request_operator_drop(conn, args.name, get_settings(), kb_id=args.kb_id)
    except SluiceError as exc:
        print(json.dumps(exc.body(), indent=2), file=sys.stderr)
        return 1
    workflow = teardown_workflow()
    with _Progress() as progress:
        progress(td)
        if workflow is not None:
            teardown.start_workflow(transaction, workflow, td)
            final = _follow(td.id, progress, args.timeout)
        else:
            final = teardown.run_all(teardown_context(), td.id, progress)
    receipt = teardown.summary(final)
    if args.json:
        print(json.dumps(receipt, indent=2))
    else:
        print_receipt(receipt)
    return 0 if final.state == "done" else 1
