"""core/settings.py: every setting from the environment, validated, documented, shown by ``agent config``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent.config_command import describe_settings, settings_table
from agent.dev.stack import DevStack
from core.checks import ConfigurationError
from core.model_endpoints import model_endpoint, named_endpoints
from core.settings import (
    DEFAULT_MAX_CACHED_WORKFLOWS,
    MASK,
    Settings,
    SettingsError,
    env_name,
    get_settings,
)

ROOT = Path(__file__).resolve().parents[2]
ENV_NAMES = [env_name(field) for field in Settings.model_fields]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No setting's variable and no named endpoint set, whatever the session's stack applied."""
    for name in list(os.environ):
        if name in ENV_NAMES or re.fullmatch(r"[A-Z0-9_]+_OPENAI_(BASE_URL|API_KEY|TIMEOUT_SECONDS)", name):
            monkeypatch.delenv(name)
    return monkeypatch


def test_every_setting_has_its_default_when_nothing_is_set(clean_env):
    settings = get_settings()
    assert settings.temporal_address == "localhost:7233"
    assert settings.temporal_namespace == "default"
    assert settings.task_queue == "agent"
    assert settings.max_cached_workflows == DEFAULT_MAX_CACHED_WORKFLOWS
    assert settings.openai_api_key is None and settings.tool_results_bucket is None
    assert all(settings.source(field) == "default" for field in Settings.model_fields)


def test_values_come_from_the_ecosystem_names(clean_env):
    clean_env.setenv("TEMPORAL_ADDRESS", "temporal.internal:7233")
    clean_env.setenv("AGENT_MAX_CACHED_WORKFLOWS", " 20 ")  # spaces around a value are ignored
    clean_env.setenv("AGENT_CONVERSATION_STORE", "OFF")
    clean_env.setenv("OTEL_SDK_DISABLED", "true")
    clean_env.setenv("TOOL_RESULTS_BUCKET", "")  # empty counts as unset
    settings = get_settings()
    assert settings.temporal_address == "temporal.internal:7233"
    assert settings.max_cached_workflows == 20
    assert settings.conversation_store == "off"
    assert settings.otel_sdk_disabled is True
    assert settings.tool_results_bucket is None
    assert settings.source("temporal_address") == "environment" and settings.source("task_queue") == "default"


def test_a_changed_environment_is_read_again(clean_env):
    clean_env.setenv("AGENT_TASK_QUEUE", "first")
    first = get_settings()
    assert get_settings() is first  # unchanged environment: the same object
    clean_env.setenv("AGENT_TASK_QUEUE", "second")
    assert get_settings().task_queue == "second"


def test_dev_stack_apply_env_is_seen_and_restore_env_undoes_it(clean_env, tmp_path):
    stack = DevStack(tmp_path, with_ui=False, temporal_port=17999, s3_port=18999)  # not started: env only
    assert get_settings().temporal_address == "localhost:7233"
    previous = stack.apply_env()
    try:
        settings = get_settings()
        assert settings.temporal_address == "127.0.0.1:17999"
        assert settings.aws_endpoint_url_s3 == "http://127.0.0.1:18999"
        assert settings.tool_results_bucket == stack.tool_results_bucket
        assert settings.payloads_bucket == stack.payloads_bucket
    finally:
        DevStack.restore_env(previous)
    assert get_settings().temporal_address == "localhost:7233"
    assert get_settings().tool_results_bucket is None


@pytest.mark.parametrize(
    ("variable", "value", "reason", "allowed"),
    [
        ("AGENT_MAX_CACHED_WORKFLOWS", "abc", "valid integer", "a whole number >= 0"),
        ("AGENT_MAX_CACHED_WORKFLOWS", "-3", "greater than or equal to 0", "a whole number >= 0"),
        ("AGENT_CONVERSATION_STORE", "maybe", "'on' or 'off'", "on or off"),
        ("TEMPORAL_PAYLOAD_THRESHOLD_BYTES", "1.5", "valid integer", "a whole number >= 0"),
        ("OPENAI_TIMEOUT_SECONDS", "0", "greater than 0", "a number of seconds > 0"),
        ("TOOL_RESULTS_SSE", "rot13", "'AES256', 'aws:kms' or 'aws:kms:dsse'", "AES256, aws:kms or aws:kms:dsse"),
        ("OTEL_SDK_DISABLED", "perhaps", "valid boolean", "true or false"),
    ],
)
def test_a_bad_value_names_the_variable_the_value_and_what_is_allowed(clean_env, variable, value, reason, allowed):
    clean_env.setenv(variable, value)
    with pytest.raises(SettingsError) as caught:
        get_settings()
    message = str(caught.value)
    assert f"{variable}={value!r}" in message
    assert reason in message
    assert f"allowed: {allowed}." in message
    assert isinstance(caught.value, ConfigurationError) and isinstance(caught.value, ValueError)


