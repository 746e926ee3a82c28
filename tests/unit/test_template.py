"""template.yaml is deployable and says what the spec requires (R-SHAPE-1, R-SHAPE-3, R-UP-4)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from sluice.local.template import Resolver, function_environment, load, parse
from tests.cfn_lint import lint as cfn_lint

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


@pytest.fixture(scope="module")
def raw():
    return load(TEMPLATE)


def test_cfn_lint_reports_no_error():
    result = cfn_lint(TEMPLATE)  # once per template: a clean pass `make lint` already had is remembered
    assert result.returncode in (0, 4, 8, 12) and not result.errors, result.output


def test_every_function_has_a_handler_file():
    functions = parse(TEMPLATE).functions.values()
    assert len(functions) >= 9
    for fn in functions:
        module, _, attr = fn.handler.rpartition(".")
        path = ROOT / fn.code_uri / f"{module}.py"
        assert path.is_file(), fn.name
        spec = importlib.util.spec_from_file_location(f"check_{fn.name}", path)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        assert callable(getattr(mod, attr)), fn.name


def test_bucket_is_kms_encrypted_private_and_tls_only(raw):
    props = raw["Resources"]["DocumentsBucket"]["Properties"]
    rule = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"] == {"Fn::GetAtt": ["DocumentsKey", "Arn"]}
    assert rule["BucketKeyEnabled"] is True
    assert all(props["PublicAccessBlockConfiguration"].values())
    statements = raw["Resources"]["DocumentsBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    denies = {s["Sid"]: s for s in statements if s["Effect"] == "Deny"}
    assert denies["DenyInsecureTransport"]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert denies["DenyPutsWithoutKms"]["Condition"] == {
        "StringNotEquals": {"s3:x-amz-server-side-encryption": "aws:kms"}}
    # and with this deployment's key, not merely any KMS key
    assert denies["DenyPutsWithAnotherKey"]["Condition"] == {"StringNotEqualsIfExists": {
        "s3:x-amz-server-side-encryption-aws-kms-key-id": {"Fn::GetAtt": ["DocumentsKey", "Arn"]}}}
    assert raw["Resources"]["DocumentsKey"]["Properties"]["EnableKeyRotation"] is True


def test_stage_queues_have_dead_letter_queues_and_partial_failures(raw):
    template = parse(TEMPLATE)
    sourced = [f for f in template.functions.values() if f.queues]
    assert {q for f in sourced for q in f.queues} >= {"IngestQueue", "ChunkQueue", "EmbedQueue"}
    sqs_events = [(fn.name, ev) for fn in sourced for ev in raw["Resources"][fn.name]["Properties"]["Events"].values()
                  if ev["Type"] == "SQS"]
    assert len(sqs_events) == sum(len(fn.queues) for fn in sourced) >= 6
    assert all(ev["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"] for _, ev in sqs_events)
    stage_queues = {"IngestQueue", "ChunkQueue", "EmbedQueue", "ChatQueue", "ChatArrivalQueue"}
    for name in stage_queues:  # each stage queue hands its failures to a dead-letter queue after a few tries
        q = template.queues[name]
        assert q.dead_letter and q.max_receive_count and q.max_receive_count <= 5, name
    for fn in sourced:
        for queue in fn.queues:
            # the visibility timeout must outlast the function, or a message is handled twice at once
            assert template.queues[queue].visibility_timeout >= fn.timeout, queue


def test_only_health_and_the_api_description_are_open(raw):
    routes = parse(TEMPLATE).routes()
    assert raw["Resources"]["HttpApi"]["Properties"]["Auth"]["DefaultAuthorizer"] == "JwtAuthorizer"
    open_routes = {(r.method, r.path) for r in routes if not r.auth}
    assert open_routes == {("GET", "/health"), ("GET", "/openapi.json")}
    assert len({(r.method, r.path) for r in routes}) == len(routes), "a route is declared twice"


def test_stage_notifications_do_not_overlap():
    prefixes = [(n.event, n.prefix) for n in parse(TEMPLATE).notifications]
    # the stages' own prefixes are among them, so the pairs below are checked at all
    assert {p for _, p in prefixes} >= {"rag/", "incoming/", "inbox/", "stage/parsed/", "stage/chunks/"}
    for event, prefix in prefixes:
        clashes = [p for e, p in prefixes
                   if e == event and p != prefix and (p.startswith(prefix) or prefix.startswith(p))]
        assert not clashes, (event, prefix, clashes)


def test_locally_the_environment_overrides_stack_parameters_but_not_resources():
    # `EMBEDDING_ALLOWED_ENDPOINTS=localhost make run` must reach the functions, as a
    # --parameter-overrides would on AWS; a variable naming a resource stays the local resource.
    t = parse(TEMPLATE)
    refs = {name: f"local-{name}" for name in t.raw["Resources"]}
    attrs = {(name, "Arn"): f"arn:local:{name}" for name in t.raw["Resources"]}
    resolve = Resolver(t, refs, attrs)
    defaults = function_environment(t, resolve, {})
    assert defaults["EMBEDDING_ALLOWED_ENDPOINTS"] == "" and defaults["MAX_UPLOAD_SIZE_MB"] == "50"

    shell = {"EMBEDDING_ALLOWED_ENDPOINTS": "localhost", "MAX_UPLOAD_SIZE_MB": "5", "SLUICE_BUCKET": "elsewhere"}
    env = function_environment(t, resolve, shell)
    assert env["EMBEDDING_ALLOWED_ENDPOINTS"] == "localhost" and env["MAX_UPLOAD_SIZE_MB"] == "5"
    assert env["SLUICE_BUCKET"] == defaults["SLUICE_BUCKET"] != "elsewhere"


# Actions no IAM resource type can scope: allowed on "*" only where listed here, with why.
UNSCOPABLE_ACTIONS = {
    "bedrock:Rerank",  # no resource type; the rerank model itself is scoped by bedrock:InvokeModel
}


def _allow_statements(raw, policies):
    """Every Allow statement a function's Policies grant: inline, under an !If, or in a managed policy."""
    out = []
    for policy in policies:
        if isinstance(policy, dict) and "Fn::If" in policy:
            out += _allow_statements(raw, [p for p in policy["Fn::If"][1:] if p != {"Ref": "AWS::NoValue"}])
        elif isinstance(policy, dict) and "Ref" in policy:
            managed = raw["Resources"][policy["Ref"]]
            assert managed["Type"] == "AWS::IAM::ManagedPolicy", policy
            out += managed["Properties"]["PolicyDocument"]["Statement"]
        elif isinstance(policy, dict) and "Statement" in policy:
            out += policy["Statement"]
        else:
            assert isinstance(policy, dict) and len(policy) == 1, policy  # a SAM policy template
            out.append({"Effect": "Allow", "Template": next(iter(policy))})
    return [s for s in out if s.get("Effect") == "Allow"]


