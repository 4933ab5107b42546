"""The agent worker: ``python worker.py`` runs one with the demo tools.

``create_worker(client, tools=[...], task_queue=...)`` builds a temporalio ``Worker`` that runs
``AgentWorkflow``, the model activity, one activity per tool call, and the store activities.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from activities.model import ModelActivities
from activities.notifications import NOTIFICATION_ACTIVITIES
from activities.tool_results import TOOL_RESULT_ACTIVITIES
from activities.tools import ToolActivities
from agent.plugin import AgentPlugin
from agent.settings import Settings
from agent.tools import Tool
from workflows.agent_workflow import AgentWorkflow

#: Crash recovery: a workflow task stuck on a dead worker's sticky queue moves to the shared
#: queue after this long (Temporal's default is 5 s). Activity heartbeats (3 s timeout, sent
#: every second) cover in-flight model and tool calls; see workflows/calls.py.
STICKY_SCHEDULE_TO_START = timedelta(seconds=1)
HEARTBEAT_THROTTLE = timedelta(seconds=1)


def create_worker(
    client: Client,
    tools: list[Tool],
    task_queue: str | None = None,
    model_activities: ModelActivities | None = None,
    extra_workflows: list[type] | None = None,
    **worker_options: Any,
) -> Worker:
    """Build a worker for agent runs.

    :param client: A client from :func:`agent.connect` (it must carry the project's converter).
    :param tools: The tool functions (``@tool``) this worker can run.
    :param task_queue: Defaults to ``AGENT_TASK_QUEUE`` (``agent``).
    :param model_activities: A custom model client holder; by default one from ``OPENAI_*``.
    :param extra_workflows: Other workflow classes to run on the same worker.
    :param worker_options: Passed to ``temporalio.worker.Worker`` (override the tuned defaults).
    :raises ValueError: On duplicate tool names or a non-``Tool`` in ``tools``.
    """
    # Token counting hooks use tiktoken inside workflow tasks; load the encoding now (once per
    # process, from local files) so the first count does not eat into the workflow-task deadline.
    from hooks.compaction.encodings import load_encoding

    load_encoding("o200k_base")
    tool_activities = ToolActivities(tools)
    model = model_activities or ModelActivities()
    plugins = [] if any(isinstance(p, AgentPlugin) for p in client.config().get("plugins", [])) else [AgentPlugin()]
    options: dict[str, Any] = {
        "sticky_queue_schedule_to_start_timeout": STICKY_SCHEDULE_TO_START,
        "max_heartbeat_throttle_interval": HEARTBEAT_THROTTLE,
        "default_heartbeat_throttle_interval": HEARTBEAT_THROTTLE,
        "graceful_shutdown_timeout": timedelta(seconds=5),
        "max_concurrent_activities": 64,
    }
    options.update(worker_options)
    return Worker(
        client,
        task_queue=task_queue or Settings.from_env().task_queue,
        workflows=[AgentWorkflow, *(extra_workflows or [])],
        activities=[
            model.chat_completion,
            tool_activities.invoke_tool,
            *TOOL_RESULT_ACTIVITIES,
            *NOTIFICATION_ACTIVITIES,
        ],
        plugins=plugins,
        **options,
    )


async def run_worker(tools: list[Tool], task_queue: str | None = None) -> None:
    """Connect from the environment and run a worker until SIGINT/SIGTERM."""
    from agent.client import connect

    client = await connect()
    worker = create_worker(client, tools=tools, task_queue=task_queue)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with worker:
        logging.getLogger(__name__).info("worker polling task queue %r", worker.task_queue)
        print(f"worker ready {os.getpid()}", flush=True)  # for supervisors and tests waiting on start-up
        await stop.wait()


def main() -> None:
    import argparse

    from hooks.serialization import import_object

    parser = argparse.ArgumentParser(
        description="Run an agent worker (Temporal address etc. from TEMPORAL_* env vars)."
    )
    parser.add_argument(
        "--tools",
        default="agent.demo_tools.DEMO_TOOLS",
        help="import path of a list of @tool functions (default: the demo's two tools)",
    )
    parser.add_argument("--task-queue", help="task queue to poll (default: $AGENT_TASK_QUEUE or agent)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(run_worker(list(import_object(args.tools)), args.task_queue))


if __name__ == "__main__":
    main()
