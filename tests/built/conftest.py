"""The `sam build` output, and the local services its handlers run against (tests/built), as
`sam local invoke` runs a function in its container (docs/operations/sam-local.md).

`make check-build` builds first (SAM CLI, python3.12) and then runs these tests; run alone, they
skip with a sentence where there is no build or no python3.12.
"""

from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The local stack as `sluice local up --expose 127.0.0.1 --no-pumps` runs it (its own embedded
    PostgreSQL, on TCP with its password, and moto), then `sluice local seed-events`: the built
    handlers, not the in-process ones, do the work."""
    from sluice.cli import main
    from sluice.local.runtime import LocalRuntime, free_port

    rt = LocalRuntime(root=ROOT, data_dir=tmp_path_factory.mktemp("stack"), api_port=0, pumps=False,
                      expose="127.0.0.1", pg_port=free_port())
    rt.start()
    try:
        assert main(["local", "seed-events", "--data-dir", str(rt.data_dir)]) == 0
        yield rt
    finally:
        rt.stop()


@pytest.fixture(scope="session")
def env_json(stack: Any) -> dict[str, dict[str, str]]:
    """What `sluice local env --for-sam --host 127.0.0.1` writes for this stack."""
    from sluice.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["local", "env", "--for-sam", "--host", "127.0.0.1", "--data-dir", str(stack.data_dir)]) == 0
    loaded: dict[str, dict[str, str]] = json.loads(out.getvalue())
    return loaded


def container_environment(variables: dict[str, str], function: str, opt: Path, task_root: Path,
                          scratch: Path) -> dict[str, str]:
    """What `sam local invoke --env-vars env.json` gives a function's container: the variables the
    file sets for it (``/opt`` being where the container mounts its layers, here their merged
    folder), the runtime's own, and credentials (any: moto checks none), nothing of this process's."""
    env = {k: f"{opt}/{v[len('/opt/'):]}" if v.startswith("/opt/") else v for k, v in variables.items()}
    env.update({
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "TZ": ":UTC",
        "HOME": str(scratch), "TMPDIR": str(scratch), "LAMBDA_TASK_ROOT": str(task_root),
        "AWS_LAMBDA_FUNCTION_NAME": function, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12", "AWS_SAM_LOCAL": "true",
        "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
    })
    return env


@pytest.fixture(scope="session")
def invoke_built(build: Build, python312: str, lambda_runtime: Path, opt_of, env_json,
                 tmp_path_factory: pytest.TempPathFactory):
    """``invoke_built(function, event)``: the built handler's result (``event=None``: import only),
    run with exactly the variables env.json sets for the function; ``imports``: modules imported
    after the handler, as a run imports them lazily."""
    def invoke(function: str, event: dict[str, Any] | None, imports: list[str] | None = None) -> Any:
        fn = build.functions[function]
        opt = opt_of(function)
        scratch = tmp_path_factory.mktemp(f"tmp-{function}")
        environment = container_environment(env_json[function], function, opt, fn.code, scratch)
        request = {"task_root": str(fn.code), "opt": str(opt), "runtime": str(lambda_runtime),
                   "handler": fn.handler, "function": function, "memory": fn.memory, "timeout": fn.timeout,
                   "event": event, "mark": MARK, "imports": imports or []}
        done = subprocess.run([python312, "-I", "-S", str(RUNNER)], input=json.dumps(request), text=True,
                              capture_output=True, env=environment, timeout=fn.timeout + 120, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
        assert done.returncode == 0 and lines, (
            f"{function} failed in python3.12 with only its layers (exit {done.returncode}):\n"
            f"{done.stderr[-4000:]}\n{done.stdout[-2000:]}")
        return json.loads(lines[-1][len(MARK):])

    return invoke