def test_no_function_may_act_on_every_resource(raw):
    functions = {n: r for n, r in raw["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}
    assert len(functions) >= 9
    checked = 0
    for name, fn in functions.items():
        for statement in _allow_statements(raw, fn["Properties"].get("Policies", [])):
            if "Template" in statement:
                # the SAM templates kept are scoped by their parameters, and none is a CRUD-all
                assert statement["Template"] in {"SSMParameterReadPolicy", "SQSSendMessagePolicy"}, name
                continue
            checked += 1
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if "*" in resources:
                assert set(actions) <= UNSCOPABLE_ACTIONS, (name, actions)
            assert not any(a.endswith(":*") or a == "*" for a in actions), (name, actions)
    assert checked > 20


def test_secrets_are_read_only_when_sluice_binds_them(raw):
    # An embedding key (or the reranker's) carries sluice:provider; the database secret is named by ARN.
    reads = [s for s in raw["Resources"]["EmbeddingProvidersPolicy"]["Properties"]["PolicyDocument"]["Statement"]
             if s["Action"] == "secretsmanager:GetSecretValue"]
    assert len(reads) == 1
    assert reads[0]["Condition"] == {"Null": {"secretsmanager:ResourceTag/sluice:provider": "false"}}
    kb_statements = _allow_statements(raw, raw["Resources"]["KbFunction"]["Properties"]["Policies"])
    kb_actions = {a for s in kb_statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert kb_actions == {"secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"}
    db = raw["Resources"]["DatabaseSecretReadPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert db[0]["Resource"]["Fn::If"][1] == {"Ref": "DatabaseSecretArn"}


def test_every_function_that_opens_the_database_may_read_its_secret(raw):
    # A handler that opens the database says so (requires=(DATABASE, ...), checked at its cold start);
    # with DatabaseSecretArn, opening it is a secret read.
    opening = []
    for name, fn in raw["Resources"].items():
        if fn["Type"] != "AWS::Serverless::Function":
            continue
        source = (ROOT / fn["Properties"]["CodeUri"] / "app.py").read_text()
        if "requires=(DATABASE" in source:
            opening.append(name)
            assert {"Ref": "DatabaseSecretReadPolicy"} in fn["Properties"]["Policies"], name
    # 12, the three of source syncs (SourcesFunction, SyncTask, SyncSchedule), the three of teardowns,
    # and the chat files and chat arrival functions split off the chat ones (README "Layers per need")
    assert len(opening) == 20


def test_traces_carry_no_responses_or_error_messages(raw):
    env = raw["Globals"]["Function"]["Environment"]["Variables"]
    assert env["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"
    assert env["POWERTOOLS_TRACER_CAPTURE_ERROR"] == "false"
    for name, fn in raw["Resources"].items():
        if fn["Type"] == "AWS::Serverless::Function":
            own = (fn["Properties"].get("Environment") or {}).get("Variables", {})
            assert "POWERTOOLS_TRACER_CAPTURE_RESPONSE" not in own, name


def test_the_token_issuer_has_no_default_and_must_be_https(raw):
    issuer = raw["Parameters"]["JwtIssuer"]
    assert "Default" not in issuer and "Default" not in raw["Parameters"]["JwtAudience"]
    import re

    pattern = re.compile(issuer["AllowedPattern"])
    assert pattern.fullmatch("https://tenant.eu.auth0.com/") and pattern.fullmatch("https://cognito-idp.x/pool")
    assert not pattern.fullmatch("http://tenant.auth0.com/") and not pattern.fullmatch("")


def test_the_api_is_throttled_and_logged(raw):
    api = raw["Resources"]["HttpApi"]["Properties"]
    assert set(api["DefaultRouteSettings"]) == {"ThrottlingRateLimit", "ThrottlingBurstLimit"}
    assert api["AccessLogSettings"]["DestinationArn"] == {"Fn::GetAtt": ["HttpApiAccessLogs", "Arn"]}
    assert "querystring" not in api["AccessLogSettings"]["Format"].lower()
