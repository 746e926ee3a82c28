"""The deployed pipeline as a discrete-event simulation (issue 30): uploads → IngestQueue → parse →
ChunkQueue → chunk → EmbedQueue → embed + store, searches beside them, and the nightly sync's
Step Functions runs, driven by the service times bench/capacity.py measured and by template.yaml's own
settings (batch sizes, visibility timeouts, maxReceiveCount, timeouts, memory, reserved and maximum
concurrency, the sync Map's MaxConcurrency), under the AWS quotas below.

    .venv/bin/python bench/simulate.py                       # every scale, tables; plots under bench/out/
    .venv/bin/python bench/simulate.py --scenario burst      # 100,000 documents dropped in an hour
    .venv/bin/python bench/simulate.py --validate-local 12   # 12 documents through the local runtime's shape
    .venv/bin/python bench/simulate.py --validate-load bench/out/load.json   # against what bench/load.py measured

Service times come from bench/out/capacity.json when capacity.py has written it, otherwise from the
figures measured here on 2026-11-29/12-02 that are written below (each says where it comes from).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import simpy

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if str(ROOT / "shared") not in sys.path:
    sys.path.insert(0, str(ROOT / "shared"))

from bench.pipeline_model import (  # noqa: E402
    ACCOUNT_CONCURRENCY,
    Concurrency,
    EventSourceMapping,
    Function,
    Message,
    SqsQueue,
    TokenBucket,
    percentile,
)

OUT = ROOT / "bench" / "out"

# --- quotas (documented values; looked up 2026-12-02 with the search tool, corpus docs/pages) ------
QUOTAS: dict[str, dict[str, Any]] = {
    "lambda_account_concurrency": {
        "value": ACCOUNT_CONCURRENCY,
        "source": "Lambda quotas / scaling-behavior.html: 1,000 concurrent executions per Region by default"
        " (adjustable)",
    },
    "lambda_scaling_rate": {
        "value": "1,000 environments / 10 s per function",
        "source": "docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html",
    },
    "sqs_esm_scaling": {
        "value": "5 batches, +300/min, at most 1,000 per mapping; MaximumConcurrency 2-1,000",
        "source": "docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html; "
        "CloudFormation EventSourceMapping ScalingConfig",
    },
    "aurora_max_connections": {
        "value": {
            "db.t4g.medium": 90,
            "db.r6g.large": 1000,
            "db.r6g.xlarge": 2000,
            "db.r6g.2xlarge": 3000,
            "formula": "LEAST(DBInstanceClassMemory/9531392, 5000)",
        },
        "source": "Aurora user guide, 'Maximum connections to an Aurora DB instance' table "
        "(the r6g rows as listed for Aurora MySQL defaults; the PostgreSQL default "
        "is the formula); RDS Proxy pools up to MaxConnectionsPercent of it",
    },
    "bedrock_titan_embed_v2_rpm": {
        "value": 6000,
        "source": "Bedrock quotas-runtime.html: embedding models are throttled by requests per minute, per model"
        " and Region. "
        "The default for Titan Text Embeddings V2 was NOT found in the stored pages: 6,000 is an assumption to "
        "check in Service Quotas before relying on it",
    },
    "s3_prefix_rates": {
        "value": {"put": 3500, "get": 5500},
        "source": "S3 performance guidelines: 3,500 PUT/COPY/POST/DELETE and 5,500 GET/HEAD requests"
        " per second per prefix",
    },
    "stepfunctions_transitions": {
        "value": "standard: 5,000/s bucket, 5,000/s refill (us-east-1)",
        "source": "Step Functions quotas, 'StateTransition' throttling (figure recalled, not re-fetched this session)",
    },
}

# us-east-1 list prices, dated 2026-12-02 (Lambda's confirmed in the AWS pricing whitepaper and a pricing
# page excerpt found with the search tool; the rest recalled from the services' pricing pages and marked so
# in SCALING.md). Aurora and RDS Proxy are hourly, not per document, and are left out of the per-1,000 cost.
PRICES = {
    "lambda_gb_s": 0.0000166667,  # x86, first 6 billion GB-s a month
    "lambda_request": 0.20 / 1e6,
    "sqs_request": 0.40 / 1e6,  # standard queue, past the free tier; a 64 KB chunk is one request
    "s3_put": 0.005 / 1000,
    "s3_get": 0.0004 / 1000,
    "sfn_transition": 0.025 / 1000,  # standard workflows
    "titan_v2_per_1k_tokens": 0.00002,
}


@dataclass
class ServiceTimes:
    """Seconds of work on one core of this machine (bench/capacity.py), per unit."""

    parse_s_per_doc: float = 0.142  # bench/README ingest.py idle: 34 s of parse over 240 documents
    chunk_s_per_doc: float = 0.042  # 10 s over 240
    embed_s_per_chunk: float = 0.058  # 45 s over 780 chunks (2 threads; the model's threads)
    store_s_per_doc: float = 0.0125  # 3 s over 240 (one COPY transaction per document)
    chunks_per_doc: float = 3.25  # 780 / 240
    chars_per_doc: float = 2100.0  # ~635 characters a chunk
    invocation_overhead_s: float = 0.03  # S3 GET/PUT of the artifacts and the row's claim (assumed)
    search_s: float = 0.035  # search_latency.py, 100k chunks, p50 with text (~27-44 ms)
    search_embed_s: float = 0.01  # one query through the local model
    sync_decide_s_per_1000: float = 2.0  # bench/sync.py order of magnitude (assumed where not measured)
    source: str = "defaults: bench/README.md figures of 2026-11-29 and 2026-12-01"

    @classmethod
    def load(cls, path: Path = OUT / "capacity.json") -> ServiceTimes:
        if path.is_file():
            data = json.loads(path.read_text())
            known = {k: v for k, v in data.get("service_times", {}).items() if k in cls.__dataclass_fields__}
            return replace(cls(), **known, source=f"measured: {path.relative_to(ROOT)}")
        return cls()


# --- the template's settings ------------------------------------------------------------------------


@dataclass
class StageSettings:
    function: str
    queue: str
    batch_size: int
    visibility_timeout: float
    max_receive_count: int | None
    timeout: float
    memory_mb: int
    reserved: int | None
    maximum_concurrency: int | None


@dataclass
class Settings:
    stages: dict[str, StageSettings]
    search_memory_mb: int
    search_timeout: float
    sync_map_concurrency: int
    sync_task_memory_mb: int


STAGE_FUNCTIONS = {"parse": "ParseFunction", "chunk": "ChunkFunction", "embed": "EmbedFunction"}


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | str) and str(value).isdigit() else None


def read_settings(template: Path = ROOT / "template.yaml") -> Settings:
    """Every figure the model takes from the deployment, read from ``template`` (and the sync state
    machine it names), never restated here."""
    from sluice.local.template import load

    doc = load(template)
    resources = doc["Resources"]
    globals_fn = doc.get("Globals", {}).get("Function", {})
    params = doc.get("Parameters", {})

    def prop(fn: dict[str, Any], key: str) -> Any:
        return fn["Properties"].get(key, globals_fn.get(key))

    def value(v: Any) -> Any:
        if isinstance(v, dict) and "Ref" in v and v["Ref"] in params:
            return params[v["Ref"]].get("Default")
        if isinstance(v, dict) and "Fn::If" in v:
            return value(v["Fn::If"][1])
        return v

    stages = {}
    for stage, name in STAGE_FUNCTIONS.items():
        fn = resources[name]
        (event,) = [e for e in fn["Properties"]["Events"].values() if e["Type"] == "SQS"]
        queue_name = event["Properties"]["Queue"]["Fn::GetAtt"][0]
        queue = resources[queue_name]["Properties"]
        redrive = queue.get("RedrivePolicy", {})
        scaling = event["Properties"].get("ScalingConfig", {})
        stages[stage] = StageSettings(
            function=name,
            queue=queue_name,
            batch_size=int(event["Properties"].get("BatchSize", 10)),
            visibility_timeout=float(queue.get("VisibilityTimeout", 30)),
            max_receive_count=_int_or_none(redrive.get("maxReceiveCount")),
            timeout=float(prop(fn, "Timeout")),
            memory_mb=int(prop(fn, "MemorySize")),
            reserved=_int_or_none(value(fn["Properties"].get("ReservedConcurrentExecutions"))),
            maximum_concurrency=_int_or_none(value(scaling.get("MaximumConcurrency"))),
        )
    search = resources["SearchFunction"]
    machine = resources["SyncStateMachine"]["Properties"]
    asl = json.loads((template.parent / machine["DefinitionUri"]).read_text())
    map_concurrency = next(s["MaxConcurrency"] for s in asl["States"].values() if s["Type"] == "Map")
    return Settings(
        stages=stages,
        search_memory_mb=int(prop(search, "MemorySize")),
        search_timeout=float(prop(search, "Timeout")),
        sync_map_concurrency=int(map_concurrency),
        sync_task_memory_mb=int(prop(resources["SyncTaskFunction"], "MemorySize")),
    )


# --- the pipeline -----------------------------------------------------------------------------------


@dataclass
class Options:
    account_concurrency: int = ACCOUNT_CONCURRENCY
    max_connections: int = 1000  # db.r6g.large
    proxy: bool = False  # RDS Proxy: a connection only for the length of a transaction
    embedder: str = "local"  # or "bedrock" (Titan V2: one request per chunk)
    bedrock_rpm: float = 6000
    local_shape: bool = False  # the local runtime: one pump per queue, one batch at a time, 1 s retries
    seed: int = 30


@dataclass
class Doc:
    id: int
    uploaded: float
    chunks: int
    done: float | None = None


@dataclass
class Result:
    docs: list[Doc] = field(default_factory=list)
    searches: list[float] = field(default_factory=list)
    search_failures: int = 0
    depth: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)
    queues: dict[str, SqsQueue] = field(default_factory=dict)
    db_peak: int = 0
    db_refused: int = 0
    db_waited: float = 0.0
    bedrock_waited: float = 0.0
    sfn_transitions: int = 0
    s3_puts: int = 0
    s3_gets: int = 0
    sqs_requests: int = 0
    bedrock_tokens: float = 0.0
    horizon: float = 0.0


class Pipeline:
    def __init__(self, env: simpy.Environment, settings: Settings, service: ServiceTimes, options: Options) -> None:
        self.env = env
        self.settings = settings
        self.service = service
        self.options = options
        self.rng = random.Random(options.seed)
        self.result = Result()
        self.account = Concurrency(env, options.account_concurrency)
        self.db = simpy.Resource(env, capacity=options.max_connections)
        self.bedrock = TokenBucket(env, options.bedrock_rpm)
        self.queues: dict[str, SqsQueue] = {}
        self.functions: dict[str, Function] = {}
        handlers = {"parse": self._parse, "chunk": self._chunk, "embed": self._embed}
        for stage, s in settings.stages.items():
            dlq = SqsQueue(env, s.queue + "DLQ", 300)
            queue = SqsQueue(env, s.queue, s.visibility_timeout, s.max_receive_count, dlq)
            slots = self.account.reserve(s.reserved) if s.reserved else None
            fn = Function(env, s.function, s.memory_mb, s.timeout, handlers[stage], slots or self.account.unreserved)
            self.queues[stage], self.functions[stage] = queue, fn
        # A reservation replaces the unreserved pool; the functions without one share the latest.
        for stage, s in settings.stages.items():
            if not s.reserved:
                self.functions[stage].slots = self.account.unreserved
        for stage, s in settings.stages.items():
            cap = 1 if options.local_shape else s.maximum_concurrency
            EventSourceMapping(
                env,
                self.queues[stage],
                self.functions[stage],
                s.batch_size,
                cap,
                initial=1 if options.local_shape else 5,
            )
        self.search_fn = Function(
            env,
            "SearchFunction",
            settings.search_memory_mb,
            settings.search_timeout,
            self._search_handler,
            self.account.unreserved,
        )
        self.sync_fn = Function(
            env, "SyncTaskFunction", settings.sync_task_memory_mb, 900.0, self._search_handler, self.account.unreserved
        )  # its work is timed in sync_base, not by a handler
        self.result.functions = {**self.functions, "search": self.search_fn, "sync": self.sync_fn}
        self.result.queues = self.queues
        env.process(self._sample())

    def cpu(self, stage: str, seconds: float, threads: int = 1) -> float:
        if self.options.local_shape:
            return seconds
        return seconds * self.functions[stage].cpu_factor(threads)

    def _sample(self) -> Any:
        while True:
            for stage, q in self.queues.items():
                self.result.depth.setdefault(stage, []).append((self.env.now, q.depth() + q.in_flight))
            yield self.env.timeout(10.0)

    def upload(self, chunks: int | None = None) -> Doc:
        n = chunks if chunks is not None else max(1, round(self.rng.expovariate(1 / self.service.chunks_per_doc)))
        doc = Doc(len(self.result.docs), self.env.now, n)
        self.result.docs.append(doc)
        self.result.s3_puts += 1  # the upload itself (rag/<collection>/...)
        self.queues["parse"].send(doc)
        self.result.sqs_requests += 1  # S3's notification into the queue
        return doc

    # The DB: without a proxy, an invocation holds its environment's connection for its whole run and
    # is refused (fails, comes back after the visibility timeout) when none is left; with a proxy it
    # waits for one only around its transactions.
    def _with_db(self, seconds: float) -> Any:
        asked = self.env.now
        with self.db.request() as conn:
            yield conn
            self.result.db_waited += self.env.now - asked
            self.result.db_peak = max(self.result.db_peak, self.db.count)
            yield self.env.timeout(seconds)

    def _stage(self, stage: str, batch: list[Message], work: Any) -> Any:
        self.result.sqs_requests += 2  # receive and delete (batched: counted per invocation)
        if self.options.proxy or self.options.local_shape:
            failed = yield from work(None)
            return failed
        if self.db.count >= self.db.capacity:
            self.result.db_refused += 1
            return list(batch)
        with self.db.request() as conn:
            yield conn
            self.result.db_peak = max(self.result.db_peak, self.db.count)
            failed = yield from work(conn)
        return failed

    def _parse(self, fn: Function, batch: list[Message]) -> Any:
        def work(conn: Any) -> Any:
            yield self.env.timeout(self.service.invocation_overhead_s)
            for m in batch:
                yield self.env.timeout(self.cpu("parse", self.service.parse_s_per_doc))
                if self.options.proxy and not self.options.local_shape:
                    yield from self._with_db(0.005)  # the claim on the row
                self.result.s3_gets += 1
                self.result.s3_puts += 2  # the text and the parsed artifact
                self.queues["chunk"].send(m.body)
                self.result.sqs_requests += 1
            return []

        return (yield from self._stage("parse", batch, work))

    def _chunk(self, fn: Function, batch: list[Message]) -> Any:
        def work(conn: Any) -> Any:
            yield self.env.timeout(self.service.invocation_overhead_s)
            for m in batch:
                yield self.env.timeout(self.cpu("chunk", self.service.chunk_s_per_doc))
                self.result.s3_gets += 1
                self.result.s3_puts += 1
                self.queues["embed"].send(m.body)
                self.result.sqs_requests += 1
            return []

        return (yield from self._stage("chunk", batch, work))

    def _embed(self, fn: Function, batch: list[Message]) -> Any:
        def work(conn: Any) -> Any:
            yield self.env.timeout(self.service.invocation_overhead_s)
            for m in batch:
                doc: Doc = m.body
                self.result.s3_gets += 1
                if self.options.embedder == "bedrock":
                    asked = self.env.now
                    for _ in range(doc.chunks):  # Titan V2 embeds one text a request
                        yield from self.bedrock.take(1)
                    self.result.bedrock_waited += self.env.now - asked
                    self.result.bedrock_tokens += doc.chunks * self.service.chars_per_doc / doc.chunks / 4
                    yield self.env.timeout(0.05 * doc.chunks)  # ~50 ms a call (assumed)
                else:
                    yield self.env.timeout(self.cpu("embed", self.service.embed_s_per_chunk * doc.chunks, threads=2))
                store = self.cpu("embed", self.service.store_s_per_doc)
                if self.options.proxy and not self.options.local_shape:
                    yield from self._with_db(store)
                else:
                    yield self.env.timeout(store)
                doc.done = self.env.now
            return []

        return (yield from self._stage("embed", batch, work))

    def _search_handler(self, fn: Function, batch: list[Message]) -> Any:
        work = self.service.search_embed_s * fn.cpu_factor(2) + self.service.search_s
        if self.options.proxy:
            yield from self._with_db(work)
            return []
        if self.db.count >= self.db.capacity:
            self.result.db_refused += 1
            return list(batch)
        with self.db.request() as conn:
            yield conn
            yield self.env.timeout(work)
        return []

    def search(self) -> Any:
        started = self.env.now
        failed = yield self.env.process(self.search_fn.invoke([]))
        if failed:
            self.result.search_failures += 1
        else:
            self.result.searches.append(self.env.now - started)

    # The nightly sync: per base one execution: list, then a Map of batches (MaxConcurrency from the
    # template), each deciding its files; the changed ones handed to the pipeline.
    def sync_base(self, objects: int, changed: float, batch_files: int = 25) -> Any:
        memory = self.settings.sync_task_memory_mb
        sync_fn = self.sync_fn
        batches = math.ceil(objects / batch_files)
        self.result.sfn_transitions += 6  # start, list, map entry/exit, await, reconcile, finish (approx.)
        yield self.env.timeout(0.2 + objects / 1000 * 0.1)  # list: 1,000 keys a page, ~0.1 s a page (assumed)
        map_slots = simpy.Resource(self.env, capacity=self.settings.sync_map_concurrency)

        def one(batch_no: int) -> Any:
            with map_slots.request() as turn:
                yield turn
                with sync_fn.slots.request() as slot:
                    yield slot
                    seconds = self.service.sync_decide_s_per_1000 * batch_files / 1000 + 0.05
                    yield self.env.timeout(seconds)
                    sync_fn.stats.gb_seconds += seconds * memory / 1024
                    sync_fn.stats.invocations += 1
                self.result.sfn_transitions += 3
                n_changed = sum(1 for _ in range(batch_files) if self.rng.random() < changed)
                for _ in range(n_changed):
                    self.result.s3_gets += 1
                    self.upload()

        yield simpy.AllOf(self.env, [self.env.process(one(b)) for b in range(batches)])


# --- workloads --------------------------------------------------------------------------------------


def run(
    settings: Settings,
    service: ServiceTimes,
    options: Options,
    *,
    upload_rate: float = 0.0,
    horizon: float = 3600.0,
    burst: int = 0,
    burst_seconds: float = 3600.0,
    search_rate: float = 0.0,
    sync_bases: int = 0,
    sync_objects: int = 10_000,
    sync_changed: float = 0.01,
    drain: bool = True,
    fixed_docs: list[int] | None = None,
    arrivals: list[tuple[float, int]] | None = None,
) -> Result:
    """``fixed_docs``: documents (their chunk counts) all there at time 0; ``arrivals``: (time, chunks) of
    each document, as a measured run's uploads arrived; otherwise Poisson uploads at ``upload_rate``."""
    env = simpy.Environment()
    pipe = Pipeline(env, settings, service, options)
    rng = random.Random(options.seed + 1)

    def uploads() -> Any:
        if arrivals is not None:
            for at, chunks in sorted(arrivals):
                yield env.timeout(max(0.0, at - env.now))
                pipe.upload(chunks)
            return
        while env.now < horizon and upload_rate > 0:
            yield env.timeout(rng.expovariate(upload_rate))
            pipe.upload()

    def bursts() -> Any:
        for _ in range(burst):
            yield env.timeout(rng.expovariate(burst / burst_seconds))
            pipe.upload()

    def searches() -> Any:
        while env.now < horizon and search_rate > 0:
            yield env.timeout(rng.expovariate(search_rate))
            env.process(pipe.search())

    def syncs() -> Any:
        for _ in range(sync_bases):
            env.process(pipe.sync_base(sync_objects, sync_changed))
            yield env.timeout(1.0)

    if fixed_docs is not None:
        for chunks in fixed_docs:
            pipe.upload(chunks)
    else:
        env.process(uploads())
    if burst:
        env.process(bursts())
    env.process(searches())
    env.process(syncs())
    env.run(until=horizon)
    if drain:
        limit = horizon + 48 * 3600
        while env.peek() < limit and any(d.done is None for d in pipe.result.docs) and not _all_dead(pipe):
            env.run(until=min(limit, env.now + 600))
    pipe.result.horizon = env.now
    return pipe.result


