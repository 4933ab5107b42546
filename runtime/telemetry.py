"""Tracing and metrics switches for ``AgentPlugin``: OpenTelemetry tracing through
``temporalio.contrib.opentelemetry``, and Temporal's SDK metrics on a Prometheus endpoint.

Tracing is on when ``AgentPlugin(tracing=True)`` says so, or, with ``tracing`` left unset, when
the standard OpenTelemetry environment asks for traces: ``OTEL_TRACES_EXPORTER`` is set and not
``none``, and ``OTEL_SDK_DISABLED`` is not ``true``. Then the plugin adds temporalio's
``OpenTelemetryInterceptor`` (with its Temporal spans: ``StartWorkflow``, ``RunWorkflow``,
``StartActivity``, ``RunActivity``, ...) to the client, the worker and the replayer, and the run
loop adds its own spans (``workflows/spans.py``). The interceptor needs the global TracerProvider to
be a replay-safe one (``temporalio.contrib.opentelemetry.create_tracer_provider``): if none is set,
one is built from the environment (``OTEL_TRACES_EXPORTER=otlp`` and/or ``console``; the OTLP
exporter reads its own ``OTEL_EXPORTER_OTLP_*`` settings, the resource ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES``).

Metrics: ``AgentPlugin(prometheus_bind="127.0.0.1:9464")`` or ``AGENT_PROMETHEUS_BIND`` gives the
client (and so every worker built on it) a ``temporalio.runtime.Runtime`` that serves the SDK's
metrics at ``http://<bind>/metrics``; one Runtime per address per process.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from core.checks import ConfigurationError
from core.settings import env_name, get_settings

try:  # the [otel] extra
    from opentelemetry import trace as otel_trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    from temporalio.contrib.opentelemetry import (
        OpenTelemetryInterceptor,
        ReplaySafeTracerProvider,
        TracingInterceptor,
        create_tracer_provider,
    )
except ImportError:
    otel_trace = None

INSTALL_HINT = "pip install 'durable-agent[otel]'"
PROMETHEUS_ENV = env_name("prometheus_bind")

#: OTLP exporters by ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL`` (the spec's default is http/protobuf).
_OTLP_EXPORTERS = {
    "http/protobuf": (
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        "opentelemetry-exporter-otlp-proto-http",
    ),
    "grpc": ("opentelemetry.exporter.otlp.proto.grpc.trace_exporter", "opentelemetry-exporter-otlp-proto-grpc"),
}


def tracing_requested(explicit: bool | None = None, env: Mapping[str, str] | None = None) -> bool:
    """Whether tracing is on: ``explicit`` when given, else the OpenTelemetry environment.

    :param explicit: ``AgentPlugin(tracing=...)``; None defers to ``env``.
    :param env: The environment (default: the settings, ``core.settings.get_settings``).
    """
    if explicit is not None:
        return explicit
    env = get_settings().as_environment() if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = _exporter_names(env)
    return bool(exporters) and exporters != ["none"]


def _exporter_names(env: Mapping[str, str]) -> list[str]:
    return [name.strip() for name in env.get("OTEL_TRACES_EXPORTER", "").lower().split(",") if name.strip()]


def otel_installed() -> bool:
    """Whether the ``[otel]`` extra (opentelemetry-api and -sdk) is importable."""
    return otel_trace is not None


def tracing_interceptor(explicit: bool | None = None, env: Mapping[str, str] | None = None) -> Any | None:
    """The interceptor ``AgentPlugin`` adds when tracing is on (see :func:`tracing_requested`),
    after making sure a replay-safe global TracerProvider exists; None when tracing is off.

    :raises ConfigurationError: Tracing is on but opentelemetry is not installed, the global
        TracerProvider is not replay-safe, or the environment names an exporter that cannot be set up.
    """
    env = get_settings().as_environment() if env is None else env
    if not tracing_requested(explicit, env):
        return None
    if not otel_installed():
        why = "AgentPlugin(tracing=True)" if explicit else f"OTEL_TRACES_EXPORTER={env.get('OTEL_TRACES_EXPORTER')}"
        raise ConfigurationError(
            f"Tracing is on ({why}) but OpenTelemetry is not installed. Install it with: {INSTALL_HINT} "
            "(or turn tracing off: unset OTEL_TRACES_EXPORTER, or AgentPlugin(tracing=False))."
        )
    ensure_tracer_provider(env)
    # add_temporal_spans: the workflow, activity, signal, update and query spans. The run loop's
    # spans (workflows/spans.py) nest under the workflow's, and only exist when it does.
    return OpenTelemetryInterceptor(add_temporal_spans=True)


def has_tracing_interceptor(interceptors: Sequence[Any] | None) -> bool:
    """Whether ``interceptors`` already trace (ours from another AgentPlugin, or the user's own)."""
    if not otel_installed():
        return False
    return any(isinstance(i, OpenTelemetryInterceptor | TracingInterceptor) for i in interceptors or ())


def ensure_tracer_provider(env: Mapping[str, str] | None = None) -> Any:
    """The global replay-safe TracerProvider, built from ``env`` and installed if none is set.

    :raises ConfigurationError: Another kind of TracerProvider is installed (its spans would be
        duplicated on replay), or an exporter in ``OTEL_TRACES_EXPORTER`` cannot be set up.
    """
    provider = otel_trace.get_tracer_provider()
    if isinstance(provider, ReplaySafeTracerProvider):
        return provider
    if not isinstance(provider, otel_trace.ProxyTracerProvider):
        raise ConfigurationError(
            f"Tracing needs a replay-safe global TracerProvider, but {type(provider).__name__} is installed. "
            "Build it with temporalio.contrib.opentelemetry.create_tracer_provider() (it takes the same "
            "sampler, resource and span processors), or let AgentPlugin build one from OTEL_* settings."
        )
    provider = provider_from_env(get_settings().as_environment() if env is None else env)
    otel_trace.set_tracer_provider(provider)
    return provider


def provider_from_env(env: Mapping[str, str]) -> Any:
    """A replay-safe TracerProvider exporting to each of ``OTEL_TRACES_EXPORTER``'s exporters
    (default ``otlp``, as in the OpenTelemetry SDK), batched.

    :raises ConfigurationError: An exporter name other than ``otlp``, ``console`` or ``none``, or
        the OTLP exporter's package is not installed.
    """
    provider = create_tracer_provider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    for name in _exporter_names(env) or ["otlp"]:
        if name != "none":
            provider.add_span_processor(BatchSpanProcessor(span_exporter(name, env)))
    return provider


def span_exporter(name: str, env: Mapping[str, str]) -> SpanExporter:
    """The span exporter that ``OTEL_TRACES_EXPORTER`` names.

    :raises ConfigurationError: An unknown name or protocol, or a missing OTLP exporter package.
    """
    if name == "console":
        return ConsoleSpanExporter()
    if name != "otlp":
        raise ConfigurationError(
            f"OTEL_TRACES_EXPORTER names {name!r}, which this project does not set up: use otlp, console or "
            "none, or install your own provider built with temporalio.contrib.opentelemetry.create_tracer_provider()."
        )
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    )
    if protocol not in _OTLP_EXPORTERS:
        raise ConfigurationError(f"OTLP protocol {protocol!r} is not supported: use http/protobuf or grpc.")
    module, package = _OTLP_EXPORTERS[protocol]
    try:
        exporter_module = importlib.import_module(module)
    except ImportError as err:
        raise ConfigurationError(
            f"OTEL_TRACES_EXPORTER=otlp ({protocol}) needs {package}: {INSTALL_HINT}"
            + (" (it brings the http/protobuf one)" if protocol == "http/protobuf" else f" and pip install {package}")
        ) from err
    return exporter_module.OTLPSpanExporter()  # reads OTEL_EXPORTER_OTLP_* itself


