"""The local runtime runs a template's state machines on moto's interpreter, with Lambda tasks
answered by the in-process handlers (a handler's exception is the task's error, which ASL's
Retry and Catch match by class name), and fires schedule events.

A small template of its own, so the mechanism is tested apart from the product's workflows."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import boto3
import psycopg
import pytest

from sluice.local.runtime import LocalRuntime
from tests.conftest import _with_db

TEMPLATE = """
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Key:
    Type: AWS::KMS::Key
    Properties: {Description: test}
  Bucket:
    Type: AWS::S3::Bucket
    Properties:
      BucketName: !Sub wf-${AWS::AccountId}
      BucketEncryption:
        ServerSideEncryptionConfiguration:
          - ServerSideEncryptionByDefault: {SSEAlgorithm: aws:kms, KMSMasterKeyID: !GetAtt Key.Arn}
      PublicAccessBlockConfiguration:
        BlockPublicAcls: true
        BlockPublicPolicy: true
        IgnorePublicAcls: true
        RestrictPublicBuckets: true
  StepFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/step/
      Handler: app.handler
      Environment:
        Variables:
          WORKFLOW_ARN: !Ref Workflow
      Events:
        Hourly:
          Type: Schedule
          Properties:
            Schedule: rate(1 hour)
            Input: '{"op": "sweep"}'
  Workflow:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: workflow.asl.json
      DefinitionSubstitutions:
        StepArn: !GetAtt StepFunction.Arn
"""

ASL = {
    "StartAt": "Double",
    "States": {
        "Double": {"Type": "Task", "Resource": "${StepArn}", "Parameters": {"op": "double", "n.$": "$.n"},
                   "ResultPath": "$.doubled", "Next": "Each"},
        "Each": {"Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 2, "ResultPath": "$.each",
                 "Iterator": {"StartAt": "Item", "States": {
                     "Item": {"Type": "Task", "Resource": "${StepArn}", "End": True,
                              "Parameters": {"op": "item", "item.$": "$.name"},
                              "Retry": [{"ErrorEquals": ["FlakyError"], "MaxAttempts": 2, "IntervalSeconds": 1}],
                              "Catch": [{"ErrorEquals": ["RefusedError"], "ResultPath": "$.error",
                                         "Next": "Refused"}]},
                     "Refused": {"Type": "Pass", "Parameters": {"refused.$": "$.error.Error"}, "End": True}}},
                 "Next": "Done"},
        "Done": {"Type": "Succeed"},
    },
}

HANDLER = """
import builtins
import os

# Every environment of this function records into one process-wide list; `ENVIRONMENT` is per module.
calls = builtins.__dict__.setdefault("_sluice_step_calls", [])
ENVIRONMENT = object()
flaky = builtins.__dict__.setdefault("_sluice_step_flaky", {"left": 1})


class FlakyError(Exception):
    pass


class RefusedError(Exception):
    pass


def handler(event, context):
    calls.append(event)
    if event.get("op") == "meet":
        # Two events of this function meet here: only if they run at once (shared across environments).
        import threading
        builtins.__dict__.setdefault("_sluice_meet", threading.Barrier(2, timeout=20)).wait()
        return {"instance": id(ENVIRONMENT)}
    if event.get("op") == "double":
        return event["n"] * 2
    if event.get("op") == "item":
        if event["item"] == "flaky" and flaky["left"]:
            flaky["left"] -= 1
            raise FlakyError("once")
        if event["item"] == "refuse":
            raise RefusedError("never this one")
        return {"item": event["item"], "workflow": os.environ["WORKFLOW_ARN"].rsplit(":", 1)[-1]}
    return {"op": event.get("op")}
