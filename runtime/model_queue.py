"""Model calls on a task queue of their own, rate-limited for every worker at once.

With ``AGENT_MODEL_TASK_QUEUE`` set, a worker schedules its runs' ``chat_completion`` activities
on that queue (a workflow outbound interceptor: workflow code names no queue, so a replay never
depends on the setting) and polls it with a companion worker. With ``AGENT_MODEL_CALLS_PER_SECOND``
the companion asks the server to dispatch at most that many model calls a second from the queue:
Temporal's own task-queue rate limit (``max_task_queue_activities_per_second``), held by the
server for all the workers of the queue together, so a fan-out of runs on many workers cannot
burst a provider's limit. A call waiting for its turn is an activity scheduled and not yet
started (``agent status`` says so); none fails for it. Every worker of the task queue must have
the same two settings.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import Client
from temporalio.plugin import SimplePlugin
from temporalio.worker import (
    Interceptor,
    StartActivityInput,
    Worker,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from core.wire import CHAT_COMPLETION_ACTIVITY


class _ModelCallsOnTheirQueue(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, task_queue: str) -> None:
        super().__init__(next)
        self._task_queue = task_queue

    def start_activity(self, input: StartActivityInput) -> Any:
        if input.activity == CHAT_COMPLETION_ACTIVITY and input.task_queue is None:
            input.task_queue = self._task_queue
        return super().start_activity(input)


class ModelQueueInterceptor(Interceptor):
    """Schedules every ``chat_completion`` activity a workflow starts without a queue of its own on
    ``task_queue``.

    :param task_queue: The model task queue (``AGENT_MODEL_TASK_QUEUE``).
    """

    def __init__(self, task_queue: str) -> None:
        self.task_queue = task_queue

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        task_queue = self.task_queue

        class _Inbound(WorkflowInboundInterceptor):
            def init(self, outbound: WorkflowOutboundInterceptor) -> None:
                super().init(_ModelCallsOnTheirQueue(outbound, task_queue))

        return _Inbound


class ModelQueuePlugin(SimplePlugin):
    """Puts a worker's model calls on ``task_queue`` and runs, beside the worker, a companion that
    polls it for model calls only, at most ``calls_per_second`` a second for the whole queue.

    :param task_queue: The model task queue.
    :param calls_per_second: The queue's dispatch rate limit (None: no limit).
    :param companion: Builds the companion worker from the main worker's client, queue options
        included (``runtime/worker.py`` passes its own worker factory).
    """

    def __init__(
        self, task_queue: str, calls_per_second: float | None, companion: Callable[[Client, dict[str, Any]], Worker]
    ) -> None:
        self.task_queue = task_queue
        self.calls_per_second = calls_per_second
        self._companion = companion
        super().__init__("durable-agent.ModelQueue", interceptors=[ModelQueueInterceptor(task_queue)])

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        """Run the companion for as long as the worker runs."""
        options: dict[str, Any] = {"task_queue": self.task_queue}
        # A versioned worker's companion is a version of the same deployment: a pinned run's model
        # calls go to its own build there too.
        if (deployment := worker.config(active_config=True).get("deployment_config")) is not None:
            options["deployment_config"] = deployment
        if self.calls_per_second is not None:
            options["max_task_queue_activities_per_second"] = self.calls_per_second
        async with self._companion(worker.client, options):
            await super().run_worker(worker, next)
