"""The `sam build` output, and the local services its handlers run against (tests/built).

`make check-build` builds first (SAM CLI, python3.12) and then runs these tests; run alone, they
skip with a sentence where there is no build or no python3.12.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = (ROOT / os.environ.get("SLUICE_BUILD_DIR", ".aws-sam/build")).resolve()
# boto3 as Lambda's python3.12 runtime ships it (its /var/runtime): `make check-build` installs it.
LAMBDA_RUNTIME = (ROOT / os.environ.get("SLUICE_LAMBDA_RUNTIME", ".aws-sam/lambda-runtime")).resolve()
RUNNER = Path(__file__).with_name("lambda_invoke.py")
MARK = "@@lambda-result@@ "  # before the runner's answer on its stdout
MB = 1_000_000
# Lambda's limit on a function's code and all its layers, unzipped (it counts 250 MB as 262,144,000 bytes;
# the decimal figure is the stricter one).
UNZIPPED_LIMIT = 250 * MB


def lambda_python() -> str | None:
    """python3.12, the functions' runtime: $LAMBDA_PYTHON, PATH, or pyenv's (the interpreter itself,
    never a pyenv shim, which answers for whichever version is selected)."""
    configured = os.environ.get("LAMBDA_PYTHON", "").strip()
    candidates = [configured] if configured else []
    candidates += [shutil.which("python3.12") or "", *sorted(glob.glob(os.path.expanduser(
        "~/.pyenv/versions/3.12*/bin/python3.12")))]
    for candidate in candidates:
        if not candidate or not os.access(candidate, os.X_OK):
            continue
        probe = subprocess.run([candidate, "-I", "-c", "import sys; print(sys.version_info[:2] == (3, 12), "
                                "sys.executable)"], capture_output=True, text=True, check=False)
        ok, _, executable = probe.stdout.strip().partition(" ")
        if probe.returncode == 0 and ok == "True":
            return executable
    return None


@dataclass
class BuiltFunction:
    name: str
    code: Path
    handler: str
    memory: int
    timeout: int
    layers: list[str]  # logical ids of the template's own layers, in order (Globals first)
    external_layers: list[Any]  # layers named by ARN (a parameter), built elsewhere


@dataclass
class Build:
    root: Path
    template: dict[str, Any]
    functions: dict[str, BuiltFunction]
    layer_dirs: dict[str, Path]

    def size(self, path: Path) -> int:
        """Bytes of every file below ``path``, as Lambda counts an unzipped package."""
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def read_build(build: Path) -> Build:
    from sluice.local.template import load

    template = load(build / "template.yaml")
    resources = template["Resources"]
    globals_ = template.get("Globals", {}).get("Function", {})
    layer_dirs = {name: build / r["Properties"]["ContentUri"] for name, r in resources.items()
                  if r["Type"] == "AWS::Serverless::LayerVersion"}
    functions: dict[str, BuiltFunction] = {}
    for name, r in resources.items():
        if r["Type"] != "AWS::Serverless::Function":
            continue
        props = r["Properties"]
        own: list[str] = []
        external: list[Any] = []
        for layer in [*globals_.get("Layers", []), *props.get("Layers", [])]:
            if isinstance(layer, dict) and layer.get("Ref") in layer_dirs:
                own.append(layer["Ref"])
            else:
                external.append(layer)
        functions[name] = BuiltFunction(
            name=name, code=build / props["CodeUri"], handler=props.get("Handler", globals_.get("Handler", "")),
            memory=int(props.get("MemorySize", globals_.get("MemorySize", 128))),
            timeout=int(props.get("Timeout", globals_.get("Timeout", 3))), layers=own, external_layers=external)
    return Build(build, template, functions, layer_dirs)


@pytest.fixture(scope="session")
def build() -> Build:
    if not (BUILD / "template.yaml").is_file():
        pytest.skip(f"no `sam build` output at {BUILD}: `make check-build` builds it (SAM CLI and python3.12) "
                    "and runs these tests")
    return read_build(BUILD)


@pytest.fixture(scope="session")
def python312() -> str:
    found = lambda_python()
    if found is None:
        pytest.skip("no python3.12 (the functions' runtime) on PATH, in $LAMBDA_PYTHON or in ~/.pyenv/versions")
    return found


@pytest.fixture(scope="session")
def lambda_runtime() -> Path:
    if not (LAMBDA_RUNTIME / "boto3").is_dir():
        pytest.skip(f"no Lambda runtime boto3 at {LAMBDA_RUNTIME}: `make check-build` installs it")
    return LAMBDA_RUNTIME


@pytest.fixture(scope="session")
def opt_of(build: Build, tmp_path_factory: pytest.TempPathFactory):
    """A function's /opt: its layers unpacked into one folder in order, as Lambda does (later layers
    win a path two of them hold). Hard links where the file system allows: no copy of 200 MB."""
    made: dict[tuple[str, ...], Path] = {}

    def opt(function: str) -> Path:
        layers = tuple(build.functions[function].layers)
        if layers not in made:
            target = tmp_path_factory.mktemp("opt")
            for layer in layers:
                source = build.layer_dirs[layer]
                for path in sorted(source.rglob("*")):
                    dest = target / path.relative_to(source)
                    if path.is_dir():
                        dest.mkdir(parents=True, exist_ok=True)
                        continue
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    if dest.exists():
                        dest.unlink()
                    try:
                        os.link(path, dest)
                    except OSError:
                        shutil.copy2(path, dest)
            made[layers] = target
        return made[layers]

    return opt


@pytest.fixture(scope="session")
def stack(pg_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The local services (`sluice local up`'s moto and embedded PostgreSQL, its resources and
    wiring) without its pumps: the built handlers, not the in-process ones, do the work."""
    from sluice.local.runtime import LocalRuntime

    admin = pg_server.get_uri()
    name = f"built_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    rt = LocalRuntime(root=ROOT, data_dir=tmp_path_factory.mktemp("stack"), api_port=0, pumps=False,
                      database_url=make_conninfo(**{**conninfo_to_dict(admin), "dbname": name}))
    rt.start()
    yield rt
    rt.stop()


