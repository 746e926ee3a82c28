"""template.yaml is deployable and says what the spec requires (R-SHAPE-1, R-SHAPE-3, R-UP-4)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import sluice.config.functions as functions_module
from sluice import config
from sluice.config import DATABASE, FUNCTIONS, DatabaseSettings, required_variables
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
    # and naming this deployment's key: not merely any KMS key, and not none, which S3 serves with the
    # aws/s3 managed key (a negated operator holds when the header is absent, so IfExists would let it by)
    assert denies["DenyPutsWithAnotherKey"]["Condition"] == {"StringNotEquals": {
        "s3:x-amz-server-side-encryption-aws-kms-key-id": {"Fn::GetAtt": ["DocumentsKey", "Arn"]}}}
    # the key the functions name in every write (sluice.storage.s3) is that same ARN
    assert raw["Globals"]["Function"]["Environment"]["Variables"]["SLUICE_KMS_KEY_ID"] == {
        "Fn::GetAtt": ["DocumentsKey", "Arn"]}
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


def test_only_health_the_api_description_and_the_console_are_open(raw):
    routes = parse(TEMPLATE).routes()
    assert raw["Resources"]["HttpApi"]["Properties"]["Auth"]["DefaultAuthorizer"] == "JwtAuthorizer"
    open_routes = {(r.method, r.path, r.function) for r in routes if not r.auth}
    assert open_routes == {("GET", "/health", "KbFunction"), ("GET", "/openapi.json", "KbFunction"),
                           ("GET", "/console", "ConsoleFunction"),
                           ("GET", "/console/assets/{proxy+}", "ConsoleFunction")}
    # The console function answers nothing else: every call its page makes is an API call with a token.
    assert {(r.method, r.path) for r in routes if r.function == "ConsoleFunction"} == {
        ("GET", "/console"), ("GET", "/console/assets/{proxy+}")}
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
    "textract:DetectDocumentText",  # no resource type: the page image is in the request (OcrProvider textract)
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


def _actions(statement):
    return [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]


def _readable_secret_kinds(raw, function):
    """The sluice:provider values whose secrets a function's role may read (GetSecretValue), the
    database secret aside; "ANY" for a statement that reads secrets whatever their tag says."""
    kinds = set()
    for statement in _allow_statements(raw, raw["Resources"][function]["Properties"].get("Policies", [])):
        if "Template" in statement or "secretsmanager:GetSecretValue" not in _actions(statement):
            continue
        if statement is raw["Resources"]["DatabaseSecretReadPolicy"]["Properties"]["PolicyDocument"]["Statement"][0]:
            continue
        equals = (statement.get("Condition") or {}).get("StringEquals", {})
        tag = equals.get("secretsmanager:ResourceTag/sluice:provider")
        if tag is None:
            kinds.add("ANY")
        else:
            kinds.update([tag] if isinstance(tag, str) else tag)
    return kinds


def test_each_role_reads_only_the_kinds_of_secret_it_uses(raw):
    # A tenant's aws_credentials sync secret, or another tenant's embedding key, is not for the
    # search, embed or chat worker functions: each reads the kinds it binds (issue 26, finding 9).
    # Keyed embedding and image-description providers are openai only (the tag a bound key carries):
    from sluice.access.keys import KEYED_PROVIDERS
    from sluice.sync.connectors import CONNECTORS
    from sluice.sync.connectors.s3 import SECRET_KIND

    assert set(KEYED_PROVIDERS) == {"openai"}
    assert SECRET_KIND == "aws_credentials"
    readers = {name: _readable_secret_kinds(raw, name) for name, r in raw["Resources"].items()
               if r["Type"] == "AWS::Serverless::Function"}
    assert {name: kinds for name, kinds in readers.items() if kinds} == {
        "EmbedFunction": {"openai"},            # bases' embedding and image-description keys
        "SearchFunction": {"openai", "reranker"},  # query embeddings; the deployment's reranker key
        "ChatWorkerFunction": {"chat_model"},    # the deployment's chat model key; attachments embed locally
        # a source's own credential: the secret kinds of the connectors, and nothing else
        "SyncTaskFunction": {c.SECRET_KIND for c in CONNECTORS.values() if c.SECRET_KIND},
    }


def test_secrets_are_read_only_when_sluice_binds_them(raw):
    # The database secret is named by ARN; every other secret read is scoped by its sluice:provider tag.
    kb_statements = _allow_statements(raw, raw["Resources"]["KbFunction"]["Properties"]["Policies"])
    kb_actions = {a for s in kb_statements for a in _actions(s)}
    assert kb_actions == {"secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"}
    db = raw["Resources"]["DatabaseSecretReadPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert db[0]["Resource"]["Fn::If"][1] == {"Ref": "DatabaseSecretArn"}


def test_every_function_that_opens_the_database_may_read_its_secret(raw):
    # Every function's settings have the database (FunctionSettings, checked at its cold start); with
    # DatabaseSecretArn, opening it is a secret read.
    opening = []
    for name, fn in raw["Resources"].items():
        if fn["Type"] != "AWS::Serverless::Function":
            continue
        if issubclass(FUNCTIONS[name], DatabaseSettings):
            opening.append(name)
            assert {"Ref": "DatabaseSecretReadPolicy"} in fn["Properties"]["Policies"], name
    # 12, the three of source syncs (SourcesFunction, SyncTask, SyncSchedule), the three of teardowns,
    # and the chat files and chat arrival functions split off the chat ones (docs/operations/deploying.md,
    # "Layers per need")
    assert len(opening) == 20


def _undeclared(template) -> dict[str, list[str]]:
    """Per function, the variables its settings require (sluice.config.functions) that the template
    does not declare to it (its own or the Globals')."""
    out = {}
    for name, fn in template.functions.items():
        wanted = config.unset(FUNCTIONS[name], set(fn.environment).__contains__)
        if wanted:
            out[name] = wanted
    return out


def test_every_variable_a_functions_settings_require_is_declared_to_it():
    template = parse(TEMPLATE)
    assert set(template.functions) == set(FUNCTIONS)
    assert required_variables(FUNCTIONS["ReaperFunction"]) == (
        DATABASE, "CHAT_QUEUE_URL", "INGEST_QUEUE_URL", "CHUNK_QUEUE_URL", "EMBED_QUEUE_URL", "SLUICE_BUCKET")
    assert _undeclared(template) == {}


def test_the_declaration_check_finds_a_variable_the_template_leaves_out():
    template = parse(TEMPLATE)
    documents = template.functions["DocumentsFunction"]
    documents.environment.pop("INGEST_QUEUE_URL")
    assert _undeclared(template) == {"DocumentsFunction": ["INGEST_QUEUE_URL"]}


# What each builder of sluice.wiring reads: a function whose handler calls it has those sections, so
# they are read and checked at its cold start, not at its first event.
BUILDERS = {"stage_context": config.StageSettings, "intake": config.IntakeSettings,
            "sync_context": config.SyncContextSettings, "teardown_context": config.TeardownContextSettings,
            "chat_resources": config.ChatContextSettings, "job_queue": config.IngestQueueSettings,
            "stage_queues": config.StageQueueSettings, "teardown_workflow": config.TeardownWorkflowSettings,
            "reranker": config.RerankerSettings, "default_embedding": config.DefaultEmbeddingSettings,
            "chat_queue_backlog": config.ChatQueueSettings, "embedder_for": config.EmbeddingSettings,
            "object_store": config.BucketSettings}


def test_a_functions_settings_hold_what_the_builders_its_handler_calls_read():
    import re

    import sluice.wiring

    seen = set()
    for name, fn in parse(TEMPLATE).functions.items():
        source = (ROOT / fn.code_uri / "app.py").read_text()
        imported = re.search(r"from sluice\.wiring import ([\w, ]+)", source)
        for builder in (imported.group(1).replace(" ", "").split(",") if imported else []):
            if builder in BUILDERS:
                seen.add(builder)
                assert issubclass(FUNCTIONS[name], BUILDERS[builder]), (name, builder)
    assert seen == set(BUILDERS)
    assert set(BUILDERS) <= set(vars(sluice.wiring))


def test_each_handler_is_built_with_its_functions_settings():
    """A handler checks at cold start the model of its own function (or, where one function has two
    handlers, a model that requires no more than the function's)."""
    import re

    for name, fn in parse(TEMPLATE).functions.items():
        source = (ROOT / fn.code_uri / "app.py").read_text()
        named = re.findall(r"settings=(\w+)\)", source)
        assert named, name
        for model in named:
            own = getattr(functions_module, model)
            assert model == name or set(required_variables(own)) <= set(required_variables(FUNCTIONS[name])), name


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


def _refs(value) -> set[str]:
    if isinstance(value, dict):
        return ({value["Ref"]} if "Ref" in value else set()).union(*(_refs(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_refs(v) for v in value))
    return set()


def test_every_bucket_the_stack_declares_is_one_a_sync_source_is_refused(raw):
    """A source never reads a bucket of the deployment (issue 26): the functions that check a source's
    config (create, change, and every run) are told every bucket the template declares."""
    buckets = {name for name, r in raw["Resources"].items() if r["Type"] == "AWS::S3::Bucket"}
    assert "DocumentsBucket" in buckets
    for fn in ("SourcesFunction", "SyncTaskFunction"):
        env = parse(TEMPLATE).functions[fn].environment
        named = _refs(env.get("SLUICE_BUCKET")) | _refs(env.get("SLUICE_STACK_BUCKETS"))
        assert buckets <= named, (fn, buckets - named)


def _names_the_bucket(resource):
    text = str(resource)
    return "DocumentsBucket" in text


def _bucket_readers(raw):
    """The functions whose roles may read or list the document bucket (s3:GetObject, s3:ListBucket)."""
    readers = set()
    for name, r in raw["Resources"].items():
        if r["Type"] != "AWS::Serverless::Function":
            continue
        for statement in _allow_statements(raw, r["Properties"].get("Policies", [])):
            if "Template" in statement or not _names_the_bucket(statement["Resource"]):
                continue
            if {"s3:GetObject", "s3:ListBucket"} & set(_actions(statement)):
                readers.add(name)
    return readers


def test_only_the_stacks_function_roles_may_read_the_bucket(raw):
    # A key pair in a tenant's sync secret (or any other principal of the account) must not read or
    # list the document bucket on AWS, whatever its own IAM policy allows (issue 26, finding 1).
    statements = raw["Resources"]["DocumentsBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    deny = {s["Sid"]: s for s in statements}["DenyReadsByOthers"]
    assert deny["Effect"] == "Deny" and deny["Principal"] == "*"
    assert set(deny["Action"]) >= {"s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket", "s3:ListBucketVersions"}
    assert deny["Resource"] == [{"Fn::GetAtt": ["DocumentsBucket", "Arn"]}, {"Fn::Sub": "${DocumentsBucket.Arn}/*"}]
    (operator, condition), = deny["Condition"].items()
    assert operator == "ArnNotLike" and list(condition) == ["aws:PrincipalArn"]
    allowed = {ref["Fn::GetAtt"][0] for ref in condition["aws:PrincipalArn"]}
    assert all(ref["Fn::GetAtt"][1] == "Arn" for ref in condition["aws:PrincipalArn"])
    # every role that reads the bucket is excepted (or it would be denied on AWS), and no other
    readers = _bucket_readers(raw)
    assert readers == {"ParseFunction", "ChunkFunction", "EmbedFunction", "DocumentsFunction", "ChatFilesFunction",
                       "ChatFunction", "ChatArrivalFunction", "ReaperFunction", "TeardownFunction"}
    assert allowed == {f"{name}Role" for name in readers}


def test_the_bucket_is_versioned_and_deleted_versions_expire(raw):
    # An overwrite or delete can be undone for a week (CKV_AWS_21), yet a delete or a teardown still
    # removes the data: the noncurrent version it leaves expires, bucket-wide, with its delete marker.
    props = raw["Resources"]["DocumentsBucket"]["Properties"]
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    rules = {r["Id"]: r for r in props["LifecycleConfiguration"]["Rules"]}
    noncurrent = rules["ExpireNoncurrentVersions"]
    assert noncurrent == {"Id": "ExpireNoncurrentVersions", "Status": "Enabled",
                          "NoncurrentVersionExpiration": {"NoncurrentDays": 7}, "ExpiredObjectDeleteMarker": True}
    # the stage and abandoned-upload rules still expire their prefixes' current versions
    assert rules["ExpireStageArtifacts"]["ExpirationInDays"] == 7
    assert rules["ExpireAbandonedUploads"]["ExpirationInDays"] == 1


def test_the_access_logs_are_encrypted_with_their_own_key(raw):
    logs = raw["Resources"]["HttpApiAccessLogs"]["Properties"]
    assert logs["KmsKeyId"] == {"Fn::GetAtt": ["AccessLogsKey", "Arn"]}
    key = raw["Resources"]["AccessLogsKey"]["Properties"]
    assert key["EnableKeyRotation"] is True
    service = {s["Sid"]: s for s in key["KeyPolicy"]["Statement"]}["CloudWatchLogsEncrypts"]
    assert service["Principal"] == {"Service": {"Fn::Sub": "logs.${AWS::Region}.${AWS::URLSuffix}"}}
    assert service["Condition"] == {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": {
        "Fn::Sub": "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:*"}}}
    # the documents' key is not the logs service's to use
    documents = raw["Resources"]["DocumentsKey"]["Properties"]["KeyPolicy"]["Statement"]
    assert [s["Sid"] for s in documents] == ["AccountAdministers"]


def test_every_queue_is_encrypted_at_rest(raw):
    queues = [r["Properties"] for r in raw["Resources"].values() if r["Type"] == "AWS::SQS::Queue"]
    assert len(queues) >= 10
    assert all(q.get("SqsManagedSseEnabled") is True for q in queues)


def test_locally_the_functions_bucket_and_key_are_the_ones_globals_names():
    # The template holds a second key (the access logs'); the local runtime must pick the documents'.
    t = parse(TEMPLATE)
    assert (t.bucket, t.key) == ("DocumentsBucket", "DocumentsKey")
    assert sum(r["Type"] == "AWS::KMS::Key" for r in t.raw["Resources"].values()) == 2


CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"


@pytest.mark.skipif(not CHECKOV.is_file(), reason="no .venv-checkov: `make checkov` installs it (make lint does)")
def test_checkov_finds_nothing_and_every_skip_says_why():
    import json
    import subprocess

    result = subprocess.run([str(CHECKOV), "--framework", "cloudformation", "--skip-download", "--output", "json",
                             "-f", str(TEMPLATE)], capture_output=True, text=True, timeout=600)
    report = json.loads(result.stdout)
    summary = report["summary"]
    failed = [(c["check_id"], c["resource"]) for c in report["results"]["failed_checks"]]
    assert summary["failed"] == 0 and summary["parsing_errors"] == 0, failed
    assert summary["passed"] >= 80 and summary["resource_count"] >= 47
    skipped = report["results"]["skipped_checks"]
    assert len(skipped) == summary["skipped"] > 0
    for check in skipped:  # a skip names its reason
        comment = (check["check_result"].get("suppress_comment") or "").strip()
        assert len(comment) > 30 and comment != "No comment provided", check["check_id"]


def _textract_statements(policies):
    """Each statement naming a textract action, with the condition it is granted under (None: always)."""
    found = []
    for policy in policies:
        if isinstance(policy, dict) and "Fn::If" in policy:
            condition, granted, otherwise = policy["Fn::If"]
            found += [(condition, s) for _, s in _textract_statements([granted])]
            found += [(f"not {condition}", s) for _, s in _textract_statements([otherwise])]
        elif isinstance(policy, dict) and "Statement" in policy:
            found += [(None, s) for s in policy["Statement"] if any(a.startswith("textract:") for a in _actions(s))]
    return found


def test_only_the_parse_function_may_call_textract_and_only_with_ocr_provider_textract(raw):
    # GIVEN every function's policies
    functions = {n: r for n, r in raw["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}
    granted = {name: _textract_statements(fn["Properties"].get("Policies", [])) for name, fn in functions.items()}

    # THEN one statement, on the parse function, under UseTextract, allows DetectDocumentText and nothing else
    assert {name: found for name, found in granted.items() if found} == {
        "ParseFunction": [
            ("UseTextract", {"Effect": "Allow", "Action": "textract:DetectDocumentText", "Resource": "*"})
        ]
    }
    assert raw["Conditions"]["UseTextract"] == {"Fn::Equals": [{"Ref": "OcrProvider"}, "textract"]}
    assert raw["Parameters"]["OcrProvider"]["Default"] == "tesseract"
    assert raw["Parameters"]["OcrProvider"]["AllowedValues"] == ["tesseract", "textract"]


def test_every_function_is_told_the_ocr_provider_and_the_parse_function_where_tesseracts_data_is(raw):
    parse = raw["Resources"]["ParseFunction"]["Properties"]
    assert parse["Environment"]["Variables"]["TESSDATA_PREFIX"] == {"Ref": "TessdataPrefix"}
    # The operator's Tesseract layer, attached only when named, as LibreOffice's is.
    assert {"Fn::If": ["HasTesseractLayer", {"Ref": "TesseractLayerArn"}, {"Ref": "AWS::NoValue"}]} in parse["Layers"]
    assert raw["Conditions"]["HasTesseractLayer"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "TesseractLayerArn"}, ""]}]}
    # The API's functions validate ocr_languages and answer GET /rag/parsers without the layer: the
    # deployment declares what the layer reads to all of them (nothing without a layer).
    shared = raw["Globals"]["Function"]["Environment"]["Variables"]
    assert shared["SLUICE_OCR_PROVIDER"] == {"Ref": "OcrProvider"}
    assert shared["SLUICE_OCR_LANGUAGES"] == {"Fn::If": ["HasTesseractLayer", {"Ref": "TesseractLanguages"}, ""]}
    assert raw["Parameters"]["TesseractLanguages"]["Default"] == "eng"


