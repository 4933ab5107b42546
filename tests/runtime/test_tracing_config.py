"""When tracing and the Prometheus endpoint turn on, and what a bad setting says (runtime/telemetry.py).

OpenTelemetry's global TracerProvider can be set once per process, so the checks that set it (or
that need opentelemetry missing) run in a subprocess of their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import ConsoleSpanExporter

from core.checks import ConfigurationError
from runtime.telemetry import INSTALL_HINT, prometheus_bind_address, span_exporter, tracing_requested

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("env", "on"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "agents"}, False),
        ({"OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_TRACES_EXPORTER": " "}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "console,otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "false"}, True),
    ],
)
def test_the_otel_environment_turns_tracing_on(env, on):
    assert tracing_requested(None, env) is on


def test_the_explicit_argument_overrides_the_environment():
    assert tracing_requested(True, {}) is True
    assert tracing_requested(False, {"OTEL_TRACES_EXPORTER": "otlp"}) is False


def test_exporters_by_name():
    assert isinstance(span_exporter("console", {}), ConsoleSpanExporter)
    otlp = span_exporter("otlp", {})  # the [otel] extra brings the http/protobuf exporter
    assert type(otlp).__module__ == "opentelemetry.exporter.otlp.proto.http.trace_exporter"
    with pytest.raises(ConfigurationError, match="'zipkin', which this project does not set up"):
        span_exporter("zipkin", {})
    with pytest.raises(ConfigurationError, match="OTLP protocol 'http/json' is not supported"):
        span_exporter("otlp", {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"})


def test_prometheus_bind_address():
    assert prometheus_bind_address(None, {}) is None
    assert prometheus_bind_address(None, {"AGENT_PROMETHEUS_BIND": "127.0.0.1:9464"}) == "127.0.0.1:9464"
    assert prometheus_bind_address("", {"AGENT_PROMETHEUS_BIND": "127.0.0.1:9464"}) is None  # "" turns it off
    assert prometheus_bind_address("[::1]:9000", {}) == "[::1]:9000"
    for bad in ("9464", "127.0.0.1:", ":9464", "localhost:http", "127.0.0.1:70000"):
        with pytest.raises(ValueError, match="is not host:port"):
            prometheus_bind_address(bad, {})
    with pytest.raises(ValueError, match="AGENT_PROMETHEUS_BIND='9464'"):
        prometheus_bind_address(None, {"AGENT_PROMETHEUS_BIND": "9464"})


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "AGENT_PROMETHEUS"))}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_without_opentelemetry_the_base_install_works_and_asking_for_tracing_says_what_to_install():
    run = run_python(
        """
        import os
        import sys
        sys.modules["opentelemetry"] = None  # as if the [otel] extra were not installed
        from core.checks import ConfigurationError
        from workflows import spans
        from runtime.plugin import AgentPlugin
        from runtime.telemetry import otel_installed

        assert not otel_installed() and not spans.active()
        AgentPlugin()  # no OTEL_* environment: tracing off, nothing to install
        AgentPlugin(tracing=False)
        try:
            AgentPlugin(tracing=True)
        except ConfigurationError as err:
            print("explicit:", err)
        os.environ["OTEL_TRACES_EXPORTER"] = "otlp"
        try:
            AgentPlugin()
        except ConfigurationError as err:
            print("env:", err)
        AgentPlugin(tracing=False)  # the argument still wins
        """
    )
    assert run.returncode == 0, run.stderr
    explicit, env = run.stdout.strip().splitlines()
    assert explicit.startswith("explicit: Tracing is on (AgentPlugin(tracing=True)) but OpenTelemetry is not installed")
    assert env.startswith("env: Tracing is on (OTEL_TRACES_EXPORTER=otlp)")
    assert INSTALL_HINT in explicit and INSTALL_HINT in env


def test_a_provider_is_built_from_the_environment_and_one_interceptor_is_added():
    run = run_python(
        """
        from opentelemetry import trace
        from temporalio.contrib.opentelemetry import OpenTelemetryInterceptor, ReplaySafeTracerProvider
        from runtime.plugin import AgentPlugin

        plugin = AgentPlugin()  # OTEL_TRACES_EXPORTER=console below
        provider = trace.get_tracer_provider()
        assert isinstance(provider, ReplaySafeTracerProvider), provider
        print(provider._tracer_provider.resource.attributes["service.name"])
        config = plugin.configure_client({"interceptors": []})
        config = AgentPlugin(tracing=True).configure_client(config)  # a second plugin adds no second one
        print(sum(isinstance(i, OpenTelemetryInterceptor) for i in config["interceptors"]))
        print(AgentPlugin(tracing=False).configure_client({"interceptors": []})["interceptors"])
        """,
        OTEL_TRACES_EXPORTER="console",
        OTEL_SERVICE_NAME="agents-test",
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["agents-test", "1", "[]"]


def test_a_provider_that_is_not_replay_safe_is_refused():
    run = run_python(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from core.checks import ConfigurationError
        from runtime.plugin import AgentPlugin

        trace.set_tracer_provider(TracerProvider())
        try:
            AgentPlugin(tracing=True)
        except ConfigurationError as err:
            print(err)
        """
    )
    assert run.returncode == 0, run.stderr
    assert "needs a replay-safe global TracerProvider, but TracerProvider is installed" in run.stdout
    assert "create_tracer_provider()" in run.stdout


def test_a_missing_otlp_exporter_names_the_package():
    run = run_python(
        """
        import sys
        sys.modules["opentelemetry.exporter.otlp.proto.grpc"] = None
        from core.checks import ConfigurationError
        from runtime.plugin import AgentPlugin
        try:
            AgentPlugin()
        except ConfigurationError as err:
            print(err)
        """,
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
    )
    assert run.returncode == 0, run.stderr
    assert "needs opentelemetry-exporter-otlp-proto-grpc" in run.stdout