def test_every_bad_variable_is_reported_at_once(clean_env):
    clean_env.setenv("AGENT_MAX_CACHED_WORKFLOWS", "abc")
    clean_env.setenv("AGENT_WAITING_SEARCH_ATTRIBUTE", "sometimes")
    with pytest.raises(SettingsError) as caught:
        get_settings()
    assert "AGENT_MAX_CACHED_WORKFLOWS='abc'" in str(caught.value)
    assert "AGENT_WAITING_SEARCH_ATTRIBUTE='sometimes'" in str(caught.value)


def test_secrets_are_masked_everywhere_they_are_shown(clean_env):
    clean_env.setenv("OPENAI_API_KEY", "sk-very-secret")
    clean_env.setenv("AWS_SECRET_ACCESS_KEY", "aws-very-secret")
    clean_env.setenv("SUMMARY_OPENAI_API_KEY", "sk-summary-secret")
    settings = get_settings()
    assert settings.openai_api_key.get_secret_value() == "sk-very-secret"
    assert "very-secret" not in repr(settings)
    assert "secret" not in json.dumps(settings.as_environment())
    views = {view.env: view for view in describe_settings()}
    assert views["OPENAI_API_KEY"].value == MASK and views["OPENAI_API_KEY"].source == "environment"
    assert views["AWS_SECRET_ACCESS_KEY"].value == MASK
    assert views["SUMMARY_OPENAI_API_KEY"].value == MASK
    assert "very-secret" not in json.dumps([view.model_dump() for view in views.values()])


def test_a_named_endpoint_reads_its_prefixed_variables(clean_env):
    clean_env.setenv("OPENAI_TIMEOUT_SECONDS", "30")
    clean_env.setenv("SUMMARY_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    clean_env.setenv("SUMMARY_OPENAI_API_KEY", "sk-summary")
    clean_env.setenv("LOCAL_LLM_OPENAI_TIMEOUT_SECONDS", "5")
    summary = model_endpoint("SUMMARY")
    assert summary.configured and summary.base_url == "http://127.0.0.1:9/v1"
    assert summary.api_key.get_secret_value() == "sk-summary"
    assert summary.timeout_seconds == 30  # OPENAI_TIMEOUT_SECONDS when its own is unset
    assert not summary.is_set("timeout_seconds") and summary.is_set("base_url")
    local = model_endpoint("LOCAL_LLM")
    assert local.timeout_seconds == 5 and not local.configured  # a timeout alone is no endpoint
    assert not model_endpoint("ABSENT").configured
    assert [endpoint.name for endpoint in named_endpoints()] == ["LOCAL_LLM", "SUMMARY"]
    default = model_endpoint()
    assert default.name is None and default.timeout_seconds == 30 and not default.configured
    with pytest.raises(ValueError, match="upper-case prefix"):
        model_endpoint("summary")


def test_a_named_endpoints_bad_timeout_is_an_error_at_start(clean_env):
    clean_env.setenv("SUMMARY_OPENAI_TIMEOUT_SECONDS", "soon")
    with pytest.raises(
        SettingsError, match=r"SUMMARY_OPENAI_TIMEOUT_SECONDS='soon': .*allowed: a number of seconds > 0"
    ):
        get_settings()


def test_docs_configuration_md_has_the_current_table():
    docs = (ROOT / "docs" / "configuration.md").read_text()
    current = re.search(r"<!-- settings-table:start -->\n(.*?)<!-- settings-table:end -->", docs, re.S)
    assert current is not None, "docs/configuration.md lost its settings-table markers"
    assert current.group(1) == settings_table(), (
        "docs/configuration.md is out of date; replace its table with agent.config_command.settings_table():\n"
        + settings_table()
    )
    for name in ENV_NAMES:
        assert f"| `{name}` |" in docs


def test_every_field_is_documented():
    for field, info in Settings.model_fields.items():
        assert info.description, f"Settings.{field} has no description"
        assert isinstance(info.validation_alias, str) and info.validation_alias.isupper(), field


# Lines outside core/settings.py that touch os.environ, each for a reason other than reading a
# setting: building a child process's environment, or writing variables for children.
ALLOWED_ENVIRON_USES = {
    "agent/dev/command.py": [
        "worker_env = dict(os.environ)",  # agent dev's worker child inherits the environment
        "os.environ.pop(PROMETHEUS_ENV, None)",  # the worker child binds the metrics port, not the parent
        "os.environ[PROMETHEUS_ENV] = worker_env[PROMETHEUS_ENV]",  # put it back when agent dev stops
        "os.environ[KEYS_ENV] = keys",  # --encrypt: the parent's clients and the worker use the same keys
    ],
    "agent/dev/demo.py": ["**os.environ,"],  # the demo worker's environment
    "agent/dev/processes.py": ["{**os.environ,"],  # a child process's environment
    "agent/dev/s3_server.py": ["env = dict(os.environ)"],  # moto's environment
    "agent/dev/temporal_server.py": ["for k, v in os.environ.items() if not k.startswith"],  # the dev server's
    "agent/dev/stack.py": [
        "``os.environ``",  # docstring
        "target = os.environ if environ is None else environ",  # apply_env / restore_env write
        "target = os.environ if environ is None else environ",
    ],
}


def test_core_settings_is_the_only_reader_of_the_environment():
    uses: dict[str, list[str]] = {}
    for package in ("core", "activities", "hooks", "workflows", "runtime", "agent"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative == "core/settings.py":
                continue
            for line in path.read_text().splitlines():
                if "os.environ" in line or "getenv" in line:
                    uses.setdefault(relative, []).append(line.strip())
    unexpected = {
        path: [line for line in lines if not any(allowed in line for allowed in ALLOWED_ENVIRON_USES.get(path, []))]
        for path, lines in uses.items()
    }
    assert {path: lines for path, lines in unexpected.items() if lines} == {}
    for path, allowed in ALLOWED_ENVIRON_USES.items():
        assert len(uses.get(path, [])) == len(allowed), (path, uses.get(path))


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**environ, **env}, capture_output=True, text=True, timeout=120
    )