# -- metrics ---------------------------------------------------------------------------------

_RUNTIMES: dict[str, Runtime] = {}


def prometheus_bind_address(explicit: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The Prometheus endpoint's ``host:port``: ``explicit`` when given ("" turns it off), else
    ``AGENT_PROMETHEUS_BIND``; None when off.

    :raises ValueError: The address is not ``host:port`` with a port number.
    """
    env = get_settings().as_environment() if env is None else env
    bind = (explicit if explicit is not None else env.get(PROMETHEUS_ENV, "")).strip()
    if not bind:
        return None
    host, sep, port = bind.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        source = "prometheus_bind" if explicit is not None else PROMETHEUS_ENV
        raise ValueError(f"{source}={bind!r} is not host:port (for example 127.0.0.1:9464).")
    return bind


def prometheus_runtime(bind: str) -> Runtime:
    """The process's Runtime serving SDK metrics at ``http://<bind>/metrics`` (made once per address).

    :raises ConfigurationError: The address cannot be bound (in use, or not a local address).
    """
    if bind not in _RUNTIMES:
        try:
            _RUNTIMES[bind] = Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=bind)))
        except Exception as err:  # the Rust core's error type: report it with the address
            raise ConfigurationError(f"Cannot serve Prometheus metrics on {bind}: {err}") from err
    return _RUNTIMES[bind]
