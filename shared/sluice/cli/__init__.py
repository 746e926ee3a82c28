"""The ``sluice`` command for operators and developers (R-OPS-2)."""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any


def _local_up(args: argparse.Namespace) -> int:
    from sluice.local.runtime import LocalRuntime
    from sluice.local.tokens import console_link

    runtime = LocalRuntime(api_port=args.port, moto_port=args.moto_port, pumps=not args.no_pumps,
                           data_dir=Path(args.data_dir) if args.data_dir else None, concurrency=args.concurrency,
                           expose=args.expose, pg_port=args.pg_port if args.expose else None)
    print("Starting Sluice locally (embedded PostgreSQL, moto, the wiring of template.yaml)...", flush=True)
    runtime.start()
    failed, originals = runtime.recovered
    print(f"\nSluice API:  {runtime.api_url}")
    print(f"S3 (moto):   {runtime.moto_url}  bucket {runtime.bucket}")
    print(f"             drop a file: aws --endpoint-url {runtime.moto_url} s3 cp report.pdf "
          f"s3://{runtime.bucket}/inbox/<kb_id>/report.pdf")
    print(f"pgvector:    {_pgvector_line(runtime.database_url or '')}")
    print(f"Health:      curl {runtime.api_url}/health")
    if runtime.expose:
        from sluice.local.expose import PASSWORD_FILE

        print(f"Exposed:     moto and PostgreSQL also listen on {runtime.expose} (moto :{runtime.moto_port}, "
              f"PostgreSQL :{runtime.pg_port}, user postgres, password in {runtime.data_dir / PASSWORD_FILE}); "
              "moto answers, without credentials, anyone who reaches it there")
        print("sam local:   sluice local env --for-sam --out env.json  (docs/operations/sam-local.md)")
    print(f"Console:     {console_link(runtime.api_url, runtime.jwt_secret)}")
    print("             (signs in as alice of org acme, a writer; docs/guides/console.md)")
    print("Get a token: sluice local token --user alice")
    print(f"Then:        curl -H \"Authorization: Bearer $TOKEN\" {runtime.api_url}/kb")
    if failed or originals:
        print(f"Restarted:   the local object store and queues live in memory and started empty: {failed} "
              f"document(s) in flight were marked error, and {originals} document(s) keep their chunks "
              "(search finds them) but not their stored originals.")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        # Inside the try: a Ctrl-C that comes as soon as this line is read (while print still flushes)
        # stops the stack like any other, instead of a traceback that leaves PostgreSQL running.
        print("Ctrl-C stops.", flush=True)
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    # The stop is bounded (about 2 s, sluice/local/runtime.py): a second Ctrl-C must not cut it
    # short and leave PostgreSQL running.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("\nStopping...", flush=True)
    runtime.stop()
    # Nothing is left to collect, but the interpreter's last collection at exit walked every object
    # the handlers loaded: 5 s of the 7 a Ctrl-C took. Frozen, they are out of its sight.
    gc.freeze()
    print("Stopped.", flush=True)
    return 0


def _pgvector_line(url: str) -> str:
    from sluice.db.migrations import vector_version, version_tuple
    from sluice.vectors.plan import supports_iterative_scan

    version = vector_version(url)
    if version is not None and supports_iterative_scan(version_tuple(version)):
        return version
    # Search still works, with the plan for pgvector before 0.8; production (Aurora) runs 0.8.
    return f"{version} (production runs 0.8: docs/operations/local-runtime.md, 'pgvector 0.8', says how to build it)"


def _local_env(args: argparse.Namespace) -> int:
    import json

    from sluice.config import MissingSettingError
    from sluice.local.runtime import project_root
    from sluice.local.samenv import NotExposedError, TrackedFileError, for_sam, write_env_file

    data_dir = Path(args.data_dir) if args.data_dir else project_root() / ".sluice"
    try:
        env = for_sam(data_dir, args.host)
        if args.out:
            write_env_file(Path(args.out), env)
    except (FileNotFoundError, NotExposedError, TrackedFileError, MissingSettingError) as exc:
        print(f"sluice local env: {exc}", file=sys.stderr)
        return 2
    if args.out:
        print(f"wrote {args.out} (readable by you only: it holds the database password)", file=sys.stderr)
    else:
        print(json.dumps(env, indent=2, sort_keys=True))
    return 0