"""

# One worker runs this module: its runtime starts once.
pytestmark = pytest.mark.xdist_group("small_runtime")


@pytest.fixture(scope="module")
def small_runtime(pg_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("wf")
    (root / "template.yaml").write_text(TEMPLATE)
    (root / "workflow.asl.json").write_text(json.dumps(ASL))
    (root / "functions" / "step").mkdir(parents=True)
    (root / "functions" / "step" / "app.py").write_text(HANDLER)
    (root / "infra" / "migrations").mkdir(parents=True)
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as c:
        c.execute("CREATE DATABASE wf_runtime")
    rt = LocalRuntime(root=root, data_dir=root / "data", api_port=0,
                      database_url=_with_db(pg_server.get_uri(), "wf_runtime"))
    rt.start()
    yield rt
    rt.stop()


def step_calls() -> list[dict]:
    import builtins

    return builtins.__dict__["_sluice_step_calls"]


def run(rt: LocalRuntime, payload: dict) -> dict:
    sfn = boto3.client("stepfunctions", endpoint_url=rt.moto_url, region_name="us-east-1")
    arn = sfn.start_execution(stateMachineArn=rt.state_machine_arns["Workflow"], input=json.dumps(payload))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        described = sfn.describe_execution(executionArn=arn["executionArn"])
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.2)
    raise AssertionError("the execution did not finish")


def test_a_state_machine_runs_its_tasks_in_the_handlers_with_retry_and_catch(small_runtime):
    done = run(small_runtime, {"n": 21, "items": [{"name": "a"}, {"name": "flaky"}, {"name": "refuse"}]})
    assert done["status"] == "SUCCEEDED", done
    output = json.loads(done["output"])
    assert output["doubled"] == 42
    # the flaky item failed once and its retry ran; the refused one was caught by its error's class name
    assert output["each"] == [{"item": "a", "workflow": "Workflow"}, {"item": "flaky", "workflow": "Workflow"},
                              {"refused": "RefusedError"}]
    assert [c["item"] for c in step_calls() if c.get("op") == "item"].count("flaky") == 2


def test_schedules_fire_with_their_input(small_runtime):
    before = len(step_calls())
    small_runtime.scheduler.fire("StepFunction")
    assert step_calls()[before:] == [{"source": "aws.scheduler", "detail-type": "Scheduled Event", "op": "sweep"}]
    assert small_runtime.template.functions["StepFunction"].schedules[0].expression == "rate(1 hour)"


def test_the_product_template_declares_its_state_machines_from_files(tmp_path: Path):
    from sluice.local.template import parse
    from tests.conftest import ROOT

    machines = parse(ROOT / "template.yaml").state_machines.values()
    assert {sm.name for sm in machines} >= {"SyncStateMachine", "TeardownStateMachine"}
    for sm in machines:
        definition = json.loads((ROOT / sm.definition_uri).read_text())
        assert definition["StartAt"] in definition["States"], sm.name


def test_two_events_of_one_function_run_at_once_each_in_an_environment_of_its_own(small_runtime):
    # Lambda runs concurrent events in separate environments; a local runtime that ran one at a time
    # queued every search behind the one before it.
    import threading

    answers: list[dict] = []
    threads = [threading.Thread(target=lambda: answers.append(small_runtime.invoke("StepFunction", {"op": "meet"})))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 2  # neither waited for the other (the barrier would have broken)
    assert answers[0]["instance"] != answers[1]["instance"]  # module state is per environment


def test_a_stopped_runtime_leaves_the_process_environment_as_it_found_it(pg_server, tmp_path, monkeypatch):
    # The runtime points the handlers at its own database, bucket and token secret through the
    # process environment; left behind, a later runtime in the same process took the first one's
    # secret as configured and never made its own.
    monkeypatch.delenv("SLUICE_DEV_JWT_SECRET", raising=False)
    before = dict(os.environ)
    (tmp_path / "template.yaml").write_text(TEMPLATE)
    (tmp_path / "workflow.asl.json").write_text(json.dumps(ASL))
    (tmp_path / "functions" / "step").mkdir(parents=True)
    (tmp_path / "functions" / "step" / "app.py").write_text(HANDLER)
    (tmp_path / "infra" / "migrations").mkdir(parents=True)
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as c:
        c.execute("DROP DATABASE IF EXISTS wf_env")
        c.execute("CREATE DATABASE wf_env")
    with LocalRuntime(root=tmp_path, data_dir=tmp_path / "data", api_port=0, pumps=False,
                      database_url=_with_db(pg_server.get_uri(), "wf_env")) as rt:
        assert os.environ["SLUICE_DEV_JWT_SECRET"] == rt.jwt_secret
    assert dict(os.environ) == before
