"""Load through the local gateway: many clients uploading real files, polling and searching at once,
then proof that nothing was lost (issue 17), and search latency idle vs while documents ingest
(issue 13's target: search p95 under 300 ms during ingestion on a 2-core machine).

    .venv/bin/python bench/load.py                        # 50 clients, 2 minutes, the real corpus
    .venv/bin/python bench/load.py --smoke                # 4 clients, 15 s, 12 files (the suite runs this)

The stack runs as `sluice local up` in a process of its own (its pumps and gateway do not share
this process's interpreter with the clients), on a fresh data directory, with the upload rate
limits raised (they are what a user's burst meets, not what is measured). Phases:

1. seed: a handful of documents indexed, so searches have something to find;
2. idle, then quiet: every client, then ``--searchers`` clients, search while nothing ingests;
3. mixed: for ``--seconds``, each client loops over upload (the next corpus file, until none are
   left), status poll (a document it uploaded) and search, in the ``--mix`` proportions;
4. draining: until every accepted upload has left the pipeline, ``--searchers`` clients search:
   latency while documents ingest, with the gateway serving nothing else (compared with quiet);
5. verify: every accepted upload reaches done (or error, with its sentence, for a file
   the corpus manifest expects refused), each done document is found by a search for words of its
   own text, the base lists each accepted document exactly once, and its chunk count is the sum of
   its documents'.

Tables: per route, requests, throughput, p50/p95/p99 and errors; search idle vs during ingestion;
the verification. Without ../shared, generated samples of every format stand in for the corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the checkout (main), or beside the worktrees' folder (/work/wt/<name>).
CORPUS = next((p / "shared" / "corpus" / "real" for p in (ROOT.parent, ROOT.parent.parent)
               if (p / "shared" / "corpus" / "real").is_dir()), ROOT.parent / "shared" / "corpus" / "real")

from harness import print_table  # noqa: E402

QUERIES = [
    "how are documents encrypted", "quarterly revenue figures", "installation instructions", "table of contents",
    "error message when the file cannot be opened", "who is the author", "summary of the results",
    "license terms and conditions", "contact address", "the date of the meeting",
]


# --- the files ----------------------------------------------------------------------------------

def corpus_files(limit: int) -> list[tuple[str, bytes, str]]:
    """(name, bytes, expectation) of real files the manifest expects to parse or refuse, small enough
    for a direct upload; generated samples of every format where ../shared is absent."""
    out: list[tuple[str, bytes, str]] = []
    if (CORPUS / "MANIFEST.tsv").is_file():
        for line in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:]:
            cols = line.split("\t")
            path, category, expectation = cols[0], cols[4], cols[5]
            if expectation not in ("parse_text", "refuse_corrupt") or category in ("scanned", "encrypted"):
                continue
            data = (CORPUS / path).read_bytes()
            if 0 < len(data) <= 3_500_000:
                out.append((f"{len(out):03d}_{Path(path).name}", data, expectation))
    else:
        sys.path.insert(0, str(ROOT))
        from tests.unit.parsing.parsing_samples import sample_for  # every format, generated

        extensions = [".pdf", ".docx", ".xlsx", ".xls", ".ods", ".pptx", ".odp", ".odt", ".msg", ".txt", ".md",
                      ".html", ".csv", ".json", ".xml", ".zip"]
        out = [(f"{n:03d}_sample{ext}", sample_for(ext), "parse_text") for n, ext in enumerate(extensions * 8)]
    random.Random(7).shuffle(out)
    return out[:limit]


# --- the stack --------------------------------------------------------------------------------

def local_up(data: Path, timings: Path) -> tuple[subprocess.Popen[str], str]:
    from sluice.local.runtime import free_port

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLUICE_", "AWS_", "DATABASE_", "MOTO_"))}
    env.update(UPLOAD_RATE_PER_MINUTE="100000", UPLOAD_RATE_PER_DAY="100000", POWERTOOLS_LOG_LEVEL="ERROR",
               PYTHONUNBUFFERED="1")
    port = free_port()
    process = subprocess.Popen(
        # bench/stack_clock.py is `sluice local up` with a clock on each queue pump (simulate.py's service times).
        [sys.executable, str(ROOT / "bench" / "stack_clock.py"), str(timings), "local", "up", "--data-dir", str(data),
         "--port", str(port), "--moto-port", str(free_port())],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise SystemExit("local up ended:\n" + "".join(lines))
        lines.append(line)
        if line.startswith("Ctrl-C stops."):
            # Keep reading its output (a full pipe would stop it) into a log beside its data.
            def keep() -> None:
                with STACK_LOG.open("w") as out:
                    for line in process.stdout or []:
                        out.write(line)
                        out.flush()
            threading.Thread(target=keep, daemon=True).start()
            return process, f"http://127.0.0.1:{port}"
    raise SystemExit("local up did not start:\n" + "".join(lines))


# --- the clients ------------------------------------------------------------------------------

@dataclass
class Record:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, dict[int, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    accepted: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # doc id -> (name, expectation, sha)
    accepted_at: dict[str, float] = field(default_factory=dict)  # doc id -> time.time() of its 202
    first_error: dict[tuple[str, int], str] = field(default_factory=dict)  # (route, status) -> its body
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, route: str, started: float, resp, ok: int) -> None:
        with self.lock:
            self.latencies[route].append((time.perf_counter() - started) * 1000)
            if resp.status_code != ok:
                self.errors[route][resp.status_code] += 1
                self.first_error.setdefault((route, resp.status_code), resp.text[:300])


def client(api, kb: dict, files: list, queue_lock: threading.Lock, record: Record, stop: threading.Event,
           mix: tuple[float, float, float], seed: int, phase: str) -> None:
    rng = random.Random(seed)
    mine: list[str] = []
    while not stop.is_set():
        roll = rng.random()
        action = "upload" if roll < mix[0] else "status" if roll < mix[0] + mix[1] else "search"
        if action == "upload":
            with queue_lock:
                item = files.pop() if files else None
            if item is None:
                action = "search"
            else:
                name, data, expectation = item
                started = time.perf_counter()
                resp = send(api, "POST", f"/kb/{kb['id']}/documents", files={"file": (name, data)})
                record.note(f"{phase} POST /kb/{{id}}/documents", started, resp, 202)
                if resp.status_code == 202:
                    doc_id = resp.json()["id"]
                    mine.append(doc_id)
                    with record.lock:
                        record.accepted[doc_id] = (name, expectation, "")
                        record.accepted_at[doc_id] = time.time()
                continue
        if action == "status" and mine:
            started = time.perf_counter()
            resp = send(api, "GET", f"/rag/documents/{rng.choice(mine)}")
            record.note(f"{phase} GET /rag/documents/{{id}}", started, resp, 200)
            continue
        started = time.perf_counter()
        resp = send(api, "POST", "/rag/search",
                    json={"query": rng.choice(QUERIES), "collections": [kb["collection_name"]]})
        record.note(f"{phase} POST /rag/search", started, resp, 200)


def run_clients(url: str, token: str, kb: dict, files: list, record: Record, *, clients: int, seconds: float,
                mix: tuple[float, float, float], phase: str, stop: threading.Event | None = None) -> float:
    """``clients`` threads for ``seconds``, or until ``stop`` is set when one is given."""
    import httpx

    from sluice.cli.http import api_transport

    lock = threading.Lock()
    if stop is None:
        stop = threading.Event()
        threading.Timer(seconds, stop.set).start()
    apis = [httpx.Client(base_url=url, timeout=120, transport=api_transport(),
                         headers={"Authorization": f"Bearer {token}"})
            for _ in range(clients)]
    threads = [threading.Thread(target=client, args=(apis[n], kb, files, lock, record, stop, mix, n, phase))
               for n in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for api in apis:
        api.close()
    return time.perf_counter() - started


# --- drain and verify ---------------------------------------------------------------------------

def drain(api, kb: dict, accepted: dict, timeout: float) -> tuple[dict[str, dict], float]:
    started = time.perf_counter()
    pending = set(accepted)
    final: dict[str, dict] = {}
    while pending and time.perf_counter() - started < timeout:
        for doc_id in list(pending):
            doc = api.get(f"/rag/documents/{doc_id}").json()
            if doc.get("status") != "processing":
                final[doc_id] = doc
                pending.discard(doc_id)
        time.sleep(1.0)
    # An archive's members are documents of their own, made while it parses: wait for them too, or
    # the verification counts a base that is still changing.
    while time.perf_counter() - started < timeout and \
            api.get(f"/kb/{kb['id']}/ingestion").json()["processing_count"]:
        time.sleep(1.0)
    for doc_id in pending:
        final[doc_id] = {"status": "processing"}
    return final, time.perf_counter() - started


def verify(api, kb: dict, accepted: dict, final: dict[str, dict]) -> list[list[object]]:
    rows: list[list[object]] = []
    done = [d for d, doc in final.items() if doc["status"] == "done"]
    errors = {d: doc for d, doc in final.items() if doc["status"] == "error"}
    stuck = [d for d, doc in final.items() if doc["status"] == "processing"]
    expected_refusals = {d for d, (_, expectation, _) in accepted.items() if expectation != "parse_text"}
    unexpected = {d: doc.get("error_message") for d, doc in errors.items() if d not in expected_refusals}
    silent = [d for d, doc in errors.items() if not doc.get("error_message")]
    rows.append(["accepted uploads", len(accepted), ""])
    rows.append(["done", len(done), ""])
    rows.append(["error, file expected refused", len(set(errors) & expected_refusals), ""])
    rows.append(["error, file expected to parse", len(unexpected),
                 "; ".join(f"{accepted[d][0]}: {(m or '')[:60]}" for d, m in list(unexpected.items())[:4])])
    rows.append(["error without a sentence", len(silent), ""])
    rows.append(["still processing (lost)", len(stuck), ", ".join(accepted[d][0] for d in stuck[:5])])

    listed: list[dict] = []
    for offset in range(0, 100_000, 200):
        page = api.get(f"/kb/{kb['id']}/documents", params={"limit": 200, "offset": offset}).json()["documents"]
        listed += page
        if len(page) < 200:
            break
    ids = [d["id"] for d in listed]
    rows.append(["listed by the base (seed excluded)", len(set(ids) & set(accepted)),
                 "duplicates: " + str(len(ids) - len(set(ids)))])
    # An archive's members are documents of their own (R-ARC-2), with the archive in their source path.
    uploaded = [d for d in listed if d["source_path"] is None]
    rows.append(["listed but never accepted", len({d["id"] for d in uploaded} - set(accepted) - SEEDED), ""])
    ingestion = api.get(f"/kb/{kb['id']}/ingestion").json()
    rows.append(["documents ingested (archive members and seed included)", ingestion["document_count"], ""])
    chunk_sum = sum(d["chunk_count"] for d in listed if d["status"] == "done")
    rows.append(["base chunk count = sum of its documents'", ingestion["chunk_count"] == chunk_sum,
                 f"{ingestion['chunk_count']} vs {chunk_sum}"])

    found = not_found = 0
    misses: list[str] = []
    for doc_id in done:
        if final[doc_id]["chunk_count"] == 0:
            continue  # an archive: its members hold the text
        text = api.get(f"/rag/documents/{doc_id}/content")
        words = " ".join(text.json()["content"].split()[:12]) if text.status_code == 200 else ""
        if not words:
            continue
        seen = api.post("/rag/search/diagnostic", json={"query": words, "collections": [kb["collection_name"]]})
        if seen.status_code == 200 and any(c["document_id"] == doc_id for c in seen.json()["candidates"]):
            found += 1
        else:
            not_found += 1
            misses.append(accepted[doc_id][0])
    rows.append(["done and found by their own words", found, ""])
    rows.append(["done but not found", not_found, ", ".join(misses[:4])])
    return rows


SEEDED: set[str] = set()
# What the stack printed (its warnings and errors), kept after the run.
STACK_LOG = Path(tempfile.gettempdir()) / "sluice-load-stack.log"


class Failed:
    """A request that got no HTTP answer (a reset or a timeout): status 0 in the tables."""

    status_code = 0

    def __init__(self, error: Exception) -> None:
        self.text = f"{type(error).__name__}: {error}"


def send(api, method: str, url: str, **kwargs):
    import httpx

    try:
        return api.request(method, url, **kwargs)
    except httpx.TransportError as error:
        return Failed(error)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--idle-seconds", type=float, default=20)
    parser.add_argument("--files", type=int, default=400, help="at most this many corpus files are uploaded")
    parser.add_argument("--mix", default="0.2,0.4,0.4", help="upload, status, search proportions")
    parser.add_argument("--drain-timeout", type=float, default=1800)
    parser.add_argument("--searchers", type=int, default=2,
                        help="clients that only search while the accepted documents drain through the pipeline")
    parser.add_argument("--smoke", action="store_true", help="4 clients, 15 s, 12 files: a quick check")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "load.json",
                        help="the run's record (accepted uploads and their times, the pumps' timings) for "
                        "simulate.py --validate-load")
    parser.add_argument("--validate", action="store_true",
                        help="then simulate the same arrivals with the service times of this run "
                        "(simulate.py --validate-load) and print measured against simulated")
    args = parser.parse_args()
    if args.smoke:
        args.clients, args.seconds, args.idle_seconds, args.files, args.searchers = 4, 15, 5, 12, 1
    mix = tuple(float(x) for x in args.mix.split(","))
    assert len(mix) == 3

    import httpx

    from sluice.cli.http import api_transport
    from sluice.local.tokens import mint

    files = corpus_files(args.files)
    total_files = len(files)
    print(f"{total_files} files from {CORPUS if (CORPUS / 'MANIFEST.tsv').is_file() else 'generated samples'}",
          flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    timings = args.out.with_name(args.out.stem + "_timings.jsonl")
    timings.unlink(missing_ok=True)
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="sluice-load-") as tmp:
        process, url = local_up(Path(tmp) / "data", timings)
        try:
            secret = (Path(tmp) / "data" / "jwt-secret").read_text()
            token = mint(secret, user="loader", org="load-org", permissions=["collections:edit", "collections:view"])
            api = httpx.Client(base_url=url, timeout=300, transport=api_transport(),
                               headers={"Authorization": f"Bearer {token}"})
            kb = api.post("/kb", json={"name": "load", "scope": "org"}).json()
            for n, q in enumerate(QUERIES[:4]):  # something for every search to find
                seed = api.post(f"/kb/{kb['id']}/documents",
                                files={"file": (f"seed{n}.txt", f"Notes on {q}. " .encode() * 40)}).json()
                SEEDED.add(seed["id"])
            drain(api, kb, {d: None for d in SEEDED}, 600)
            seed_chunks = api.get(f"/kb/{kb['id']}/ingestion").json()["chunk_count"]

            record = Record()
            idle_s = run_clients(url, token, kb, [], record, clients=args.clients, seconds=args.idle_seconds,
                                 mix=(0.0, 0.0, 1.0), phase="idle")
            quiet_s = run_clients(url, token, kb, [], record, clients=args.searchers, seconds=args.idle_seconds,
                                  mix=(0.0, 0.0, 1.0), phase="quiet")
            mixed_s = run_clients(url, token, kb, files, record, clients=args.clients, seconds=args.seconds,
                                  mix=mix, phase="mixed")  # type: ignore[arg-type]
            # While the pipeline drains, a few clients only search: latency while documents ingest,
            # without the gateway also serving the mixed phase's uploads and polls.
            drained = threading.Event()
            searching = threading.Thread(target=run_clients, args=(url, token, kb, [], record), kwargs=dict(
                clients=args.searchers, seconds=0, mix=(0.0, 0.0, 1.0), phase="draining", stop=drained))
            searching.start()
            final, drain_s = drain(api, kb, record.accepted, args.drain_timeout)
            drained_at = time.time()
            drained.set()
            searching.join()
            checks = verify(api, kb, record.accepted, final)
            ingestion = api.get(f"/kb/{kb['id']}/ingestion").json()
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)

    rows = []
    for route, values in sorted(record.latencies.items()):
        seconds = {"idle": idle_s, "quiet": quiet_s, "mixed": mixed_s, "draining": drain_s}[route.split()[0]]
        errs = sum(record.errors[route].values())
        rows.append([route, len(values), f"{len(values) / seconds:.1f}/s", percentile(values, 0.5),
                     percentile(values, 0.95), percentile(values, 0.99),
                     f"{errs}" + (f" {dict(record.errors[route])}" if errs else "")])
    print_table(f"Through the local gateway: {args.clients} clients; idle {idle_s:.0f} s (search only), then mixed "
                f"{mixed_s:.0f} s ({len(record.accepted)} of {total_files} files accepted); drain {drain_s:.0f} s",
                ["route", "requests", "throughput", "p50 ms", "p95 ms", "p99 ms", "errors"], rows)
    search_rows = []
    for busy_phase, idle_phase, clients in (("mixed", "idle", args.clients), ("draining", "quiet", args.searchers)):
        busy = record.latencies.get(f"{busy_phase} POST /rag/search", [])
        idle = record.latencies.get(f"{idle_phase} POST /rag/search", [])
        if idle and busy:
            search_rows += [[f"{clients} searching, {busy_phase} vs {idle_phase}: p{round(q * 100)} ms",
                             percentile(busy, q), percentile(idle, q),
                             f"{percentile(busy, q) / percentile(idle, q):.2f}"]
                            for q in (0.5, 0.95)]
    if search_rows:
        print_table("Search while documents ingest (issue 13 target: p95 under 300 ms during ingestion)",
                    ["figure", "during ingestion", "nothing ingesting", "ratio"], search_rows)
    if record.first_error:
        print_table("The first answer of each kind of error", ["route", "status", "body"],
                    [[route, status, body] for (route, status), body in sorted(record.first_error.items())])
    print_table("Nothing lost, nothing duplicated", ["check", "value", "detail"], checks)
    print(f"The stack's own output: {STACK_LOG}")
    args.out.write_text(json.dumps({
        "argv": sys.argv[1:], "clients": args.clients, "mixed_s": mixed_s, "drain_s": drain_s, "drained_at": drained_at,
        "load_average_start": load_start, "load_average_end": os.getloadavg(),
        "timings": str(timings), "seed_chunks": seed_chunks, "chunks": ingestion["chunk_count"] - seed_chunks,
        "documents_ingested": ingestion["document_count"] - len(SEEDED),
        "accepted": {d: {"name": record.accepted[d][0], "at": record.accepted_at[d], "status": final[d]["status"],
                         "chunks": final[d].get("chunk_count")} for d in record.accepted},
    }, indent=1))
    print(f"The run's record: {args.out}")
    if args.validate:
        from simulate import print_validation

        print_validation(args.out)
    value = {r[0]: r[1] for r in checks}
    broken = [name for name in ("still processing (lost)", "error without a sentence", "listed but never accepted",
                                "done but not found") if value[name]]
    if value["listed by the base (seed excluded)"] != value["accepted uploads"] or any(
            r[2] != "duplicates: 0" for r in checks if r[0] == "listed by the base (seed excluded)"):
        broken.append("listed once each")
    if value["base chunk count = sum of its documents'"] is not True:
        broken.append("chunk count")
    if broken:
        print("FAILED: " + ", ".join(broken))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
