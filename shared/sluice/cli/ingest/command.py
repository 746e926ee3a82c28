"""``sluice ingest`` itself: its arguments, the run's steps in order (resolve the base, walk and plan,
send, follow) and the closing report with its exit status."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import httpx

from sluice.cli.http import api_transport
from sluice.cli.ingest.progress import Progress, progress_for, table
from sluice.cli.ingest.upload import (
    FOLLOW_STOPPED,
    UNREACHABLE,
    Api,
    Halted,
    Outcome,
    Refused,
    Sender,
    Tracked,
    follow,
    list_documents,
    retry_all,
    send_all,
)
from sluice.cli.ingest.walk import Plan, collect, plan

LOCAL_API = "http://127.0.0.1:8787"
# The server's default (DIRECT_UPLOAD_MAX_MB): API Gateway takes at most 10 MB in a request.
DEFAULT_DIRECT_LIMIT = 4 * 1024 * 1024
DESCRIPTION = (
    "Upload a file or a folder (recursively; hidden files are skipped) to a knowledge base of a running API, "
    "follow every document to done or error, and print the failures with their reasons. Files whose content "
    "the base already holds (same sha256) are not sent again. Exits 1 when any document failed or was not sent."
)
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("ingest", help="upload a file or a folder to a knowledge base and follow it to done",
                       description=DESCRIPTION)
    p.add_argument("path", help="a file, or a folder (read recursively; hidden files are skipped)")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--kb", help="the knowledge base's id")
    target.add_argument("--collection", help="a collection name, when one knowledge base holds it")
    p.add_argument("--api", default=os.environ.get("SLUICE_API_URL") or LOCAL_API,
                   help=f"the API's base URL (default: SLUICE_API_URL, else the local runtime at {LOCAL_API})")
    p.add_argument("--token", default=os.environ.get("SLUICE_TOKEN"),
                   help="bearer token (default: SLUICE_TOKEN; against a local API, one is minted as "
                        "`sluice local token` does)")
    p.add_argument("--user", default=os.environ.get("SLUICE_USER"),
                   help="local API without --token: the user to mint the token for (default: SLUICE_USER, "
                        "else your login name)")
    p.add_argument("--org", help="local API without --token: the user's organization")
    p.add_argument("--perm", action="append", help="local API without --token: a permission (repeatable)")
    p.add_argument("--data-dir", default=None, help="local API without --token: the data directory of "
                                                    "`sluice local up` whose secret signs the token (.sluice/)")
    p.add_argument("--concurrency", type=int, default=4, help="files sent at the same time (default 4)")
    p.add_argument("--direct-limit", type=int, default=DEFAULT_DIRECT_LIMIT, metavar="BYTES",
                   help="files up to this size go in the request, larger ones through a presigned POST "
                        f"(default {DEFAULT_DIRECT_LIMIT}, the server's default)")
    p.add_argument("--retry-failed", action="store_true",
                   help="send again files whose document failed earlier (by default they are reported)")
    p.add_argument("--timeout", type=float, default=3600,
                   help="seconds to follow the documents before giving up on them (default 3600)")
    p.add_argument("--no-follow", action="store_true", help="send the files and stop: do not wait for indexing")
    p.add_argument("--max-wait", type=float, default=300,
                   help="the longest Retry-After to wait out; a longer one stops the run (default 300 s)")
    p.add_argument("--unit", dest="organizational_unit", help="organizational unit of every file")
    p.add_argument("--document-type", help="document type of every file")
    p.add_argument("--document-date", help="YYYY-MM-DD, of every file")
    p.add_argument("--ingestion", help='chunking settings for these files, a JSON object: {"chunk_size": 400}')
    p.set_defaults(func=run)


def report(p: Plan, outcome: Outcome, progress: Progress, *, retry_failed: bool, followed: bool) -> int:
    """The skipped files, the failures with their reasons, the summary; the exit status (1: not all indexed)."""
    tracked = outcome.tracked
    direct = sum(1 for t in tracked if t.how == "direct")
    presigned = sum(1 for t in tracked if t.how == "presigned")
    retried = sum(1 for t in tracked if t.how == "retry")
    errors = [t for t in tracked if t.status == "error"]
    # Without following, processing is what a sent document is expected to be.
    waiting = [t for t in tracked if t.status == "processing"] if followed else []
    earlier = [] if retry_failed else p.failed_before

    if p.skipped:
        progress.line("\nSkipped:")
        progress.line(table(["file", "why"], [[s.shown, s.reason] for s in p.skipped]))
    failures = ([[t.file.shown, t.error_message or "failed"] for t in errors]
                + [[f.shown, f"not accepted: {reason}"] for f, reason in outcome.refused]
                + [[f.shown, f"failed earlier (--retry-failed sends it again): {k.error_message}"]
                   for f, k in earlier])
    if failures:
        progress.line("\nFailures:")
        progress.line(table(["file", "reason"], failures))

    parts = [f"{direct + presigned} uploaded" + (f" ({direct} direct, {presigned} presigned)"
                                                 if direct + presigned else "")]
    if retried:
        parts.append(f"{retried} retried")
    held = len(p.present) + len(earlier)
    if held:
        parts.append(f"{held} skipped as already in the base with the same content"
                     + (f" ({len(earlier)} of them failed earlier)" if earlier else ""))
    if p.skipped:
        parts.append(f"{len(p.skipped)} skipped (see above)")
    progress.line("\nSummary: " + ", ".join(parts) + ".")
    if followed and tracked:
        done = sum(1 for t in tracked if t.status == "done")
        still = f", {len(waiting)} still processing" if waiting else ""
        progress.line(f"Indexed: {done} done, {len(errors)} failed{still}.")
    if outcome.not_sent:
        progress.line(f"Not sent: {len(outcome.not_sent)} file(s): {outcome.halted} Run the same command again "
                      "later: what was sent is skipped.")
    return 1 if errors or outcome.refused or earlier or outcome.not_sent or waiting else 0


def _token(args: argparse.Namespace) -> str:
    if args.token:
        return str(args.token)
    host = urlsplit(args.api).hostname or ""
    if host not in _LOOPBACK:
        raise SystemExit(f"--api {args.api} needs --token (or SLUICE_TOKEN)")
    import getpass

    from sluice.config import get_settings
    from sluice.local.tokens import dev_secret, mint

    if args.data_dir:
        data_dir = Path(args.data_dir)
    else:
        from sluice.local.runtime import project_root

        data_dir = project_root() / ".sluice"
    secret = dev_secret(data_dir, get_settings().dev_jwt_secret)
    return mint(secret, user=args.user or getpass.getuser(), org=args.org, permissions=args.perm or [],
                ttl_seconds=12 * 3600)


def _fields(args: argparse.Namespace) -> dict[str, Any]:
    fields: dict[str, Any] = {k: v for k, v in {
        "organizational_unit": args.organizational_unit, "document_type": args.document_type,
        "document_date": args.document_date}.items() if v}
    if args.ingestion:
        try:
            fields["ingestion"] = json.loads(args.ingestion)
        except ValueError as exc:
            raise SystemExit(f"--ingestion is not a JSON object: {exc}") from None
        if not isinstance(fields["ingestion"], dict):
            raise SystemExit("--ingestion must be a JSON object")
    return fields


def _resolve_kb(api: Api, args: argparse.Namespace) -> dict[str, Any]:
    if args.kb:
        kb: dict[str, Any] = api.call("GET", f"/kb/{args.kb}")
        return kb
    info = api.call("GET", f"/rag/collections/{args.collection}/info")
    ids = info["knowledge_base_ids"]
    if len(ids) != 1:
        raise Refused(409, "AMBIGUOUS", f"Collection {args.collection} is held by {len(ids)} knowledge bases "
                                        f"({', '.join(ids)}); name one with --kb.")
    found: dict[str, Any] = api.call("GET", f"/kb/{ids[0]}")
    return found


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    if not UNREACHABLE:
        from sluice.cli.api_client import NEEDS_CLIENT

        print(NEEDS_CLIENT.replace("--api", "sluice ingest"), file=sys.stderr)
        return 2
    from sluice.storage import display_name

    out = out or sys.stdout
    progress = progress_for(out)
    root = Path(args.path)
    if not root.exists():
        print(f"{root}: no such file or folder", file=sys.stderr)
        return 2
    fields = _fields(args)
    headers = {"Authorization": f"Bearer {_token(args)}"}
    timeout = httpx.Timeout(120.0, connect=10.0)
    with httpx.Client(base_url=args.api.rstrip("/"), headers=headers, timeout=timeout,
                      transport=api_transport(retries=2)) as client, \
            httpx.Client(timeout=timeout) as storage:
        api = Api(client, progress.line, max_wait=args.max_wait)
        try:
            kb = _resolve_kb(api, args)
            if not kb.get("can_write", True):
                print(f"You may read knowledge base {kb['id']} but not add documents to it.", file=sys.stderr)
                return 1
            extensions = api.call("GET", "/rag/supported-formats")["knowledge_base"]
            files, skipped = collect(root, extensions)
            known = list_documents(api, kb["id"])
        except UNREACHABLE as exc:
            hint = " Is `sluice local up` running?" if args.api.rstrip("/") == LOCAL_API else ""
            print(f"No Sluice API answers at {args.api}: {exc.__cause__ or exc}.{hint}", file=sys.stderr)
            return 2
        except (Refused, Halted) as exc:
            print(f"{args.api}: {exc}", file=sys.stderr)
            return 1
        p = plan(files, known, direct_limit=args.direct_limit, display_name=display_name)
        p.skipped[:0] = skipped
        progress.line(f"Knowledge base {kb['name']} ({kb['id']}) → collection {kb['collection_name']}: "
                      f"{len(files)} file(s) found, {len(p.to_send)} to send, "
                      f"{len(p.present) + len(p.failed_before)} already in the base.")
        outcome = Outcome()
        sender = Sender(api, kb["id"], fields, progress, storage=storage, direct_limit=args.direct_limit)
        items = [(f, False) for f in p.direct] + [(f, True) for f in p.presigned]
        if items:
            send_all(sender, items, args.concurrency, outcome)
        if args.retry_failed and p.failed_before and outcome.halted is None:
            retry_all(api, sender, p.failed_before, outcome)
        # Sent by an earlier run and still being indexed: followed with the rest.
        outcome.tracked += [Tracked(f, k.id, "present") for f, k in p.present if k.status == "processing"]
        if not args.no_follow and outcome.tracked:
            try:
                follow(api, kb["id"], outcome.tracked, progress, timeout=args.timeout)
            except FOLLOW_STOPPED as exc:
                progress.line(f"stopped following: {exc}")
        return report(p, outcome, progress, retry_failed=args.retry_failed, followed=not args.no_follow)
