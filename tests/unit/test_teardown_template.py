"""The teardown's wiring in template.yaml and its ASL (R-SHAPE-1, R-TD-1, R-TD-2): the workflow's
tasks are the TeardownFunction's steps, each failure is caught into a recorded one, the sweep is
hourly, and each function may do what its part needs and no more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluice.local.template import load, parse
from sluice.teardown import STEPS
from sluice.vectors.names import is_runtime_table

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def raw():
    return load(ROOT / "template.yaml")


@pytest.fixture(scope="module")
def asl(raw):
    props = raw["Resources"]["TeardownStateMachine"]["Properties"]
    assert props["DefinitionSubstitutions"] == {"TeardownFunctionArn": {"Fn::GetAtt": ["TeardownFunction", "Arn"]}}
    return json.loads((ROOT / props["DefinitionUri"]).read_text())


def test_the_workflow_runs_every_step_in_order_and_records_any_failure(asl):
    states = asl["States"]
    tasks = {name: s for name, s in states.items() if s["Type"] == "Task"}
    assert all(t["Resource"] == "${TeardownFunctionArn}" for t in tasks.values())
    steps = [tasks[n]["Parameters"]["step"] for n in tasks if n != "RecordFailure"]
    assert steps == list(STEPS) and tasks["RecordFailure"]["Parameters"]["step"] == "record_failure"
    # walk the happy path: Chunks ... Release, then Succeed
    order, name = [], asl["StartAt"]
    while states[name]["Type"] != "Succeed":
        state = states[name]
        if state["Type"] == "Task":
            order.append(state["Parameters"]["step"])
        name = state.get("Default") or state["Next"]
    assert order == list(STEPS)
    for name, task in tasks.items():
        if name == "RecordFailure":
            assert states[task["Next"]]["Type"] == "Fail"
            continue
        catch = task["Catch"][0]
        assert catch["ErrorEquals"] == ["States.ALL"] and catch["ResultPath"] == "$.error"
        named = states[catch["Next"]]  # a Pass naming the failed step, then the recording task
        assert named["Result"] == task["Parameters"]["step"] and named["Next"] == "RecordFailure"
        assert task["Retry"][0]["MaxAttempts"] >= 1
    # the batched steps loop while the task asks for more
    for loop in ("MoreChunks", "MoreObjects"):
        assert states[loop]["Choices"][0]["Variable"] == "$.last.more"


def test_the_sweep_is_hourly_and_the_local_runtime_sees_it():
    sweep = parse(ROOT / "template.yaml").functions["TeardownSweepFunction"]
    assert [s.expression for s in sweep.schedules] == ["rate(1 hour)"]


def _statements(raw, function: str) -> list[dict]:
    out = []
    for policy in raw["Resources"][function]["Properties"]["Policies"]:
        if isinstance(policy, dict) and "Statement" in policy:
            out += policy["Statement"]
    return out


def _actions(statement: dict) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def test_each_teardown_function_may_do_its_part_only(raw):
    machine = {"Ref": "TeardownStateMachine"}
    for function in ("TeardownsFunction", "TeardownSweepFunction"):
        statements = _statements(raw, function)
        assert statements == [{"Effect": "Allow", "Action": "states:StartExecution", "Resource": machine}], function
        env = raw["Resources"][function]["Properties"]["Environment"]["Variables"]
        assert env["TEARDOWN_STATE_MACHINE_ARN"] == machine
    tasks = _statements(raw, "TeardownFunction")
    actions = set().union(*(_actions(s) for s in tasks))
    assert actions == {"s3:DeleteObject", "s3:ListBucket"}  # never a read of a document, never a key
    delete = next(s for s in tasks if _actions(s) == {"s3:DeleteObject"})
    prefixes = {r["Fn::Sub"].split("/", 1)[1] for r in delete["Resource"]}
    assert prefixes == {"rag/*", "text/*", "stage/*", "inbox/*", "incoming/*"}
    listing = next(s for s in tasks if _actions(s) == {"s3:ListBucket"})
    assert set(listing["Condition"]["StringLike"]["s3:prefix"]) == prefixes
    policies = raw["Resources"]["TeardownStateMachine"]["Properties"]["Policies"]
    assert policies == [{"LambdaInvokePolicy": {"FunctionName": {"Ref": "TeardownFunction"}}}]


@pytest.mark.parametrize(("table", "runtime"), [
    ("rag_handbook", True), ("rag_documents_archive", True), ("rag_a1", True),
    ("rag_documents", False),  # prefixed, a schema table's name: never a collection
    ("rag_teardown_documents", False), ("rag_all", False), ("rag_", False), ("rag_Handbook", False),
    ("rag_2024", False), ("documents", False), ("knowledge_bases", False), ("teardown_documents", False),
    ("rag_" + "x" * 46, False),
])
def test_the_runtime_table_predicate(table: str, runtime: bool):
    assert is_runtime_table(table) is runtime
