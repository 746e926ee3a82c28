"""Reads template.yaml: functions, routes, queues, notifications (R-SHAPE-1).

Nothing here restates the wiring: routes, triggers and queues come from the
template, and CloudFormation intrinsics are resolved against local values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ACCOUNT = "123456789012"
REGION = "us-east-1"


class _CfnLoader(yaml.SafeLoader):
    pass


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    elif isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
    else:
        raise yaml.constructor.ConstructorError(None, None, f"unexpected !{suffix} node", node.start_mark)
    return {name: value}


_CfnLoader.add_multi_constructor("!", _tag)


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load(path.read_text(), Loader=_CfnLoader)  # noqa: S506 - a SafeLoader subclass
    return loaded


@dataclass
class Route:
    method: str
    path: str
    function: str
    auth: bool

    def pattern(self) -> re.Pattern[str]:
        # {name} is one path segment; {name+} (a greedy proxy path, as API Gateway reads it) the rest.
        regex = re.sub(r"\\\{(\w+)\\\+\\\}", r"(?P<\1>.+)", re.escape(self.path))
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", regex)
        return re.compile(f"^{regex}$")


@dataclass
class FunctionDef:
    name: str
    code_uri: str
    handler: str
    environment: dict[str, Any] = field(default_factory=dict)
    routes: list[Route] = field(default_factory=list)
    queues: list[str] = field(default_factory=list)  # logical ids of SQS event sources
    batch_size: int = 10
    timeout: int = 29
    schedules: list[Schedule] = field(default_factory=list)


@dataclass
class Schedule:
    """A schedule event of a function: its rate expression and the event it hands the function."""

    expression: str
    payload: dict[str, Any]


@dataclass
class StateMachineDef:
    name: str
    definition_uri: str
    substitutions: dict[str, Any]  # DefinitionSubstitutions, still intrinsics to resolve


@dataclass
class QueueDef:
    name: str
    dead_letter: str | None
    max_receive_count: int | None
    visibility_timeout: int


@dataclass
class Notification:
    queue: str
    event: str
    prefix: str


@dataclass
class Template:
    raw: dict[str, Any]
    functions: dict[str, FunctionDef]
    queues: dict[str, QueueDef]
    notifications: list[Notification]
    bucket: str
    key: str
    state_machines: dict[str, StateMachineDef] = field(default_factory=dict)

    def routes(self) -> list[Route]:
        return [r for f in self.functions.values() for r in f.routes]

    def function_for_queue(self, queue: str) -> FunctionDef | None:
        return next((f for f in self.functions.values() if queue in f.queues), None)


def _logical(value: Any) -> str:
    """The logical id a ``!GetAtt X.Arn`` or ``!Ref X`` points at."""
    if isinstance(value, dict):
        if "Ref" in value:
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            return str(value["Fn::GetAtt"][0])
    raise ValueError(f"expected a reference, got {value!r}")


def parse(path: Path) -> Template:
    raw = load(path)
    resources: dict[str, Any] = raw["Resources"]
    globals_fn = raw.get("Globals", {}).get("Function", {})
    functions: dict[str, FunctionDef] = {}
    queues: dict[str, QueueDef] = {}
    notifications: list[Notification] = []
    state_machines: dict[str, StateMachineDef] = {}
    buckets: list[str] = []
    keys: list[str] = []
    for name, res in resources.items():
        props = res.get("Properties", {}) or {}
        kind = res["Type"]
        if kind == "AWS::Serverless::Function":
            env = dict(globals_fn.get("Environment", {}).get("Variables", {}))
            env.update(props.get("Environment", {}).get("Variables", {}))
            fn = FunctionDef(name, props["CodeUri"], props["Handler"], env,
                             timeout=int(props.get("Timeout", globals_fn.get("Timeout", 3))))
            for ev in (props.get("Events") or {}).values():
                ep = ev.get("Properties", {})
                if ev["Type"] == "HttpApi":
                    auth = (ep.get("Auth") or {}).get("Authorizer") != "NONE"
                    fn.routes.append(Route(ep["Method"].upper(), ep["Path"], name, auth))
                elif ev["Type"] == "SQS":
                    fn.queues.append(_logical(ep["Queue"]))
                    fn.batch_size = int(ep.get("BatchSize", 10))
                elif ev["Type"] in ("Schedule", "ScheduleV2"):
                    payload = ep.get("Input")
                    fn.schedules.append(Schedule(ep["Schedule"] if ev["Type"] == "Schedule"
                                                 else ep["ScheduleExpression"],
                                                 json.loads(payload) if isinstance(payload, str) else {}))
            functions[name] = fn
        elif kind == "AWS::Serverless::StateMachine":
            state_machines[name] = StateMachineDef(name, props["DefinitionUri"],
                                                   dict(props.get("DefinitionSubstitutions") or {}))
        elif kind == "AWS::SQS::Queue":
            redrive = props.get("RedrivePolicy") or {}
            queues[name] = QueueDef(
                name,
                _logical(redrive["deadLetterTargetArn"]) if redrive else None,
                int(redrive["maxReceiveCount"]) if redrive else None,
                int(props.get("VisibilityTimeout", 30)),
            )
        elif kind == "AWS::S3::Bucket":
            buckets.append(name)
            for qc in (props.get("NotificationConfiguration") or {}).get("QueueConfigurations", []):
                rules = qc.get("Filter", {}).get("S3Key", {}).get("Rules", [])
                prefix = next((r["Value"] for r in rules if r["Name"] == "prefix"), "")
                notifications.append(Notification(_logical(qc["Queue"]), qc["Event"], prefix))
        elif kind == "AWS::KMS::Key":
            keys.append(name)
    shared_env = globals_fn.get("Environment", {}).get("Variables", {})
    bucket = _the_one(buckets, shared_env.get("SLUICE_BUCKET"), "bucket")
    key = _the_one(keys, shared_env.get("SLUICE_KMS_KEY_ID"), "KMS key")
    return Template(raw, functions, queues, notifications, bucket, key, state_machines)


def _the_one(names: list[str], named_by: Any, noun: str) -> str:
    """The functions' bucket (or key): the one their shared environment names, else the only one."""
    if named_by is not None:
        return _logical(named_by)
    if len(names) > 1:
        raise ValueError(f"the template has {len(names)} resources of type {noun} and Globals names none of them")
    return names[0] if names else ""


