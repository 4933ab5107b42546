"""``AgentPlugin``: a temporalio Plugin that gives a client, worker or replayer this project's
data converter and workflow sandbox settings, and gives a worker ``AgentWorkflow`` with every
activity it needs (as pydantic-ai's ``PydanticAIPlugin`` and the OpenAI Agents integration do).

What a worker gets:

- ``AgentWorkflow``, the model activity (``chat_completion``) and the store write the hook
  families share (``store_tool_result``, ``activities/result_store.py``);
- each hook family's activities (``HookFamily.activities``), collected from ``hooks.family``;
- the tool activity (``invoke_tool``) when the plugin is given tools;
- each family's warm-up, run once per process before the worker polls;
- the limits of the side effects a run's input may ask for, read from the settings when a worker
  or replayer is configured (``core/side_effects.py``);
- with tracing on, temporalio's OpenTelemetry interceptor (client, worker and replayer), and with a
  Prometheus address, a Runtime serving the SDK's metrics (``runtime/telemetry.py``).

A client from :func:`agent.connect` carries an ``AgentPlugin`` (without tools); a worker built
on it gets everything but the tools, which ``create_worker`` adds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from temporalio.client import Client, ClientConfig
from temporalio.plugin import SimplePlugin
from temporalio.service import ConnectConfig, ServiceClient
from temporalio.worker import ReplayerConfig, Worker, WorkerConfig

from activities.model import ModelActivities
from activities.result_store import store_tool_result
from activities.tool_invocation import ToolActivities
from core.checks import check_bucket
from core.converter import agent_data_converter
from core.s3 import payloads_bucket
from core.settings import get_settings
from core.side_effects import use_worker_limits
from core.tools import Tool
from core.trust import trust_configured_modules, trust_modules
from core.wire import CHAT_COMPLETION_ACTIVITY
from hooks.family import check_families, family_activities, warm_up_families
from runtime.sandbox import workflow_runner
from runtime.telemetry import has_tracing_interceptor, prometheus_bind_address, prometheus_runtime, tracing_interceptor
from runtime.worker_start import release_shutdown_waiters
from workflows.agent_workflow import AgentWorkflow


def _activity_name(activity: Callable[..., Any]) -> str | None:
    definition = getattr(activity, "__temporal_activity_definition", None)
    return getattr(definition, "name", None)


class AgentPlugin(SimplePlugin):
    """Data converter, sandbox settings, ``AgentWorkflow`` and its activities.

    :param tools: Tool functions (``@tool``) the worker runs; without them no ``invoke_tool``
        activity is registered (``create_worker`` passes the tools).
    :param model_activities: The model client holder; by default one from ``OPENAI_*``.
    :param tracing: OpenTelemetry tracing on or off; None (default) follows the ``OTEL_*``
        environment (on when ``OTEL_TRACES_EXPORTER`` is set and not ``none``). See runtime/telemetry.py.
    :param prometheus_bind: ``host:port`` serving Temporal's SDK metrics at ``/metrics`` for clients
        this plugin connects (and their workers); None (default) reads ``AGENT_PROMETHEUS_BIND``, ""
        turns it off.
    :raises ValueError: On duplicate tool names or a non-``Tool`` in ``tools``, or a malformed
        ``prometheus_bind``.
    :raises core.checks.ConfigurationError: Tracing is on but OpenTelemetry (the ``[otel]`` extra)
        is not installed, or cannot be set up from the environment.
    """

    def __init__(
        self,
        tools: Sequence[Tool] | None = None,
        model_activities: ModelActivities | None = None,
        *,
        tracing: bool | None = None,
        prometheus_bind: str | None = None,
    ) -> None:
        self._tool_activities = ToolActivities(list(tools)) if tools is not None else None
        # What this process may rebuild from a run's input: AGENT_TRUSTED_MODULES, and the tools' modules.
        trust_configured_modules(get_settings().trusted_modules)
        trust_modules(t.function.__module__ for t in tools or ())
        self._model_activities = model_activities
        self._tracing_interceptor = tracing_interceptor(tracing)
        self._prometheus_bind = prometheus_bind_address(prometheus_bind)
        super().__init__(
            "durable-agent.AgentPlugin",
            data_converter=agent_data_converter(),
            workflow_runner=workflow_runner(),
            workflows=self._add_workflow,
            activities=self._add_activities,
            run_context=self._warm_up,
        )

    # -- tracing and metrics (runtime/telemetry.py): one tracing interceptor per client and worker,
    # however many AgentPlugins (the client's, the worker's) or user interceptors are around.

    def configure_client(self, config: ClientConfig) -> ClientConfig:
        config = super().configure_client(config)
        if self._tracing_interceptor is not None and not has_tracing_interceptor(config.get("interceptors")):
            config["interceptors"] = [*config.get("interceptors", []), self._tracing_interceptor]
        return config

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        config = super().configure_worker(config)
        use_worker_limits()  # where runs may write and send (core/side_effects.py), read once per worker
        client_interceptors = config["client"].config(active_config=True).get("interceptors", [])
        present = [*client_interceptors, *config.get("interceptors", [])]
        if self._tracing_interceptor is not None and not has_tracing_interceptor(present):
            config["interceptors"] = [*config.get("interceptors", []), self._tracing_interceptor]
        return config

    def configure_replayer(self, config: ReplayerConfig) -> ReplayerConfig:
        config = super().configure_replayer(config)
        use_worker_limits()  # a replay is checked as the worker checked the run
        if self._tracing_interceptor is not None and not has_tracing_interceptor(config.get("interceptors")):
            config["interceptors"] = [*config.get("interceptors", []), self._tracing_interceptor]
        return config

    async def connect_service_client(self, config: ConnectConfig, next: Any) -> ServiceClient:
        if self._prometheus_bind is not None and config.runtime is None:
            config.runtime = prometheus_runtime(self._prometheus_bind)
        return await super().connect_service_client(config, next)

    @staticmethod
    def _add_workflow(workflows: Sequence[type] | None) -> list[type]:
        existing = list(workflows or [])
        return existing if AgentWorkflow in existing else [*existing, AgentWorkflow]

    def _add_activities(self, activities: Sequence[Callable[..., Any]] | None) -> list[Callable[..., Any]]:
        """Append the agent's activities, skipping names the worker already registers (another
        AgentPlugin, e.g. the client's, or the caller's own)."""
        out = list(activities or [])
        names = {_activity_name(a) for a in out}
        wanted: list[Callable[..., Any]] = []
        if self._tool_activities is not None:
            wanted.append(self._tool_activities.invoke_tool)
        model = self._model_activities
        if model is None and CHAT_COMPLETION_ACTIVITY not in names:
            model = self._model_activities = ModelActivities()
        if model is not None:
            wanted.append(model.chat_completion)
        wanted.append(store_tool_result)
        wanted.extend(family_activities())
        for activity in wanted:
            if _activity_name(activity) not in names:
                out.append(activity)
                names.add(_activity_name(activity))
        return out

    @staticmethod
    @asynccontextmanager
    async def _warm_up() -> AsyncIterator[None]:
        warm_up_families()
        yield

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        """Check the set-up runs rely on, then run the worker (a failed check stops it at once,
        and ``async with worker`` raises it).

        :raises core.checks.ConfigurationError: A missing search attribute or bucket, or an
            unreachable S3 endpoint, with the fix in the message.
        """
        try:
            await check_worker_configuration(worker.client)
        except BaseException:
            release_shutdown_waiters(worker)
            raise
        await super().run_worker(worker, next)


async def check_worker_configuration(client: Client) -> None:
    """What a worker checks before it polls: the payloads bucket, then each family's needs.

    :raises core.checks.ConfigurationError: From the first check that fails.
    """
    if (bucket := payloads_bucket()) is not None:
        await check_bucket(
            bucket, "TEMPORAL_PAYLOADS_BUCKET" if get_settings().payloads_bucket else "TOOL_RESULTS_BUCKET"
        )
    await check_families(client)


async def connect(address: str | None = None, namespace: str | None = None) -> Client:
    """A Temporal client with this project's data converter.

    Same as ``Client.connect(address, plugins=[AgentPlugin()])``.

    :param address: Defaults to ``TEMPORAL_ADDRESS`` (``localhost:7233``).
    :param namespace: Defaults to ``TEMPORAL_NAMESPACE`` (``default``).
    """
    settings = get_settings()
    return await Client.connect(
        address or settings.temporal_address,
        namespace=namespace or settings.temporal_namespace,
        plugins=[AgentPlugin()],
    )