def _local_seed_events(args: argparse.Namespace) -> int:
    from sluice import wiring
    from sluice.config import reset_settings
    from sluice.db.connection import close_pool
    from sluice.local.runtime import project_root
    from sluice.local.samenv import local_environment
    from sluice.local.seed import seed_events

    root = project_root()
    data_dir = Path(args.data_dir) if args.data_dir else root / ".sluice"
    try:
        os.environ.update(local_environment(data_dir, root))
    except FileNotFoundError as exc:
        print(f"sluice local seed-events: {exc}", file=sys.stderr)
        return 2
    reset_settings()
    close_pool()
    wiring.reset()
    seeded = seed_events(root)
    for line in seeded.created:
        print(f"created  {line}")
    for line in seeded.present:
        print(f"present  {line}")
    print("tests/events/*.json now name rows and objects that exist (docs/operations/sam-local.md).")
    return 0


def _local_token(args: argparse.Namespace) -> int:
    from sluice.config import get_settings
    from sluice.local.runtime import project_root
    from sluice.local.tokens import dev_secret, mint

    data_dir = Path(args.data_dir) if args.data_dir else project_root() / ".sluice"
    secret = dev_secret(data_dir, get_settings().dev_jwt_secret)
    print(mint(secret, user=args.user, org=args.org, permissions=args.perm or [],
               app_admin=args.app_admin, ttl_seconds=args.ttl))
    return 0


def _db_migrate(args: argparse.Namespace) -> int:
    from sluice.db.connection import database_url
    from sluice.db.migrations import migrate

    applied = migrate(args.database_url or database_url())
    print("applied: " + (", ".join(applied) if applied else "nothing (up to date)"))
    return 0


def api_document(root: Path) -> dict[str, Any]:
    """The OpenAPI document of the API functions template.yaml declares."""
    from sluice.api.openapi import build_document
    from sluice.local.template import parse

    template = parse(root / "template.yaml")
    apps = {fn.name: root / fn.code_uri / "app.py" for fn in template.functions.values() if fn.routes}
    return build_document(apps, {(r.method, r.path) for r in template.routes() if not r.auth})


def _openapi(args: argparse.Namespace) -> int:
    from sluice.api.openapi import render
    from sluice.local.runtime import project_root

    root = project_root()
    text = render(api_document(root))
    target = root / "infra" / "openapi.json"
    if args.check:
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            print(f"{target} does not match the routes; run `sluice openapi` and commit it", file=sys.stderr)
            return 1
        print(f"{target} matches the routes")
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from sluice.local.demo import run_demo, run_web_demo

    if args.web:
        return run_web_demo(Path(args.path) if args.path else None, queries=args.query)
    return run_demo(Path(args.path) if args.path else None, queries=args.query)


