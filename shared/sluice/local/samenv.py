"""``sluice local env --for-sam``: the ``--env-vars`` file that points `sam local` at the local stack.

`sluice local up` writes what the file needs into its data directory (``stack.json``: each
function's variables as the local runtime resolved them from template.yaml, and where moto and
PostgreSQL listen); this turns it into ``{"FunctionLogicalId": {"VAR": "value", ...}, ...}`` for the
host name containers use. `sam local` passes a function only the variables its template declares,
so every AWS client finds moto through ``SLUICE_AWS_ENDPOINT_URL`` (declared, empty on AWS).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from sluice.config import FUNCTIONS, MissingSettingError, unset
from sluice.local.expose import database_password, tcp_url
from sluice.local.template import Resolver, Template

STATE_FILE = "stack.json"
DEFAULT_HOST = "host.docker.internal"


class NotExposedError(RuntimeError):
    """The stack listens on loopback and a unix socket only: no container can reach it."""


class TrackedFileError(RuntimeError):
    """The ``--out`` file is tracked by git: writing the database password there would commit it."""


def function_variables(template: Template, resolve: Resolver, current: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Each function's own variables, resolved as the local runtime resolves them (a variable taken
    from a stack parameter keeps a value ``current`` sets, as ``--parameter-overrides`` would)."""
    parameters = set(template.raw.get("Parameters", {}))
    out: dict[str, dict[str, str]] = {}
    for fn in template.functions.values():
        env: dict[str, str] = {}
        for name, value in fn.environment.items():
            from_parameter = isinstance(value, dict) and value.get("Ref") in parameters
            env[name] = current[name] if from_parameter and name in current else str(resolve(value))
        out[fn.name] = env
    return out


def write_state(data_dir: Path, *, functions: dict[str, dict[str, str]], moto_port: int, database_url: str,
                expose: str | None, pg_port: int | None) -> Path:
    path = data_dir / STATE_FILE
    state = {"functions": functions, "moto_port": moto_port, "database_url": database_url,
             "expose": expose, "pg_port": pg_port}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(state, out, indent=2)
    return path


def read_state(data_dir: Path) -> dict[str, Any]:
    path = data_dir / STATE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no {path}: start the stack first (sluice local up --expose)")
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def for_sam(data_dir: Path, host: str = DEFAULT_HOST) -> dict[str, dict[str, str]]:
    """The ``--env-vars`` document: every function of the template, every variable it declares."""
    state = read_state(data_dir)
    if not state.get("expose") or not state.get("pg_port"):
        raise NotExposedError(
            "the local stack listens on loopback and a unix socket only, which a container cannot reach: "
            "start it with `sluice local up --expose`")
    moto_port = int(state["moto_port"])
    moto = f"http://{host}:{moto_port}"
    database = tcp_url(state["database_url"], host, int(state["pg_port"]), database_password(data_dir))
    local_moto = (f"http://127.0.0.1:{moto_port}", f"http://localhost:{moto_port}")
    out: dict[str, dict[str, str]] = {}
    for function, variables in state["functions"].items():
        env = {}
        for name, value in variables.items():
            for prefix in local_moto:  # queue URLs name the endpoint they were created through
                if value.startswith(prefix):
                    value = moto + value[len(prefix):]
            env[name] = value
        env["DATABASE_URL"] = database
        env["SLUICE_AWS_ENDPOINT_URL"] = moto
        out[function] = env
    _refuse_what_a_function_would_refuse(out)
    return out


def _filled(variables: Mapping[str, str], name: str) -> bool:
    return bool(variables.get(name))


def _refuse_what_a_function_would_refuse(env: dict[str, dict[str, str]]) -> None:
    """A function's required variables (its settings' sections) empty in the file would stop it at
    its first event under `sam local`: say so now, naming them, instead of writing the file."""
    absent = {}
    for function, variables in env.items():
        model = FUNCTIONS.get(function)
        empty = unset(model, partial(_filled, variables)) if model else []
        if empty:
            absent[function] = empty
    if absent:
        named = "; ".join(f"{fn} needs {', '.join(names)}" for fn, names in sorted(absent.items()))
        raise MissingSettingError(f"the local stack's state lacks what its functions require ({named}): "
                                  "start it again with `sluice local up --expose`")


def local_environment(data_dir: Path, root: Path) -> dict[str, str]:
    """The environment a process on this machine needs to act as the stack's functions do (what
    `sluice local up` gives its in-process handlers): `sluice local seed-events` runs in it."""
    state = read_state(data_dir)
    env: dict[str, str] = {}
    for variables in state["functions"].values():
        env.update(variables)
    env.update({
        "DATABASE_URL": state["database_url"], "SLUICE_AWS_ENDPOINT_URL": "",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{state['moto_port']}",
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
        "SLUICE_CATALOG_PATH": str(root / "infra" / "catalog" / "embedding_models.json"),
        "SLUICE_MIGRATIONS_DIR": str(root / "infra" / "migrations"),
        "POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING",
    })
    return env


def tracked_by_git(path: Path) -> bool:
    """Whether git tracks ``path`` (False outside a repository, or without git)."""
    try:
        listed = subprocess.run(["git", "-C", str(path.parent), "ls-files", "--error-unmatch", "--", path.name],
                                capture_output=True, timeout=30, check=False)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False
    return listed.returncode == 0


def write_env_file(path: Path, env: dict[str, dict[str, str]]) -> None:
    """Write the ``--env-vars`` document, which holds the database password, readable by its owner
    only, whatever file was there before (it is replaced, not rewritten in place); never over a file
    git tracks."""
    path = path.absolute()
    if tracked_by_git(path):
        raise TrackedFileError(f"{path} is tracked by git, and the file holds the database password: "
                               "write it to a file git does not track (env.json at the root is ignored)")
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # created 0600
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(env, out, indent=2, sort_keys=True)
            out.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