def test_locally_the_ocr_provider_is_tesseract_unless_the_environment_says_textract():
    # Locally textract means moto's Textract: the local runtime points every AWS client at its moto.
    t = parse(TEMPLATE)
    refs = {name: f"local-{name}" for name in t.raw["Resources"]}
    attrs = {(name, "Arn"): f"arn:local:{name}" for name in t.raw["Resources"]}
    resolve = Resolver(t, refs, attrs)
    assert function_environment(t, resolve, {})["SLUICE_OCR_PROVIDER"] == "tesseract"
    assert function_environment(t, resolve, {"SLUICE_OCR_PROVIDER": "textract"})["SLUICE_OCR_PROVIDER"] == "textract"


def test_locally_the_ocr_languages_are_the_machines_own_unless_a_layer_is_named():
    # Fn::If on the template's conditions, as CloudFormation would: no TesseractLayerArn (the default)
    # declares nothing, so the local runtime reads the machine's language data.
    t = parse(TEMPLATE)
    refs = {name: f"local-{name}" for name in t.raw["Resources"]}
    attrs = {(name, "Arn"): f"arn:local:{name}" for name in t.raw["Resources"]}
    assert function_environment(t, Resolver(t, refs, attrs), {})["SLUICE_OCR_LANGUAGES"] == ""
    layered = Resolver(t, refs, attrs, {"TesseractLayerArn": "arn:aws:lambda:us-east-1:1:layer:tess:1",
                                         "TesseractLanguages": "eng+spa"})
    assert function_environment(t, layered, {})["SLUICE_OCR_LANGUAGES"] == "eng+spa"