def lambda_environment(stack: Any, function: str, opt: Path, scratch: Path) -> dict[str, str]:
    """What Lambda gives a function: its template variables (resolved as the local runtime resolves
    them, /opt meaning this function's merged layers), the runtime's own variables, credentials for
    moto, and nothing of this process's environment."""
    from sluice.local.template import function_environment

    fn = stack.template.functions[function]
    resolved = function_environment(stack.template, stack.resolve, os.environ)
    env = {name: resolved[name] for name in fn.environment}
    env["DATABASE_URL"] = stack.database_url
    env = {k: v.replace("/opt/", f"{opt}/") if v.startswith("/opt/") else v for k, v in env.items()}
    env.update({
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "TZ": ":UTC",
        "HOME": str(scratch), "TMPDIR": str(scratch),
        "LAMBDA_TASK_ROOT": str(scratch), "AWS_LAMBDA_FUNCTION_NAME": function,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024", "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
        "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
        "AWS_ENDPOINT_URL": stack.moto_url,
        "POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    })
    return env


@pytest.fixture(scope="session")
def invoke_built(build: Build, python312: str, lambda_runtime: Path, opt_of, stack,
                 tmp_path_factory: pytest.TempPathFactory):
    """``invoke_built(function, event)``: the built handler's result (``event=None``: import only)."""
    def invoke(function: str, event: dict[str, Any] | None, env: dict[str, str] | None = None) -> Any:
        fn = build.functions[function]
        opt = opt_of(function)
        scratch = tmp_path_factory.mktemp(f"tmp-{function}")
        environment = env if env is not None else lambda_environment(stack, function, opt, scratch)
        environment = {**environment, "LAMBDA_TASK_ROOT": str(fn.code), "TMPDIR": str(scratch),
                       "HOME": str(scratch)}
        request = {"task_root": str(fn.code), "opt": str(opt), "runtime": str(lambda_runtime),
                   "handler": fn.handler, "function": function, "memory": fn.memory, "timeout": fn.timeout,
                   "event": event, "mark": MARK}
        done = subprocess.run([python312, "-I", "-S", str(RUNNER)], input=json.dumps(request), text=True,
                              capture_output=True, env=environment, timeout=fn.timeout + 120, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
        assert done.returncode == 0 and lines, (
            f"{function} failed in python3.12 with only its layers (exit {done.returncode}):\n"
            f"{done.stderr[-4000:]}\n{done.stdout[-2000:]}")
        return json.loads(lines[-1][len(MARK):])

    return invoke

