"""``sluice local up``: embedded PostgreSQL, moto in server mode, the resources and wiring of
template.yaml, the SQS pumps and the HTTP gateway, in one process (DESIGN "The local runtime")."""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sluice.local.gateway import Gateway
from sluice.local.hosts import origins
from sluice.local.instances import Instances
from sluice.local.pgdata import forget_dead_handles
from sluice.local.pump import QueuePump
from sluice.local.template import ACCOUNT, REGION, FunctionDef, Resolver, Template, function_environment, parse
from sluice.local.tokens import dev_secret
from sluice.local.workflows import (
    Scheduler,
    configure_moto,
    create_state_machines,
    function_arn,
    route_lambda_tasks,
)

log = logging.getLogger("sluice.local")

# The variables that name a Tesseract layer's places on AWS (template.yaml, ParseFunction).
TESSERACT_PLACES = ("TESSDATA_PREFIX",)

# How long the handlers still running when the stack is told to stop may take, all together.
STOP_GRACE = 2.0
# How often the gateway's accept loop looks for a stop (socketserver's default is 0.5 s).
POLL_INTERVAL = 0.1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def project_root() -> Path:
    env = os.environ.get("SLUICE_ROOT")
    if env:
        return Path(env)
    for parent in Path(__file__).resolve().parents:
        if (parent / "template.yaml").is_file():
            return parent
    return Path.cwd()