class Resolver:
    """Resolves the intrinsics the template uses against local physical values."""

    def __init__(self, template: Template, refs: dict[str, Any], attrs: dict[tuple[str, str], Any],
                 parameters: dict[str, Any] | None = None) -> None:
        self.refs = dict(refs)
        self.attrs = attrs
        params = {k: v.get("Default", "") for k, v in template.raw.get("Parameters", {}).items()}
        params.update(parameters or {})
        self.refs.update(params)
        self.refs.update({"AWS::AccountId": ACCOUNT, "AWS::Region": REGION, "AWS::Partition": "aws",
                          "AWS::StackName": "sluice-local", "AWS::URLSuffix": "amazonaws.com"})
        self.conditions: dict[str, Any] = dict(template.raw.get("Conditions", {}))

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):
            if "Ref" in value:
                return self.refs[value["Ref"]]
            if "Fn::GetAtt" in value:
                logical, attr = value["Fn::GetAtt"]
                return self.attrs[(logical, attr)]
            if "Fn::Sub" in value:
                text = value["Fn::Sub"]
                return re.sub(r"\$\{([^}]+)\}", lambda m: str(self._sub(m.group(1))), text)
            if "Fn::If" in value:
                condition, yes, no = value["Fn::If"]
                return self(yes) if self.condition(condition) else self(no)
            return {k: self(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        return value

    def condition(self, name: str) -> bool:
        """A template condition, on the local parameter values (the stack parameters' defaults)."""
        return self._holds(self.conditions[name])

    def _holds(self, expr: Any) -> bool:
        if isinstance(expr, dict):
            if "Fn::Equals" in expr:
                left, right = expr["Fn::Equals"]
                return str(self(left)) == str(self(right))
            if "Fn::Not" in expr:
                return not self._holds(expr["Fn::Not"][0])
            if "Fn::And" in expr:
                return all(self._holds(e) for e in expr["Fn::And"])
            if "Fn::Or" in expr:
                return any(self._holds(e) for e in expr["Fn::Or"])
            if "Condition" in expr:
                return self.condition(expr["Condition"])
        raise ValueError(f"a condition the local runtime cannot evaluate: {expr!r}")

    def _sub(self, name: str) -> Any:
        if "." in name and name.split(".")[0] not in ("AWS::AccountId",):
            logical, attr = name.split(".", 1)
            if (logical, attr) in self.attrs:
                return self.attrs[(logical, attr)]
        return self.refs[name]


def function_environment(template: Template, resolve: Resolver, current: Mapping[str, str]) -> dict[str, str]:
    """Every function's environment variables, resolved against local values.

    A variable the template takes from a stack parameter keeps a value already
    set in ``current``: locally the environment plays the part of
    ``--parameter-overrides`` (``EMBEDDING_ALLOWED_ENDPOINTS=localhost make run``).
    """
    parameters = set(template.raw.get("Parameters", {}))
    env: dict[str, str] = {}
    for fn in template.functions.values():
        for name, value in fn.environment.items():
            from_parameter = isinstance(value, dict) and value.get("Ref") in parameters
            env[name] = current[name] if from_parameter and name in current else str(resolve(value))
    return env
