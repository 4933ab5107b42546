"""A stuck run for the tests of what ``agent status``, ``agent watch`` and the inbox show: its
``before_llm`` hook reads the wall clock, which the workflow sandbox refuses, so the workflow task
keeps failing and the run waits (open) for fixed code."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio.client import Client

from agent import Agent, AgentRunHandle, ChatMessage
from hooks import FunctionHook
from tests import tools as t
from tests.support.polling import eventually

#: The sandbox's error for ``datetime.now()`` in workflow code, as the history keeps it.
WALL_CLOCK_ERROR = (
    "Cannot access datetime.datetime.now.__call__ from inside a workflow. If this is code from a module "
    "not used in a workflow or known to only be used deterministically from a workflow, mark the import "
    "as pass through."
)
#: The hint every view gives for it.
HINT = "hooks are workflow code: use workflow.now() instead of datetime.now(), workflow.random() instead of random"


def fix_for(task_queue: str) -> str:
    return f"deploy fixed code to the workers of task queue {task_queue}; the run then resumes by itself"


def attempt_in(text: str, pattern: str) -> int:
    """The attempt number ``pattern``'s one group finds in ``text`` (an AssertionError when none)."""
    match = re.search(pattern, text)
    assert match, f"no attempt matching {pattern!r} in:\n{text}"
    return int(match.group(1))


@asynccontextmanager
async def stuck_run(
    client: Client, task_queue: str, scripted, model: str, run_id: str
) -> AsyncIterator[AgentRunHandle]:
    """A run whose workflow task has failed at least once (pending attempt 2 or more); terminated after."""
    scripted.script(model, [{"text": "never reached"}])
    agent = Agent(model=model, tools=[t.echo], hooks={"before_llm": [FunctionHook(t.read_the_wall_clock)]})
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=task_queue)
    try:
        await eventually(
            handle.health,
            lambda health: health.failing_workflow_task is not None,
            message="the run's workflow task never failed",
        )
        yield handle
    finally:
        await handle.workflow.terminate("test over")
