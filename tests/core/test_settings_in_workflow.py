"""Workflow code must not read settings: a run's behaviour cannot depend on the environment of
whichever worker replays it. ``get_settings`` refuses inside a workflow and works in an activity."""

from __future__ import annotations

import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from core.settings import get_settings


@activity.defn
async def task_queue_setting() -> str:
    return get_settings().task_queue


@workflow.defn
class ReadsSettings:
    @workflow.run
    async def run(self) -> list[str]:
        try:
            get_settings()
            inside = "read"
        except RuntimeError as exc:
            inside = str(exc)
        from_activity = await workflow.execute_activity(
            task_queue_setting, start_to_close_timeout=timedelta(seconds=10)
        )
        return [inside, from_activity]


async def test_settings_are_refused_in_workflow_code_and_read_in_activities(client, monkeypatch):
    monkeypatch.setenv("AGENT_TASK_QUEUE", "from-the-environment")
    queue = f"settings-{uuid.uuid4().hex[:8]}"
    # Unsandboxed: the sandbox would re-import this test module; in_workflow() holds either way.
    async with Worker(
        client,
        task_queue=queue,
        workflows=[ReadsSettings],
        activities=[task_queue_setting],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        inside, from_activity = await client.execute_workflow(
            ReadsSettings.run, id=f"settings-{uuid.uuid4().hex}", task_queue=queue
        )
    assert inside.startswith("Workflow code must not read settings")
    assert from_activity == "from-the-environment"
