"""The agent worker: ``python worker.py`` (the entry point at the repository root) runs one with
the demo tools, or with yours (``--tools module:attr``).

``create_worker(client, tools=[...], task_queue=...)`` builds a temporalio ``Worker`` for agent
runs. ``AgentPlugin`` (``runtime/plugin.py``) supplies the workflow, the activities and the
warm-ups; this module adds the tools and the worker options tuned for crash recovery.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from activities.mcp import MCPActivities
from activities.model import ModelActivities
from activities.tool_invocation import ToolActivities
from core.mcp import MCPServerError, MCPToolset, split_mcp
from core.settings import DEFAULT_MAX_CACHED_WORKFLOWS as DEFAULT_MAX_CACHED_WORKFLOWS
from core.settings import ConfigurationError, env_name, get_settings
from core.spec import AgentSpec
from core.tools import Tool
from core.trust import trust_modules
from runtime.deployment import deployment_config, pinned_by_default
from runtime.mcp_servers import MCPServers, MCPServersPlugin
from runtime.model_queue import ModelQueuePlugin
from runtime.plugin import AgentPlugin, connect
from runtime.replay import ReplayProbeActivities
from runtime.signals import stop_requested
from runtime.tool_loading import ToolSpecError, load_tools
from workflows.replay_probe import ReplayProbeWorkflow

#: Crash recovery: a workflow task stuck on a dead worker's sticky queue moves to the shared
#: queue after this long (Temporal's default is 5 s). Activity heartbeats (3 s timeout, sent
#: every second) cover in-flight model and tool calls; see activities/heartbeat.py.
STICKY_SCHEDULE_TO_START = timedelta(seconds=1)
HEARTBEAT_THROTTLE = timedelta(seconds=1)

#: The variable that sizes the workflow cache (``DEFAULT_MAX_CACHED_WORKFLOWS`` in core/settings.py
#: says why 500); ``create_worker(max_cached_workflows=...)`` overrides it.
MAX_CACHED_WORKFLOWS_ENV = env_name("max_cached_workflows")

#: The demo's tools, which ``python worker.py`` runs unless ``--tools`` names others.
DEFAULT_TOOLS = "agent.dev.demo_tools:DEMO_TOOLS"


def has_plugin(client: Client) -> bool:
    """Whether ``client`` already carries an :class:`AgentPlugin` (then its workers get it too)."""
    return any(isinstance(p, AgentPlugin) for p in client.config().get("plugins", []))


def max_cached_workflows() -> int:
    """The workflow cache size: ``AGENT_MAX_CACHED_WORKFLOWS``, else :data:`DEFAULT_MAX_CACHED_WORKFLOWS`.

    :raises core.settings.SettingsError: (a ValueError) When the variable is not a whole number of
        at least 0 (0 disables the cache: every workflow task replays the run's history).
    """
    return get_settings().max_cached_workflows


def create_worker(
    client: Client,
    tools: list[Tool | MCPToolset],
    task_queue: str | None = None,
    model_activities: ModelActivities | None = None,
    extra_workflows: list[type] | None = None,
    extra_activities: list[Any] | None = None,
    *,
    agents: Sequence[AgentSpec] = (),
    trusted_modules: Sequence[str] = (),
    deployment_name: str | None = None,
    build_id: str | None = None,
    **worker_options: Any,
) -> Worker:
    """Build a worker for agent runs.

    :param client: A client from :func:`agent.connect` (it must carry the project's converter).
    :param tools: The tool functions (``@tool``) this worker can run, and the MCP toolsets
        (``MCPToolset``/``MCPTool``) whose servers it starts or reaches when it starts and stops when it
        shuts down (``runtime/mcp_servers.py``).
    :param task_queue: Defaults to ``AGENT_TASK_QUEUE`` (``agent``).
    :param model_activities: A custom model client holder; by default one from ``OPENAI_*``.
    :param extra_workflows: Other workflow classes to run on the same worker.
    :param extra_activities: Other activities for the same worker (e.g. the ones your hooks await).
    :param agents: Agents this worker serves: the modules their hooks, policies, stores, functions and
        state types come from are trusted when a run's input names them (``core/trust.py``; the tools'
        own modules always are).
    :param trusted_modules: More module prefixes a run's input may name (as ``AGENT_TRUSTED_MODULES``).
    :param deployment_name: Make the worker build ``build_id`` of this Worker Deployment (Temporal's
        Worker Versioning; runs are pinned to the build they start on, DESIGN.md "Deploys"). Both or
        neither; neither reads ``AGENT_DEPLOYMENT_NAME`` and ``AGENT_BUILD_ID``, and without those
        the worker is unversioned. A ``deployment_config`` in ``worker_options`` wins (its workflows
        are pinned unless it names another default behaviour).
    :param build_id: This worker's build id (see ``deployment_name``).
    :param worker_options: Passed to ``temporalio.worker.Worker`` (override the tuned defaults,
        e.g. ``max_cached_workflows``, by default :func:`max_cached_workflows`).
    :raises ValueError: On duplicate tool names or a non-``Tool`` in ``tools``, or a malformed
        ``AGENT_MAX_CACHED_WORKFLOWS``, or two MCP toolsets naming one server with different settings.
    :raises core.settings.ConfigurationError: ``AGENT_MODEL_CALLS_PER_SECOND`` without
        ``AGENT_MODEL_TASK_QUEUE`` (model calls are rate-limited on their own queue: runtime/model_queue.py).
        A server that cannot start or list its tools raises ``core.mcp.MCPServerError`` from
        ``async with worker`` (or ``worker.run()``), naming its command or URL.
    :raises core.settings.ConfigurationError: For a deployment name without a build id, or the reverse.
    """
    if "deployment_config" not in worker_options:
        worker_options["deployment_config"] = deployment_config(deployment_name, build_id)
    else:
        worker_options["deployment_config"] = pinned_by_default(worker_options["deployment_config"])
    version = worker_options["deployment_config"].version if worker_options["deployment_config"] else None
    tools, toolsets = split_mcp(tools)
    trust_modules([*trusted_modules, *(t.function.__module__ for t in tools)])
    for served in agents:
        trust_modules(served.served_modules())
    probe = ReplayProbeActivities(version.build_id if version else None)  # for `agent deploy move`
    activities: list[Any] = [ToolActivities(tools).invoke_tool, probe.replay_history, *(extra_activities or [])]
    plugins: list[Any] = [] if has_plugin(client) else [AgentPlugin()]
    if toolsets:
        servers = MCPServers(toolsets)
        mcp = MCPActivities(servers)
        activities += [mcp.list_mcp_tools, mcp.call_mcp_tool]
        plugins.append(MCPServersPlugin(servers))
    if model_activities is not None:
        activities.append(model_activities.chat_completion)
    settings = get_settings()
    if settings.model_calls_per_second is not None and not settings.model_task_queue:
        raise ConfigurationError(
            "AGENT_MODEL_CALLS_PER_SECOND limits the model task queue: set AGENT_MODEL_TASK_QUEUE too (the same "
            "on every worker), or unset AGENT_MODEL_CALLS_PER_SECOND."
        )
    if settings.model_task_queue:
        plugins.append(model_queue_plugin(settings.model_task_queue, settings.model_calls_per_second, model_activities))
    options: dict[str, Any] = {
        "sticky_queue_schedule_to_start_timeout": STICKY_SCHEDULE_TO_START,
        "max_heartbeat_throttle_interval": HEARTBEAT_THROTTLE,
        "default_heartbeat_throttle_interval": HEARTBEAT_THROTTLE,
        "graceful_shutdown_timeout": timedelta(seconds=5),
        "max_concurrent_activities": 64,
    }
    if "max_cached_workflows" not in worker_options:
        options["max_cached_workflows"] = max_cached_workflows()
    options.update(worker_options)
    return Worker(
        client,
        task_queue=task_queue or get_settings().task_queue,
        workflows=[ReplayProbeWorkflow, *(extra_workflows or [])],
        activities=activities,
        plugins=plugins,
        **options,
    )


def model_queue_plugin(
    task_queue: str, calls_per_second: float | None, model_activities: ModelActivities | None
) -> ModelQueuePlugin:
    """The plugin that moves model calls to ``task_queue`` and polls it (``runtime/model_queue.py``)."""
    model = model_activities or ModelActivities()

    def companion(client: Client, queue_options: dict[str, Any]) -> Worker:
        return Worker(
            client,
            activities=[model.chat_completion],
            plugins=[] if has_plugin(client) else [AgentPlugin(model_activities=model)],
            max_concurrent_activities=64,
            graceful_shutdown_timeout=timedelta(seconds=5),
            **queue_options,
        )

    return ModelQueuePlugin(task_queue, calls_per_second, companion)


#: How often ``run_worker`` looks whether the worker has started polling.
READY_POLL_SECONDS = 0.02


async def run_worker(
    client: Client,
    tools: list[Tool | MCPToolset],
    task_queue: str | None = None,
    deployment_name: str | None = None,
    build_id: str | None = None,
) -> None:
    """Run a worker until SIGINT/SIGTERM (``deployment_name``/``build_id`` as :func:`create_worker`)."""
    worker = create_worker(
        client, tools=tools, task_queue=task_queue, deployment_name=deployment_name, build_id=build_id
    )
    stop = stop_requested()
    async with worker:
        # `async with` returns before the plugins have run (MCP servers start there): ready means polling.
        while not worker.is_running:
            await asyncio.sleep(READY_POLL_SECONDS)
        config = worker.config().get("deployment_config")
        version = (
            f" as build {config.version.build_id!r} of deployment {config.version.deployment_name!r}" if config else ""
        )
        logging.getLogger(__name__).info("worker polling task queue %r%s", worker.task_queue, version)
        print(f"worker ready {os.getpid()}", flush=True)  # for supervisors and tests waiting on start-up
        await stop.wait()


async def _connect_and_run(tools: list[Tool | MCPToolset], args: argparse.Namespace) -> None:
    await run_worker(await connect(), tools, args.task_queue, args.deployment_name, args.build_id)


def build_parser() -> argparse.ArgumentParser:
    """``python worker.py``'s options."""
    parser = argparse.ArgumentParser(
        prog="python worker.py",
        description="Run an agent worker (Temporal address etc. from TEMPORAL_* env vars).",
    )
    parser.add_argument(
        "--tools",
        action="append",
        metavar="MODULE:ATTR",
        help="your tools by import path, as `agent run --agent`: a list of @tool functions (and MCPToolsets), a "
        "Toolset, an MCPToolset, or an agent.Agent whose tools and MCP servers are served (e.g. myapp.tools:TOOLS or myapp.agents:support); modules are "
        "found in the current directory; repeatable. Default: the demo's two tools",
    )
    parser.add_argument("--task-queue", help="task queue to poll (default: $AGENT_TASK_QUEUE or agent)")
    parser.add_argument(
        "--deployment-name",
        metavar="NAME",
        help="make this worker a version of Worker Deployment NAME (Temporal Worker Versioning: runs stay on the "
        "build they started on); needs --build-id (default: $AGENT_DEPLOYMENT_NAME; neither: unversioned)",
    )
    parser.add_argument(
        "--build-id", metavar="ID", help="this worker's build id within --deployment-name (default: $AGENT_BUILD_ID)"
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    """``python worker.py``: a bad ``--tools`` spec exits with status 2 and says what was not found.

    :param argv: The arguments (``sys.argv[1:]`` when ``None``).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        tools = load_tools(args.tools or [DEFAULT_TOOLS])
    except ToolSpecError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    try:  # a bad setting stops the worker before it connects, with the variable named
        get_settings()
        deployment_config(args.deployment_name, args.build_id)
    except ConfigurationError as exc:
        sys.exit(f"worker: {exc}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(_connect_and_run(tools, args))
    except MCPServerError as exc:  # a server of --tools that cannot start: named, no traceback
        sys.exit(f"worker: {exc}")


if __name__ == "__main__":
    main()
