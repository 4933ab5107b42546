"""Every setting this project reads from the environment, in one place.

:class:`Settings` is a pydantic-settings model: each field names its environment variable (the
ecosystem's own names: ``TEMPORAL_ADDRESS``, ``OPENAI_API_KEY``, boto3's ``AWS_*``, the
OpenTelemetry ``OTEL_*``), its default and what it means. Nothing else in the project reads
``os.environ``; code asks :func:`get_settings` (or :func:`model_endpoint` for a named model
endpoint). ``agent config`` prints the effective values; docs/configuration.md has the table
(a unit test keeps it current).

A bad value is a :class:`SettingsError` naming the variable, what was wrong and what is allowed,
raised where settings are first read: at worker start, at client connect, when a CLI command
starts. Workflow code never reads settings (a run's behaviour must not depend on the replaying
worker's environment); :func:`get_settings` refuses to run inside a workflow.

Some variables are read by the libraries themselves as well (boto3 its ``AWS_*``, the
OpenTelemetry SDK its ``OTEL_EXPORTER_OTLP_*`` and resource variables): they are fields here so
``agent config`` shows them and the S3 client cache is keyed by them.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from typing import Any, Literal, NamedTuple

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, SecretStr, TypeAdapter, ValidationError
from pydantic import field_validator as _field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from temporalio import workflow

from core.codec import parse_payload_keys
from core.url_prefixes import parse_prefixes

DEFAULT_TASK_QUEUE = "agent"
#: A run's workflow task timeout. A worker killed in the middle of a workflow task holds the run
#: this long before another worker takes the task over (Temporal's default is 10 s). It must stay
#: above the longest workflow task: a replay of a run's history after eviction (a run continues
#: as new at about 4,000 events) takes well under a second here.
DEFAULT_WORKFLOW_TASK_TIMEOUT = timedelta(seconds=4)
#: Workflow runs a worker keeps in memory (temporalio's ``max_cached_workflows``; its default is
#: 1,000). A cached run parked on an approval holds ~180 KB of RSS (its sandbox, rebuilt Agent,
#: hooks, State and messages), so the cache, not the number of parked runs, bounds a worker's
#: memory: the least recently used runs leave it first, and a parked run is idle, so active runs
#: stay cached while parked ones are evicted. An evicted run replays its (short) history when its
#: approval arrives. 500 keeps 10,000 parked runs under 300 MB of worker RSS (bench/parked_runs.py)
#: and leaves room for 500 runs stepping at once.
DEFAULT_MAX_CACHED_WORKFLOWS = 500
DEFAULT_PAYLOAD_THRESHOLD_BYTES = 256 * 1024
DEFAULT_TOOL_RESULTS_DIR = ".agent-dev/tool-results"
DEFAULT_TOOL_RESULTS_PREFIX = "tool-results"
MASK = "********"


class ConfigurationError(RuntimeError):
    """The environment, the Temporal namespace or the S3 store is not set up for agent runs; the
    message says how to fix it. (Importable from ``core.checks`` as well.)"""


class SettingsError(ConfigurationError, ValueError):
    """An environment variable has a value its setting cannot take. The message names each
    variable, what was wrong and what is allowed."""


def _setting(env: str, default: Any, description: str, allowed: str) -> Any:
    """A field read from ``env``; ``allowed`` says in words which values it takes (for errors and docs)."""
    return Field(default, validation_alias=env, description=description, json_schema_extra={"allowed": allowed})


_ON_OFF = "on or off"
_TEXT = "any text"


class Settings(BaseSettings):
    """The process's configuration, read from the environment by :func:`get_settings`.

    Construct it directly (``Settings(task_queue="q")``, by field name) only in tests; a field left
    out is still read from the environment.
    """

    model_config = SettingsConfigDict(
        case_sensitive=True, env_ignore_empty=True, extra="ignore", populate_by_name=True, frozen=True
    )

    # Temporal
    temporal_address: str = _setting(
        "TEMPORAL_ADDRESS", "localhost:7233", "host:port of the Temporal frontend that clients and workers use.", _TEXT
    )
    temporal_namespace: str = _setting("TEMPORAL_NAMESPACE", "default", "The Temporal namespace of every run.", _TEXT)
    task_queue: str = _setting(
        "AGENT_TASK_QUEUE", DEFAULT_TASK_QUEUE, "Task queue workers poll and runs start on (CLI and worker).", _TEXT
    )
    payloads_bucket: str | None = _setting(
        "TEMPORAL_PAYLOADS_BUCKET",
        None,
        "S3 bucket for payloads over the threshold and stored conversations (default: TOOL_RESULTS_BUCKET; "
        "neither: payloads stay in history).",
        "an S3 bucket name",
    )
    payload_threshold_bytes: NonNegativeInt = _setting(
        "TEMPORAL_PAYLOAD_THRESHOLD_BYTES",
        DEFAULT_PAYLOAD_THRESHOLD_BYTES,
        "Payloads larger than this many bytes go to the payloads bucket instead of history.",
        "a whole number >= 0",
    )
    # The model
    openai_api_key: SecretStr | None = _setting(
        "OPENAI_API_KEY", None, "API key of the worker's model endpoint (secret).", _TEXT
    )
    openai_base_url: str | None = _setting(
        "OPENAI_BASE_URL", None, "Base URL of any OpenAI-compatible server (default: OpenAI's).", "a URL"
    )
    openai_timeout_seconds: PositiveFloat = _setting(
        "OPENAI_TIMEOUT_SECONDS",
        120.0,
        "Timeout of one model call, for every endpoint without its own {P}_OPENAI_TIMEOUT_SECONDS.",
        "a number of seconds > 0",
    )
    token_batch_ms: NonNegativeFloat = _setting(
        "AGENT_TOKEN_BATCH_MS",
        250.0,
        "Milliseconds between two token batches a streamed model call publishes (Agent(stream_tokens=True)).",
        "a number of milliseconds >= 0",
    )
    model: str = _setting("AGENT_MODEL", "gpt-4o-mini", "Model of the demo agent (agent run, agent demo).", _TEXT)
    # The people's side
    approver: str | None = _setting(
        "AGENT_APPROVER",
        None,
        "Name recorded as the approver when a CLI decision or agent dev's inbox names none (default: the OS user).",
        _TEXT,
    )
    inbox_public_url: str | None = _setting(
        "AGENT_INBOX_PUBLIC_URL",
        None,
        "Base URL people reach the inbox at; approval webhooks carry approve/reject links under it (unset: no links).",
        "an http(s) URL",
    )
    approval_link_secret: SecretStr | None = _setting(
        "AGENT_APPROVAL_LINK_SECRET",
        None,
        "Key that signs approval links; the workers and the inbox must share it (secret; unset: no links).",
        "at least 32 characters",
    )
    # S3 (boto3 reads the AWS_* variables itself as well)
    aws_endpoint_url_s3: str | None = _setting(
        "AWS_ENDPOINT_URL_S3", None, "S3 endpoint (MinIO, moto); boto3's own variable.", "a URL"
    )
    aws_endpoint_url: str | None = _setting(
        "AWS_ENDPOINT_URL", None, "Endpoint of every AWS service, when AWS_ENDPOINT_URL_S3 is unset (boto3).", "a URL"
    )
    aws_region: str | None = _setting("AWS_REGION", None, "AWS region (boto3).", _TEXT)
    aws_default_region: str | None = _setting(
        "AWS_DEFAULT_REGION", None, "AWS region when AWS_REGION is unset (boto3).", _TEXT
    )
    aws_profile: str | None = _setting("AWS_PROFILE", None, "Profile of the shared AWS config files (boto3).", _TEXT)
    aws_access_key_id: str | None = _setting("AWS_ACCESS_KEY_ID", None, "AWS access key id (boto3).", _TEXT)
    aws_secret_access_key: SecretStr | None = _setting(
        "AWS_SECRET_ACCESS_KEY", None, "AWS secret access key (boto3; secret).", _TEXT
    )
    aws_session_token: SecretStr | None = _setting(
        "AWS_SESSION_TOKEN", None, "AWS session token of temporary credentials (boto3; secret).", _TEXT
    )
    # Tool results
    tool_results_bucket: str | None = _setting(
        "TOOL_RESULTS_BUCKET",
        None,
        "S3 bucket of offloaded tool results (unset: the file system store under TOOL_RESULTS_DIR).",
        "an S3 bucket name",
    )
    tool_results_prefix: str = _setting(
        "TOOL_RESULTS_PREFIX",
        DEFAULT_TOOL_RESULTS_PREFIX,
        "Key prefix of offloaded tool results in TOOL_RESULTS_BUCKET.",
        _TEXT,
    )
    tool_results_sse: Literal["AES256", "aws:kms", "aws:kms:dsse"] | None = _setting(
        "TOOL_RESULTS_SSE",
        None,
        "Server-side encryption of offloaded tool results (unset: the bucket's default).",
        "AES256, aws:kms or aws:kms:dsse",
    )
    tool_results_dir: str = _setting(
        "TOOL_RESULTS_DIR",
        DEFAULT_TOOL_RESULTS_DIR,
        "Directory of offloaded tool results when TOOL_RESULTS_BUCKET is unset.",
        "a directory path",
    )
    # The worker
    max_cached_workflows: NonNegativeInt = _setting(
        "AGENT_MAX_CACHED_WORKFLOWS",
        DEFAULT_MAX_CACHED_WORKFLOWS,
        "Workflow runs a worker keeps in memory (0: none, every workflow task replays its run).",
        "a whole number >= 0",
    )
    conversation_store: Literal["on", "off"] = _setting(
        "AGENT_CONVERSATION_STORE",
        "on",
        "off: model calls send whole conversations instead of storing them in the payloads bucket.",
        _ON_OFF,
    )
    waiting_search_attribute: Literal["on", "off"] = _setting(
        "AGENT_WAITING_SEARCH_ATTRIBUTE",
        "on",
        "off: waiting runs are found by their memo, without the AgentWaitingForApproval search attribute.",
        _ON_OFF,
    )
    preload_encodings: str | None = _setting(
        "AGENT_PRELOAD_ENCODINGS", None, "tiktoken encodings a worker loads at start.", "comma-separated encoding names"
    )
    prometheus_bind: str | None = _setting(
        "AGENT_PROMETHEUS_BIND",
        None,
        "host:port where the SDK's Prometheus metrics are served (unset: off).",
        "host:port",
    )
    # OpenTelemetry (the SDK reads OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_* itself)
    otel_sdk_disabled: bool = _setting("OTEL_SDK_DISABLED", False, "true: tracing stays off.", "true or false")
    otel_traces_exporter: str | None = _setting(
        "OTEL_TRACES_EXPORTER",
        None,
        "Span exporters; set and not none turns tracing on.",
        "otlp, console, none (comma-separated)",
    )
    otel_exporter_otlp_protocol: str | None = _setting(
        "OTEL_EXPORTER_OTLP_PROTOCOL", None, "OTLP protocol (default http/protobuf).", "http/protobuf or grpc"
    )
    otel_exporter_otlp_traces_protocol: str | None = _setting(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        None,
        "OTLP protocol of traces (default OTEL_EXPORTER_OTLP_PROTOCOL).",
        "http/protobuf or grpc",
    )
    otel_exporter_otlp_endpoint: str | None = _setting(
        "OTEL_EXPORTER_OTLP_ENDPOINT", None, "OTLP collector URL (read by the OpenTelemetry exporter).", "a URL"
    )
    otel_service_name: str | None = _setting(
        "OTEL_SERVICE_NAME", None, "service.name of the spans (read by the OpenTelemetry SDK).", _TEXT
    )
    model_prices: dict[str, tuple[NonNegativeFloat, NonNegativeFloat]] | None = _setting(
        "AGENT_MODEL_PRICES",
        None,
        "Price per million input and output tokens by model (or model@ENDPOINT); model calls of a priced model "
        "add a cost to their usage.",
        'a JSON object, e.g. {"gpt-4o": [2.5, 10], "claude-sonnet-4@ANTHROPIC": [3, 15]}',
    )
    model_task_queue: str | None = _setting(
        "AGENT_MODEL_TASK_QUEUE",
        None,
        "Task queue the workers put their runs' model calls on and poll (runtime/model_queue.py); the same on "
        "every worker of a queue.",
        _TEXT,
    )
    model_calls_per_second: PositiveFloat | None = _setting(
        "AGENT_MODEL_CALLS_PER_SECOND",
        None,
        "With AGENT_MODEL_TASK_QUEUE: at most this many model calls a second for all the workers together "
        "(Temporal's task-queue rate limit).",
        "a number > 0",
    )
    # Trust: what a run's input may name (core/trust.py)
    trusted_modules: str | None = _setting(
        "AGENT_TRUSTED_MODULES",
        None,
        "Module prefixes whose hooks, policies, stores, functions and types a run's input may name, beyond "
        "the project's packages and the modules of the agents and tools the worker serves.",
        "comma-separated module names, e.g. myapp.hooks,myapp.policies",
    )
    # Side effects a run's input may ask for (core/side_effects.py; docs/security.md)
    file_roots: str | None = _setting(
        "AGENT_FILE_ROOTS",
        None,
        "Directories file-system stores named in a run's input may write under (besides TOOL_RESULTS_DIR); "
        "unset: none.",
        "directories separated by os.pathsep (':' on POSIX)",
    )
    s3_buckets: str | None = _setting(
        "AGENT_S3_BUCKETS",
        None,
        "S3 buckets stores named in a run's input may write to (besides TOOL_RESULTS_BUCKET); unset: none.",
        "comma-separated bucket names",
    )
    webhook_urls: str | None = _setting(
        "AGENT_WEBHOOK_URLS",
        None,
        "URL prefixes (scheme, host, port, path) a WebhookNotifier may POST to; unset: none.",
        "comma-separated http(s) URLs",
    )
    # The dev tooling's demo tools
    demo_ledger: str = _setting(
        "DEMO_LEDGER", ".agent-dev/demo-ledger.jsonl", "File the demo tools append their effects to.", "a file path"
    )
    demo_tool_seconds: NonNegativeFloat = _setting(
        "DEMO_TOOL_SECONDS", 1.5, "How long each demo tool call takes.", "a number of seconds >= 0"
    )

    # Encryption at rest (core/codec.py)
    payload_keys: SecretStr | None = _setting(
        "AGENT_PAYLOAD_KEYS",
        None,
        "AES-256-GCM keys of every payload and stored conversation: the first encrypts, all decrypt "
        "(secret; unset: nothing is encrypted).",
        "KEY_ID:BASE64 entries of 32-byte keys, comma-separated",
    )

    @_field_validator("payload_keys")
    @classmethod
    def _payload_keys(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            parse_payload_keys(value.get_secret_value())
        return value

    # Worker Deployment Versioning (DESIGN.md "Deploys"): both set, or neither
    deployment_name: str | None = _setting(
        "AGENT_DEPLOYMENT_NAME",
        None,
        "Worker Deployment a worker is a version of (unset: an unversioned worker); needs AGENT_BUILD_ID.",
        "a name without '.' (e.g. agent)",
    )
    build_id: str | None = _setting(
        "AGENT_BUILD_ID",
        None,
        "Build id of this worker's code within AGENT_DEPLOYMENT_NAME; needs AGENT_DEPLOYMENT_NAME.",
        "any text (e.g. a git commit or image tag)",
    )

    @_field_validator("*", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @_field_validator("conversation_store", "waiting_search_attribute", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @_field_validator("inbox_public_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"https?://[^/\s]+", value):
            raise ValueError("must be an http(s) URL such as https://inbox.example.com")
        return value.rstrip("/") if value is not None else None

    @_field_validator("webhook_urls")
    @classmethod
    def _url_prefixes(cls, value: str | None) -> str | None:
        parse_prefixes(value)  # raises ValueError naming the bad entry
        return value

    @_field_validator("approval_link_secret")
    @classmethod
    def _long_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 32:
            raise ValueError("must have at least 32 characters")
        return value

    @classmethod
    def from_env(cls) -> Settings:
        """The same as :func:`get_settings`."""
        return get_settings()

    def as_environment(self) -> dict[str, str]:
        """The settings that have a value, secrets left out, by variable, as text (``true``/``false``
        for booleans): for code that takes an environment mapping, such as runtime/telemetry.py."""
        return {
            env_name(field): str(value).lower() if isinstance(value, bool) else str(value)
            for field in type(self).model_fields
            if field not in _SECRET_FIELDS and (value := getattr(self, field)) is not None
        }

    def source(self, field: str) -> Literal["environment", "default"]:
        """Where ``field``'s value came from."""
        return "environment" if field in self.model_fields_set else "default"