@dataclass
class LambdaContext:
    function_name: str
    timeout_seconds: int
    memory_limit_in_mb: int = 1024
    function_version: str = "$LATEST"

    def __post_init__(self) -> None:
        self.aws_request_id = str(uuid.uuid4())
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class LocalRuntime:
    def __init__(self, *, root: Path | None = None, data_dir: Path | None = None, api_port: int = 8787,
                 moto_port: int | None = None, database_url: str | None = None, pumps: bool = True,
                 host: str = "127.0.0.1", concurrency: int = 4, expose: str | None = None,
                 pg_port: int | None = None) -> None:
        self.root = root or project_root()
        self.data_dir = data_dir or self.root / ".sluice"
        self.api_port = api_port
        self.moto_port = moto_port or free_port()
        self.host = host
        self.database_url = database_url
        # `local up --expose`: PostgreSQL (on pg_port, with a password) and moto also listen on this
        # address, for functions in containers (sluice/local/expose.py). None: loopback and a socket.
        if expose and database_url:
            raise ValueError("--expose runs the embedded PostgreSQL: it cannot expose a database given by URL")
        self.expose = expose
        self.pg_port = (pg_port or free_port()) if expose else None
        self.with_pumps = pumps
        self.template: Template = parse(self.root / "template.yaml")
        self.resolve: Resolver | None = None
        self.queue_urls: dict[str, str] = {}
        self.queue_arns: dict[str, str] = {}
        self.pumps: list[QueuePump] = []
        # Each function's execution environments: up to `concurrency` events of one function at once.
        self.concurrency = concurrency
        self._instances: dict[str, Instances] = {}
        self._pg: Any = None
        self._moto: Any = None
        self._http: Any = None
        self._http_thread: threading.Thread | None = None
        self.state_machine_arns: dict[str, str] = {}
        self.recovered = (0, 0)
        self.jwt_secret = ""
        self._environ_before: dict[str, str] | None = None
        self.scheduler = Scheduler(self.template, self.invoke)
        self._unroute: Callable[[], None] | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.api_port}"

    @property
    def moto_url(self) -> str:
        return f"http://127.0.0.1:{self.moto_port}"

    def start(self) -> LocalRuntime:
        self._environ_before = dict(os.environ)
        self._quiet()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._start_postgres()
        self._start_moto()
        self._create_resources()
        self._write_state()
        self._apply_environment()
        from sluice.db.migrations import migrate

        migrate(self.database_url or "")
        self.recovered = self._recover()
        self._fail_interrupted_work()
        for fn in self.template.functions.values():
            self._load(fn)
        self._unroute = route_lambda_tasks(self.invoke, set(self.template.functions))
        if self.with_pumps:
            self._start_pumps()
            self.scheduler.start()
        self._start_gateway()
        self._allow_gateway_origin()
        return self

    def stop(self) -> None:
        """Stop promptly (a Ctrl-C is answered in about 2 s): the gateway stops listening first, then
        every pump and schedule is told at once to take nothing more, and the handlers still running
        get STOP_GRACE seconds together (moto's objects and messages are lost with it anyway, and
        the next start fails what was in flight), before moto and PostgreSQL stop."""
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        stopping: list[QueuePump | Scheduler] = [self.scheduler, *self.pumps]
        for part in stopping:
            part.request_stop()
        deadline = time.monotonic() + STOP_GRACE
        for part in stopping:
            part.join(timeout=max(0.0, deadline - time.monotonic()))
        self.pumps.clear()
        if self._unroute is not None:
            self._unroute()
            self._unroute = None
        from sluice.db.connection import close_pool

        close_pool()
        if self._moto is not None:
            self._moto.stop()
            self._moto = None
        if self._pg is not None:
            self._pg.cleanup()
            self._pg = None
        self._restore_environment()

    def _restore_environment(self) -> None:
        """Leave the process environment as it was: a later runtime in this process must not take
        this one's database, endpoints or token secret for configured values."""
        if self._environ_before is None:
            return
        os.environ.clear()
        os.environ.update(self._environ_before)
        self._environ_before = None
        from sluice import wiring
        from sluice.config import reset_settings

        reset_settings()
        wiring.reset()

    def __enter__(self) -> LocalRuntime:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _recover(self) -> tuple[int, int]:
        """moto keeps objects and messages in memory: after a restart nothing in flight will ever
        move again, so those rows fail with a sentence saying why, never stay processing.
        Returns (documents failed, documents whose stored original is gone)."""
        from sluice.db.connection import has_table, transaction
        from sluice.db.documents import fail_in_flight, stored_originals
        from sluice.ingest.recovery import LOCAL_RESET

        with transaction() as conn:
            if not has_table(conn, "documents"):
                return 0, 0  # a template of other functions, whose migrations hold no documents
            return fail_in_flight(conn, LOCAL_RESET), stored_originals(conn)

    # --- pieces ------------------------------------------------------------------------------
    @staticmethod
    def _quiet() -> None:
        os.environ.setdefault("TQDM_DISABLE", "1")  # model-loading bars would interleave with the CLI's own
        # Metrics are disabled locally, so every handler would warn that it published none.
        warnings.filterwarnings("ignore", message="No application metrics to publish")
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")

    def _start_postgres(self) -> None:
        if self.database_url:
            return
        import pgserver

        forget_dead_handles(self.data_dir / "pgdata")
        self._pg = pgserver.get_server(self.data_dir / "pgdata", cleanup_mode="stop")  # type: ignore[attr-defined]
        self.database_url = self._pg.get_uri()
        if self.expose and self.pg_port:
            from sluice.local.expose import database_password, expose_postgres

            self.database_url = expose_postgres(self._pg, self.database_url, self.expose, self.pg_port,
                                                database_password(self.data_dir))

    def _write_state(self) -> None:
        """What `sluice local env --for-sam` needs of this stack (sluice/local/samenv.py)."""
        from sluice.local.samenv import function_variables, write_state

        assert self.resolve is not None
        write_state(self.data_dir, functions=function_variables(self.template, self.resolve, os.environ),
                    moto_port=self.moto_port, database_url=self.database_url or "", expose=self.expose,
                    pg_port=self.pg_port)

    def _start_moto(self) -> None:
        from sluice.local.motoserver import MotoServer

        os.environ.update({
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",  # noqa: S105 - moto's
            "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": self.moto_url,
        })
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        configure_moto(self.moto_port)
        # Exposed, containers name it host.docker.internal (or an address: sluice/local/hosts.py).
        names = {self.expose, "host.docker.internal"} if self.expose else set()
        self._moto = MotoServer(self.expose or "127.0.0.1", self.moto_port, names=names)
        self._moto.start()

    def _client(self, service: str) -> Any:
        import boto3

        return boto3.session.Session().client(service, region_name=REGION, endpoint_url=self.moto_url)

    def _create_resources(self) -> None:
        t = self.template
        resources = t.raw["Resources"]
        kms = self._client("kms")
        key = kms.create_key(Description=resources[t.key]["Properties"].get("Description", "sluice"))
        key_arn, key_id = key["KeyMetadata"]["Arn"], key["KeyMetadata"]["KeyId"]
        sqs = self._client("sqs")
        refs: dict[str, Any] = {t.key: key_id}
        attrs: dict[tuple[str, str], Any] = {(t.key, "Arn"): key_arn}
        for name in t.functions:  # a function's logical id is its name locally
            refs[name] = name
            attrs[(name, "Arn")] = function_arn(name)
        # Dead-letter queues first: the others name them in their redrive policy.
        ordered = sorted(t.queues.values(), key=lambda q: q.dead_letter is not None)
        for q in ordered:
            attributes = {"VisibilityTimeout": str(q.visibility_timeout)}
            if q.dead_letter:
                import json

                attributes["RedrivePolicy"] = json.dumps(
                    {"deadLetterTargetArn": self.queue_arns[q.dead_letter], "maxReceiveCount": q.max_receive_count}
                )
            url = sqs.create_queue(QueueName=f"sluice-{q.name}", Attributes=attributes)["QueueUrl"]
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            self.queue_urls[q.name], self.queue_arns[q.name] = url, arn
            refs[q.name] = url
            attrs[(q.name, "Arn")] = arn
        self.resolve = Resolver(t, refs, attrs, {"DatabaseUrl": self.database_url})
        bucket_props = resources[t.bucket]["Properties"]
        bucket = self.resolve(bucket_props["BucketName"])
        refs[t.bucket] = bucket
        attrs[(t.bucket, "Arn")] = f"arn:aws:s3:::{bucket}"
        self.resolve = Resolver(t, refs, attrs, {"DatabaseUrl": self.database_url})
        s3 = self._client("s3")
        s3.create_bucket(Bucket=bucket)
        rules = [
            {"ApplyServerSideEncryptionByDefault": r["ServerSideEncryptionByDefault"],
             "BucketKeyEnabled": r.get("BucketKeyEnabled", False)}
            for r in self.resolve(bucket_props["BucketEncryption"]["ServerSideEncryptionConfiguration"])
        ]
        s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={"Rules": rules})
        s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=bucket_props[
            "PublicAccessBlockConfiguration"])
        s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration={
            "QueueConfigurations": [
                {"Id": f"n{i}", "QueueArn": self.queue_arns[n.queue], "Events": [n.event],
                 "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": n.prefix}]}}}
                for i, n in enumerate(t.notifications)
            ]
        })
        self.state_machine_arns = create_state_machines(t, self.root, self.resolve, self._client("stepfunctions"))
        for name, arn in self.state_machine_arns.items():
            refs[name] = arn
            attrs[(name, "Arn")] = arn
            attrs[(name, "Name")] = name
        self.resolve = Resolver(t, refs, attrs, {"DatabaseUrl": self.database_url})
        self.bucket = bucket
        self.key_arn = key_arn

    def _apply_environment(self) -> None:
        assert self.resolve is not None
        env = function_environment(self.template, self.resolve, os.environ)
        # Values that name places on AWS (the layer under /opt, the database) point
        # at their local counterparts instead.
        env["DATABASE_URL"] = self.database_url or ""
        # Every function's environments are threads of this one process, sharing one pool: the template's
        # one connection per Lambda environment (DbPoolMaxSize) would serialise them all here.
        env["DB_POOL_MAX_SIZE"] = os.environ.get("DB_POOL_MAX_SIZE", "4")
        env["SLUICE_CATALOG_PATH"] = str(self.root / "infra" / "catalog" / "embedding_models.json")
        env["SLUICE_MIGRATIONS_DIR"] = str(self.root / "infra" / "migrations")
        # Where a Tesseract layer is on AWS (/opt): here the distribution's tesseract finds its own data,
        # unless the shell names a folder (function_environment kept the shell's value then).
        for name in TESSERACT_PLACES:
            if name not in os.environ:
                env.pop(name, None)
        self.jwt_secret = dev_secret(self.data_dir, os.environ.get("SLUICE_DEV_JWT_SECRET", ""))
        env["SLUICE_DEV_JWT_SECRET"] = self.jwt_secret
        os.environ.update(env)
        os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        os.environ.setdefault("SLUICE_ROOT", str(self.root))
        from sluice import wiring
        from sluice.config import reset_settings
        from sluice.db.connection import close_pool

        reset_settings()
        close_pool()
        wiring.reset()

    @staticmethod
    def _fail_interrupted_work() -> None:
        """The local queues live in moto's memory and do not survive a restart (on AWS a message is
        never lost: it is redelivered, then dead-lettered). So before the pumps start, work a stopped
        runtime left in progress is failed with a reason rather than left waiting for a message that
        will never come: an attachment "Interrupted by restart". The objects live in moto's memory too:
        a chat file whose original is gone fails with a sentence saying so (sluice.chat.recovery)."""
        from sluice.chat.attachments import fail_interrupted
        from sluice.chat.recovery import fail_lost_files
        from sluice.db.connection import has_table, transaction

        with transaction() as conn:
            present = has_table(conn, "chat_attachments")
        if not present:
            return  # a template of other functions, whose migrations hold no chat tables
        fail_interrupted(transaction)
        fail_lost_files(transaction)

    def _load(self, fn: FunctionDef) -> Instances:
        if fn.name not in self._instances:
            module_name, _, _ = fn.handler.rpartition(".")
            path = self.root / fn.code_uri / f"{module_name.replace('.', '/')}.py"
            self._instances[fn.name] = Instances(fn.name, path, self.concurrency)
            self._instances[fn.name].warm()
        return self._instances[fn.name]

    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        """Call a function's handler as Lambda would: each environment one event at a time, several
        environments of a function at once."""
        fn = self.template.functions[function]
        with self._load(fn).checkout() as module:
            return getattr(module, fn.handler.rpartition(".")[2])(event, LambdaContext(function, fn.timeout))

    def _start_pumps(self) -> None:
        sqs = self._client("sqs")
        for fn in self.template.functions.values():
            for queue in fn.queues:
                pump = QueuePump(sqs, self.queue_urls[queue], self.queue_arns[queue], fn.batch_size,
                                 functools.partial(self.invoke, fn.name), name=queue)
                pump.start()
                self.pumps.append(pump)

    def _start_gateway(self) -> None:
        from sluice.config import get_settings

        gateway = Gateway(self.template.routes(), self.invoke, get_settings().dev_jwt_secret,
                          allowed_hosts=frozenset({self.host}))
        self._http = gateway.serve(self.host, self.api_port)
        self.api_port = self._http.server_address[1]
        self._http_thread = threading.Thread(target=self._http.serve_forever, args=(POLL_INTERVAL,), name="gateway",
                                             daemon=True)
        self._http_thread.start()

    def _allow_gateway_origin(self) -> None:
        """The one web origin moto answers is the gateway's, for the bucket only: what a page's
        presigned POST and download link need (sluice/local/motoserver.py)."""
        self._moto.grant(origins(self.host, self.api_port), self.bucket)

    # --- waiting -----------------------------------------------------------------------------
    def wait_idle(self, timeout: float = 120.0) -> bool:
        """Until every pumped queue is empty and no handler is running (tests, demo)."""
        sqs = self._client("sqs")
        deadline = time.monotonic() + timeout
        quiet = 0
        while time.monotonic() < deadline:
            pending = 0
            for pump in self.pumps:
                a = sqs.get_queue_attributes(QueueUrl=pump.queue_url, AttributeNames=[
                    "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
                pending += int(a["ApproximateNumberOfMessages"]) + int(a["ApproximateNumberOfMessagesNotVisible"])
                pending += pump.busy
            quiet = quiet + 1 if pending == 0 else 0
            if quiet >= 3:
                return True
            time.sleep(0.2)
        return False