def test_agent_config_prints_every_setting_with_its_source_and_masks_secrets():
    shown = _run(["-m", "agent.cli", "config"], OPENAI_API_KEY="sk-abc123", AGENT_TASK_QUEUE="q1")
    assert shown.returncode == 0, shown.stderr
    lines = {line.split()[0]: line.split(None, 2)[1:] for line in shown.stdout.splitlines()}
    assert set(ENV_NAMES) <= set(lines)
    assert lines["OPENAI_API_KEY"] == ["environment", MASK]
    assert lines["AGENT_TASK_QUEUE"] == ["environment", "q1"]
    assert lines["TEMPORAL_ADDRESS"] == ["default", "localhost:7233"]
    assert "sk-abc123" not in shown.stdout
    as_json = _run(["-m", "agent.cli", "config", "--json"], OPENAI_API_KEY="sk-abc123")
    assert as_json.returncode == 0, as_json.stderr
    views = {view["env"]: view for view in json.loads(as_json.stdout)}
    assert views["OPENAI_API_KEY"]["value"] == MASK and views["TEMPORAL_NAMESPACE"]["value"] == "default"
    assert views["AGENT_MAX_CACHED_WORKFLOWS"] == {
        "field": "max_cached_workflows",
        "env": "AGENT_MAX_CACHED_WORKFLOWS",
        "value": str(DEFAULT_MAX_CACHED_WORKFLOWS),
        "source": "default",
        "description": Settings.model_fields["max_cached_workflows"].description,
    }


@pytest.mark.parametrize("command", [["config"], ["runs"], ["status", "some-run"]])
def test_agent_commands_print_a_bad_setting_and_exit_non_zero(command):
    failed = _run(["-m", "agent.cli", *command], AGENT_MAX_CACHED_WORKFLOWS="abc")
    assert failed.returncode != 0
    assert "AGENT_MAX_CACHED_WORKFLOWS='abc'" in failed.stderr and "allowed: a whole number >= 0" in failed.stderr
    assert "Traceback" not in failed.stderr


def test_a_worker_refuses_to_start_with_a_bad_setting():
    failed = _run(["worker.py"], AGENT_CONVERSATION_STORE="maybe", TEMPORAL_ADDRESS="127.0.0.1:1")
    assert failed.returncode != 0
    assert "worker: Bad configuration in the environment" in failed.stderr
    assert "AGENT_CONVERSATION_STORE='maybe'" in failed.stderr and "allowed: on or off" in failed.stderr
    assert "worker ready" not in failed.stdout and "Traceback" not in failed.stderr