def env_name(field: str) -> str:
    """The environment variable of the :class:`Settings` field ``field``."""
    return Settings.model_fields[field].validation_alias  # type: ignore[return-value]


def allowed_values(field: str) -> str:
    """In words, the values the :class:`Settings` field ``field`` takes (for errors and docs)."""
    return Settings.model_fields[field].json_schema_extra["allowed"]  # type: ignore[index]


_SECRET_FIELDS = frozenset(
    field for field, info in Settings.model_fields.items() if info.annotation in (SecretStr, SecretStr | None)
)


def _describe_errors(error: ValidationError, variables: dict[str, tuple[str, str, bool]]) -> str:
    """One line per bad variable: its name, the value (masked for secrets), pydantic's reason, what is allowed.

    :param variables: Error location (field or variable name) -> (variable, allowed values, secret).
    """
    lines = []
    for item in error.errors(include_url=False):
        where = str(item["loc"][0]) if item["loc"] else "?"
        variable, allowed, secret = variables.get(where, (where, _TEXT, False))
        value = MASK if secret else repr(item.get("input"))
        lines.append(f"  {variable}={value}: {item['msg']}; allowed: {allowed}.")
    return "Bad configuration in the environment:\n" + "\n".join(lines)


def _settings_variables() -> dict[str, tuple[str, str, bool]]:
    entries = {}
    for field in Settings.model_fields:
        entry = (env_name(field), allowed_values(field), field in _SECRET_FIELDS)
        entries[field] = entries[env_name(field)] = entry
    return entries