# --- validation against a measured local run (bench/load.py) --------------------------------------------


def spread(total: int, n: int) -> list[int]:
    """``total`` chunks over ``n`` documents as evenly as whole chunks allow (the sum is ``total``)."""
    base, extra = divmod(total, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


def validate_load(record_path: Path, template: Path = ROOT / "template.yaml") -> dict[str, Any]:
    """The run bench/load.py recorded, against the local shape simulated with that run's own service times
    and arrivals. Service times are each pump's measured busy seconds over the accepted uploads (so each
    stage's total work is the measured total: archives' members, refusals and retries folded in), the
    embed pump's split into the model's calls per chunk and the rest per document; the measured drain is
    from the first accepted upload to the end of the last batch any pipeline pump delivered."""
    from bench.stack_clock import read

    record = json.loads(record_path.read_text())
    settings = read_settings(template)
    queues = {s.queue: stage for stage, s in settings.stages.items()}
    accepted = record["accepted"]
    if not accepted:
        raise SystemExit(f"{record_path}: no accepted uploads to compare")
    times = sorted(a["at"] for a in accepted.values())
    first, last_upload = times[0], times[-1]
    lines = read(Path(record["timings"]))
    batches = [b for b in lines if b.get("queue") in queues and b["start"] >= first - 1.0]
    parts = [b for b in lines if b.get("part") and b["start"] >= first - 1.0]
    busy = {stage: sum(b["seconds"] for b in batches if queues[b["queue"]] == stage) for stage in settings.stages}
    delivered = {
        stage: sorted((b for b in batches if queues[b["queue"]] == stage), key=lambda b: b["start"])
        for stage in settings.stages
    }
    # Between two batches of a pump: waiting for work (an upload arrived, or a batch of the stage before was
    # running or ended, during the gap: that stage sends its message before its batch ends) or, otherwise,
    # work was waiting and the gap is the pump's own receive (which the model leaves out).
    upstream, gaps = [(t, t) for t in times], {}
    for stage in settings.stages:
        spans = [(b["start"], b["start"] + b["seconds"]) for b in delivered[stage]]
        waiting = overhead = 0.0
        for (_, done), (nxt, _) in zip(spans[:-1], spans[1:], strict=True):
            if any(u0 <= nxt and u1 >= done for u0, u1 in upstream):
                waiting += max(0.0, nxt - done)
            else:
                overhead += max(0.0, nxt - done)
        gaps[stage] = (waiting, overhead)
        upstream = spans
    end = max(b["start"] + b["seconds"] for b in batches)
    n = len(accepted)
    chunks = max(1, int(record["chunks"]))
    embed_model = sum(b["seconds"] for b in parts if b["part"] == "embed")
    service = ServiceTimes(
        parse_s_per_doc=busy["parse"] / n,
        chunk_s_per_doc=busy["chunk"] / n,
        embed_s_per_chunk=embed_model / chunks,
        store_s_per_doc=(busy["embed"] - embed_model) / n,
        chunks_per_doc=chunks / n,
        invocation_overhead_s=0.0,  # in the pumps' measured seconds already
        source=f"measured in the same run: {record_path.name} and its pump timings",
    )
    sizes = spread(chunks, n)
    result = run(
        settings,
        service,
        Options(local_shape=True),
        arrivals=[(t - first, c) for t, c in zip(times, sizes, strict=True)],
        horizon=last_upload - first + 1.0,
    )
    simulated = summarise(result)
    sim_last = max(d.done for d in result.docs if d.done is not None)
    measured = {
        "drain_s": end - first,
        "throughput_docs_per_min": 60 * n / (end - first),
        "tail_s": end - last_upload,
        "uploads_s": last_upload - first,
    }
    return {
        "documents": n,
        "chunks": chunks,
        "load_average": [record.get("load_average_start"), record.get("load_average_end")],
        "service": service,
        "stages": {
            stage: {
                "busy_s": busy[stage],
                "batches": len(delivered[stage]),
                "messages": sum(b["messages"] for b in delivered[stage]),
                "utilisation": busy[stage] / (end - first),
                "gaps_waiting_s": gaps[stage][0],
                "gaps_with_work_s": gaps[stage][1],
            }
            for stage in settings.stages
        },
        "measured": measured,
        "simulated": {
            "drain_s": simulated["drain_s"],
            "throughput_docs_per_min": simulated["throughput_docs_per_min"],
            "tail_s": sim_last - (last_upload - first),
            "done": simulated["done"],
        },
    }


def _loads(values: list[float] | None) -> str:
    return " / ".join(f"{x:.1f}" for x in values) if values else "not recorded"


def print_validation(record_path: Path) -> dict[str, Any]:
    from harness import print_table

    v = validate_load(record_path)
    s: ServiceTimes = v["service"]
    print_table(
        f"Pumps in the measured run ({v['documents']} accepted uploads, {v['chunks']} chunks; load average "
        f"{_loads(v['load_average'][0])} at the start, {_loads(v['load_average'][1])} at the end)",
        ["stage", "batches", "messages", "busy s", "busy share of the drain", "per accepted upload s",
         "gaps: waiting for work s", "gaps: work waiting (the pump's receive) s"],
        [
            [k, st["batches"], st["messages"], f"{st['busy_s']:.1f}", f"{st['utilisation']:.0%}",
             f"{st['busy_s'] / v['documents']:.3f}", f"{st['gaps_waiting_s']:.1f}", f"{st['gaps_with_work_s']:.1f}"]
            for k, st in v["stages"].items()
        ],
    )
    print(
        f"simulated with parse {s.parse_s_per_doc:.3f} s/doc, chunk {s.chunk_s_per_doc:.3f} s/doc, embed "
        f"{s.embed_s_per_chunk:.4f} s/chunk + store and the rest {s.store_s_per_doc:.3f} s/doc"
    )
    m, sim = v["measured"], v["simulated"]
    print_table(
        f"Validation: the local runtime measured vs simulated (local shape: one pump per queue, one batch at a "
        f"time); uploads arrived over {m['uploads_s']:.0f} s",
        ["figure", "measured", "simulated", "simulated / measured"],
        [
            ["drain: first accepted upload to the last document done, s", f"{m['drain_s']:.1f}",
             f"{sim['drain_s']:.1f}", f"{sim['drain_s'] / m['drain_s']:.2f}"],
            ["throughput, documents/min", f"{m['throughput_docs_per_min']:.1f}",
             f"{sim['throughput_docs_per_min']:.1f}",
             f"{sim['throughput_docs_per_min'] / m['throughput_docs_per_min']:.2f}"],
            ["tail: last upload to the last document done, s", f"{m['tail_s']:.1f}", f"{sim['tail_s']:.1f}",
             f"{sim['tail_s'] / m['tail_s']:.2f}" if m["tail_s"] > 0 else "-"],
        ],
    )
    return v


def _all_dead(pipe: Pipeline) -> bool:
    pending = sum(1 for d in pipe.result.docs if d.done is None)
    dead = sum(len(q.dead) for q in pipe.queues.values())
    return pending <= dead


def summarise(result: Result) -> dict[str, Any]:
    done = [d for d in result.docs if d.done is not None]
    e2e = [d.done - d.uploaded for d in done]
    last = max((d.done for d in done), default=0.0)
    first = min((d.uploaded for d in result.docs), default=0.0)
    waits = {stage: fn.stats.waited_for_concurrency for stage, fn in result.functions.items()}
    return {
        "documents": len(result.docs),
        "done": len(done),
        "dead_lettered": sum(len(q.dead) for q in result.queues.values()),
        "redelivered": sum(q.redelivered for q in result.queues.values()),
        "drain_s": last - first,
        "throughput_docs_per_min": 60 * len(done) / max(1e-9, last - first),
        "e2e_p50_s": percentile(e2e, 0.5),
        "e2e_p95_s": percentile(e2e, 0.95),
        "search_p95_ms": 1000 * percentile(result.searches, 0.95),
        "search_failures": result.search_failures,
        "peak_concurrency": {s: fn.stats.peak_concurrency for s, fn in result.functions.items()},
        "waited_for_concurrency_s": waits,
        "db_peak": result.db_peak,
        "db_refused": result.db_refused,
        "db_waited_s": result.db_waited,
        "bedrock_waited_s": result.bedrock_waited,
        "peak_depth": {s: max((d for _, d in v), default=0) for s, v in result.depth.items()},
    }


def cost_per_1000(result: Result) -> dict[str, float]:
    n = max(1, len(result.docs))
    gb_s = sum(fn.stats.gb_seconds for fn in result.functions.values())
    requests = sum(fn.stats.invocations for fn in result.functions.values())
    parts = {
        "lambda_gb_s": gb_s * PRICES["lambda_gb_s"],
        "lambda_requests": requests * PRICES["lambda_request"],
        "sqs": result.sqs_requests * PRICES["sqs_request"],
        "s3": result.s3_puts * PRICES["s3_put"] + result.s3_gets * PRICES["s3_get"],
        "step_functions": result.sfn_transitions * PRICES["sfn_transition"],
        "bedrock": result.bedrock_tokens / 1000 * PRICES["titan_v2_per_1k_tokens"],
    }
    return {k: 1000 * v / n for k, v in parts.items()} | {"total": 1000 * sum(parts.values()) / n}


# Today's load, as assumed for the scales (SCALING.md): 2,000 uploads a day, one search every 2 s, the
# nightly sync of the issue (50 bases x 10,000 objects, 1 % changed). 10x, 100x, 1000x multiply all three.
TODAY = {"upload_rate": 2000 / 86400, "search_rate": 0.5, "sync_bases": 50}


def bottleneck(
    settings: Settings, service: ServiceTimes, options: Options, scale: float
) -> list[tuple[str, float, str]]:
    """Each limit's utilisation at ``scale`` times today's load during the nightly sync hour (demand /
    capacity), with what lifts it, highest first: the first above 1 is where work waits."""
    sync_docs_per_s = TODAY["sync_bases"] * scale * 10_000 * 0.01 / 3600  # the changed documents, in an hour
    docs = TODAY["upload_rate"] * scale + sync_docs_per_s
    embed_s = (
        service.embed_s_per_chunk * service.chunks_per_doc * 1769 / min(2 * 1769, settings.stages["embed"].memory_mb)
    )
    stage_seconds = {
        "parse": service.parse_s_per_doc * max(1.0, 1769 / settings.stages["parse"].memory_mb),
        "chunk": service.chunk_s_per_doc * max(1.0, 1769 / settings.stages["chunk"].memory_mb),
        "embed": embed_s + service.store_s_per_doc,
    }
    busy = {s: docs * t for s, t in stage_seconds.items()}
    searches = TODAY["search_rate"] * scale
    search_conc = searches * (service.search_s + service.search_embed_s)
    total = sum(busy.values()) + search_conc
    rows = [
        (
            "Lambda account concurrency",
            total / options.account_concurrency,
            "a quota increase (Service Quotas), or MaximumConcurrency per queue to share it",
        )
    ]
    for s, b in busy.items():
        cap = settings.stages[s].maximum_concurrency or settings.stages[s].reserved or 1000
        rows.append((f"{s} concurrency (ESM cap {cap})", b / cap, f"raise {settings.stages[s].function}'s cap"))
    conns = total if not options.proxy else docs * service.store_s_per_doc + search_conc
    rows.append(
        (
            f"Aurora connections ({options.max_connections}{', via RDS Proxy' if options.proxy else ''})",
            conns / options.max_connections,
            "RDS Proxy (DatabaseProxyHost), then a larger instance class",
        )
    )
    rows.append(
        (
            "Bedrock Titan V2 requests/min (if the embedder is Bedrock)",
            docs * service.chunks_per_doc * 60 / options.bedrock_rpm,
            "a quota increase, or the local model",
        )
    )
    rows.append(
        (
            "S3 PUT per prefix (stage/ holds both artifacts)",
            docs * 3 / 3500,
            "artifact keys spread over prefixes (per collection)",
        )
    )
    sfn_per_s = TODAY["sync_bases"] * scale * (6 + 3 * 400) / 3600
    rows.append(
        ("Step Functions state transitions (5,000/s)", sfn_per_s / 5000, "larger sync batches (SYNC_BATCH_FILES)")
    )
    if options.embedder != "bedrock":
        rows = [r for r in rows if not r[0].startswith("Bedrock")]
    return sorted(rows, key=lambda r: -r[1])


def plot(result: Result, name: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plots skipped: matplotlib is not installed (pip install -e '.[bench]')")
        return
    OUT.mkdir(parents=True, exist_ok=True)
    fig, (a, b) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for stage, series in result.depth.items():
        a.plot([t / 60 for t, _ in series], [d for _, d in series], label=stage)
    a.set_ylabel("messages waiting or in flight")
    a.legend()
    done = sorted((d.done, d.done - d.uploaded) for d in result.docs if d.done is not None)
    b.plot([t / 60 for t, _ in done], [e / 60 for _, e in done], ",")
    b.set_ylabel("upload → searchable (min)")
    b.set_xlabel("minutes")
    fig.suptitle(name)
    fig.tight_layout()
    fig.savefig(OUT / f"{name}.png", dpi=100)
    print(f"plot: {OUT / (name + '.png')}")


def main() -> int:
    from harness import print_table

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--template", type=Path, default=ROOT / "template.yaml")
    parser.add_argument("--scenario", choices=["all", "scales", "burst", "sync"], default="all")
    parser.add_argument("--minutes", type=float, default=20, help="the steady window simulated per scale")
    parser.add_argument("--proxy", action="store_true")
    parser.add_argument("--embedder", choices=["local", "bedrock"], default="local")
    parser.add_argument(
        "--validate-local",
        type=int,
        metavar="DOCS",
        default=0,
        help="simulate DOCS documents dropped at once through the local runtime's shape: one pump "
        "per queue taking one batch at a time, 1 s retries (compare with bench/load.py)",
    )
    parser.add_argument(
        "--validate-load",
        type=Path,
        metavar="LOAD_JSON",
        help="the run bench/load.py recorded (bench/out/load.json) against the same arrivals simulated with "
        "that run's own pump service times",
    )
    args = parser.parse_args()
    if args.validate_load:
        print_validation(args.validate_load)
        return 0
    settings = read_settings(args.template)
    if args.validate_local:
        service = ServiceTimes.load()
        result = run(
            settings,
            service,
            Options(local_shape=True),
            fixed_docs=[round(service.chunks_per_doc)] * args.validate_local,
            horizon=1.0,
        )
        s = summarise(result)
        print(
            f"local shape, {args.validate_local} documents ({service.source}): drain {s['drain_s']:.1f} s, "
            f"{s['throughput_docs_per_min']:.1f} documents/min, e2e p50 {s['e2e_p50_s']:.1f} s"
        )
        return 0
    service = ServiceTimes.load()
    options = Options(proxy=args.proxy, embedder=args.embedder)
    print(f"service times: {service.source}")
    print_table(
        "Template settings read",
        [
            "stage",
            "function",
            "batch",
            "visibility s",
            "maxReceive",
            "timeout s",
            "memory MB",
            "vCPU",
            "reserved",
            "MaximumConcurrency",
        ],
        [
            [
                k,
                s.function,
                s.batch_size,
                s.visibility_timeout,
                s.max_receive_count,
                s.timeout,
                s.memory_mb,
                f"{s.memory_mb / 1769:.2f}",
                s.reserved,
                s.maximum_concurrency,
            ]
            for k, s in settings.stages.items()
        ],
    )
    if args.scenario in ("all", "scales"):
        rows, costs, necks = [], [], []
        for scale in (1, 10, 100, 1000):
            result = run(
                settings,
                service,
                options,
                upload_rate=TODAY["upload_rate"] * scale,
                search_rate=min(TODAY["search_rate"] * scale, 50.0),
                horizon=args.minutes * 60,
            )
            s = summarise(result)
            rows.append(
                [
                    f"{scale}x",
                    s["documents"],
                    f"{s['throughput_docs_per_min']:.1f}",
                    f"{s['e2e_p50_s']:.1f}",
                    f"{s['e2e_p95_s']:.1f}",
                    f"{s['search_p95_ms']:.0f}",
                    s["db_peak"],
                    s["db_refused"],
                    s["redelivered"],
                    s["dead_lettered"],
                ]
            )
            c = cost_per_1000(result)
            costs.append(
                [f"{scale}x"]
                + [
                    f"{c[k]:.4f}"
                    for k in ("lambda_gb_s", "lambda_requests", "sqs", "s3", "step_functions", "bedrock", "total")
                ]
            )
            top = bottleneck(settings, service, options, scale)
            necks.append([f"{scale}x", top[0][0], f"{top[0][1]:.2f}", top[0][2], f"{top[1][0]} ({top[1][1]:.2f})"])
        print_table(
            f"Steady uploads and searches, {args.minutes:.0f} simulated minutes per scale (search capped at 50/s)",
            [
                "scale",
                "docs",
                "docs/min",
                "e2e p50 s",
                "e2e p95 s",
                "search p95 ms",
                "DB peak conns",
                "DB refusals",
                "redelivered",
                "dead-lettered",
            ],
            rows,
        )
        print_table(
            "Cost per 1,000 documents, USD (us-east-1 list prices, 2026-12-02; Aurora/Proxy hours excluded)",
            ["scale", "Lambda GB-s", "Lambda req", "SQS", "S3", "Step Functions", "Bedrock", "total"],
            costs,
        )
        print_table(
            "First bottleneck by utilisation during the nightly sync hour (demand / capacity)",
            ["scale", "first", "utilisation", "what lifts it", "next"],
            necks,
        )
    if args.scenario in ("all", "burst"):
        result = run(settings, service, options, burst=100_000, burst_seconds=3600, search_rate=5.0, horizon=3600)
        s = summarise(result)
        print_table(
            "Burst: 100,000 documents dropped in an hour, searches at 5/s",
            ["figure", "value"],
            [[k, json.dumps(v) if isinstance(v, dict) else v] for k, v in s.items()],
        )
        plot(result, "burst")
    if args.scenario in ("all", "sync"):
        result = run(settings, service, options, sync_bases=50, search_rate=0.5, horizon=3600)
        s = summarise(result)
        print_table(
            f"Nightly sync: 50 bases x 10,000 objects, 1 % changed (Map MaxConcurrency "
            f"{settings.sync_map_concurrency})",
            ["figure", "value"],
            [[k, json.dumps(v) if isinstance(v, dict) else v] for k, v in s.items()]
            + [["state transitions", result.sfn_transitions]],
        )
    print("\nquotas:")
    for k, q in QUOTAS.items():
        print(f"  {k}: {q['value']} — {q['source']}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "bench"))
    sys.exit(main())