def _model_export(args: argparse.Namespace) -> int:
    from sluice.embedding.export import export_default

    folder = export_default(Path(args.out) if args.out else None, int8=args.int8)
    print(f"exported {'int8' if args.int8 else 'fp32'} model to {folder}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sluice", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    local = sub.add_parser("local", help="run Sluice on this machine").add_subparsers(dest="local", required=True)
    up = local.add_parser("up", help="start the local runtime")
    up.add_argument("--port", type=int, default=int(os.environ.get("SLUICE_PORT", "8787")))
    up.add_argument("--moto-port", type=int, default=int(os.environ.get("SLUICE_MOTO_PORT", "4566")),
                    help="where the local S3, SQS, KMS and Step Functions answer (moto); stable, so scripts can drop "
                         "files into inbox/")
    up.add_argument("--data-dir", default=None, help="where embedded PostgreSQL keeps data (.sluice/)")
    up.add_argument("--concurrency", type=int, default=int(os.environ.get("SLUICE_CONCURRENCY", "4")),
                    help="events of one function that may run at once, as Lambda runs several environments")
    up.add_argument("--no-pumps", action="store_true",
                    help="accept requests but run no stage or schedule (to look at what is queued)")
    up.add_argument("--expose", nargs="?", const="0.0.0.0", default=None, metavar="ADDRESS",  # noqa: S104
                    help="for functions in containers (sam local): moto and PostgreSQL also listen on ADDRESS "
                         "(default 0.0.0.0: every interface). Whoever reaches moto there reads and writes every "
                         "object, message and secret of the stack without credentials; PostgreSQL needs the "
                         "password in <data-dir>/pg-password over TCP. The API stays on loopback; both stop "
                         "with the stack")
    up.add_argument("--pg-port", type=int, default=int(os.environ.get("SLUICE_PG_PORT", "5433")),
                    help="PostgreSQL's TCP port with --expose")
    up.set_defaults(func=_local_up)
    env = local.add_parser("env", help="the --env-vars file for `sam local` (every function of template.yaml)")
    env.add_argument("--for-sam", action="store_true", required=True,
                     help="SAM CLI's format: {FunctionLogicalId: {VARIABLE: value}}")
    env.add_argument("--host", default="host.docker.internal",
                     help="the name containers reach this machine by (Linux: the docker0 address, e.g. 172.17.0.1, "
                          "or host.docker.internal with sam's --add-host host.docker.internal:host-gateway)")
    env.add_argument("--data-dir", default=None, help="the data directory of the `local up --expose` (.sluice/)")
    env.add_argument("--out", default=None, metavar="FILE",
                     help="write the file here, readable by its owner only (it holds the database password), "
                          "never over a file git tracks; without it the document goes to stdout")
    env.set_defaults(func=_local_env)
    seed = local.add_parser("seed-events", help="create the bases, documents and objects tests/events/*.json name")
    seed.add_argument("--data-dir", default=None, help="the data directory of the running `local up` (.sluice/)")
    seed.set_defaults(func=_local_seed_events)
    token = local.add_parser("token", help="mint a dev token the local gateway accepts")
    token.add_argument("--user", required=True)
    token.add_argument("--org")
    token.add_argument("--perm", action="append", help="collections:view, collections:edit, secrets:view")
    token.add_argument("--app-admin", action="store_true")
    token.add_argument("--ttl", type=int, default=12 * 3600, help="seconds")
    token.add_argument("--data-dir", default=None, help="the data directory of the `local up` to sign for (.sluice/)")
    token.set_defaults(func=_local_token)
    for owner in (local, sub):
        demo = owner.add_parser("demo", help="ingest a folder and search it, end to end")
        demo.add_argument("path", nargs="?", help="folder to ingest (default: examples/), or with --web the "
                                                  "static site to serve and crawl (default: examples/site)")
        demo.add_argument("--web", action="store_true",
                          help="crawl a small site on loopback through a web sync source, twice")
        demo.add_argument("--query", action="append", help="a query to run (repeatable)")
        demo.set_defaults(func=_demo)

    db = sub.add_parser("db", help="database tasks").add_subparsers(dest="db", required=True)
    mig = db.add_parser("migrate", help="apply pending schema migrations")
    mig.add_argument("--database-url", default=None)
    mig.set_defaults(func=_db_migrate)

    openapi = sub.add_parser("openapi", help="write the HTTP API's OpenAPI document to infra/openapi.json")
    openapi.add_argument("--check", action="store_true", help="only say whether the committed file is current")
    openapi.set_defaults(func=_openapi)

    model = sub.add_parser("model", help="the bundled embedding model").add_subparsers(dest="model", required=True)
    export = model.add_parser("export", help="build the ONNX model the local provider serves (a build step)")
    export.add_argument("--out", default=None,
                        help="models root: writes OUT/<model>/ (default: the root the runtime reads, inside "
                             "this Python environment; SLUICE_MODEL_DIR names it to the runtime)")
    export.add_argument("--int8", action="store_true", help="dynamically quantised weights (see bench/README.md)")
    export.set_defaults(func=_model_export)

    from sluice.cli.ingest import add_parser as add_ingest
    from sluice.cli.search import add_parser as add_search

    add_search(sub)
    add_ingest(sub)

    from sluice.cli.sync import add_parser as add_sync

    add_sync(sub)

    from sluice.cli.collections import add_parser as add_collections
    from sluice.cli.drop import add_parser as add_drop

    add_collections(sub)
    add_drop(sub)

    from sluice.cli.mcp import add_parser as add_mcp

    add_mcp(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    if given[:1] == ["mcp"]:
        # Every argument after it is the MCP server's own (sluice.cli.mcp), --help included.
        from sluice.cli.mcp import serve

        return serve(given[1:])
    args = build_parser().parse_args(given)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