class _Snapshot(NamedTuple):
    """The settings read from one state of the environment, and that state."""

    environ: tuple[tuple[str, str], ...]
    settings: Settings


_last: _Snapshot | None = None


def _snapshot() -> _Snapshot:
    """The settings of the current environment: read again when any variable changed since the
    last read (tests and ``DevStack.apply_env`` set variables), else the cached ones. Comparing
    the environment costs some tens of microseconds (one per S3 request, none per model call);
    reading it again about 2 ms."""
    global _last
    if workflow.in_workflow():
        raise RuntimeError(
            "Workflow code must not read settings (a replay on another worker would see another environment); "
            "read them in an activity, the worker or the client."
        )
    environ = tuple(os.environ.items())
    last = _last
    if last is not None and last.environ == environ:
        return last
    try:
        settings = Settings()
    except ValidationError as err:
        raise SettingsError(_describe_errors(err, _settings_variables())) from None
    _check_endpoint_timeouts(dict(environ))
    _last = _Snapshot(environ, settings)
    return _last


_SECONDS = TypeAdapter(PositiveFloat)
_ENDPOINT_TIMEOUT_SUFFIX = "_OPENAI_TIMEOUT_SECONDS"


def _check_endpoint_timeouts(environ: dict[str, str]) -> None:
    """A named endpoint's ``{P}_OPENAI_TIMEOUT_SECONDS`` is checked with the other settings, so a
    bad one is an error at start (core/model_endpoints.py reads the endpoints themselves)."""
    for variable, raw in environ.items():
        if variable.endswith(_ENDPOINT_TIMEOUT_SUFFIX) and variable != _ENDPOINT_TIMEOUT_SUFFIX[1:] and raw.strip():
            try:
                _SECONDS.validate_python(raw.strip())
            except ValidationError as err:
                where = {"?": (variable, "a number of seconds > 0", False)}
                raise SettingsError(_describe_errors(err, where)) from None


def get_settings() -> Settings:
    """This process's settings, read from the environment (again whenever it changed).

    :raises SettingsError: A variable has a value its setting cannot take, or a named endpoint's
        ``{P}_OPENAI_TIMEOUT_SECONDS`` is not a number > 0.
    :raises RuntimeError: Called from workflow code, which must not depend on the environment.
    """
    return _snapshot().settings


def secret_from_environment(name: str) -> SecretStr | None:
    """The value of the environment variable ``name`` as a secret (None when unset or empty): how
    a worker resolves a secret a run names by reference (``WebhookNotifier(secret_env=...)``).

    :raises RuntimeError: Called from workflow code.
    """
    value = dict(_snapshot().environ).get(name, "").strip()
    return SecretStr(value) if value else None


def current_environment() -> tuple[tuple[tuple[str, str], ...], Settings]:
    """The environment the settings were last read from, and those settings (read again when it
    changed): for modules that read more variables of their own from it (core/model_endpoints.py).

    :raises SettingsError: As :func:`get_settings`.
    """
    snapshot = _snapshot()
    return snapshot.environ, snapshot.settings


def describe_errors(error: ValidationError, variables: dict[str, tuple[str, str, bool]]) -> str:
    """A :class:`SettingsError` message for ``error``: each variable, what was wrong, what is allowed.

    :param variables: ``{field: (variable, allowed, secret)}`` of the fields ``error`` may name.
    """
    return _describe_errors(error, variables)
