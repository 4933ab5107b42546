"""Helpers shared by the human-in-the-loop tests (agents, waiting for a pending request)."""

from __future__ import annotations

from datetime import timedelta

from temporalio.api.enums.v1 import EventType

from agent import Agent, ChatMessage
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from tests import tools as t
from tests.support.polling import eventually


def call(name: str, id: str | None = None, **arguments) -> dict:
    entry = {"name": name, "arguments": arguments}
    if id is not None:
        entry["id"] = id
    return entry


def calls(*entries: dict) -> dict:
    return {"tool_calls": list(entries)}


def ask_all(timeout: timedelta = timedelta(days=7), **kwargs) -> ConfirmationHook:
    return ConfirmationHook({"*": DurableConfirmationStrategy(AlwaysAskPolicy(), timeout=timeout, **kwargs)})


#: ``tool_call_counts`` of a run of :func:`hitl_agent` that called nothing (every tool from 0, as Haystack).
NO_CALLS = {"add": 0, "echo": 0, "record": 0, "big_text": 0, "finish": 0}


def hitl_agent(model: str, hook: ConfirmationHook | None = None, **kwargs) -> Agent:
    return Agent(
        model=model,
        tools=[t.add, t.echo, t.record, t.big_text, t.finish],
        hooks={"before_tool": [hook or ask_all()]},
        **kwargs,
    )


async def start(agent: Agent, client, worker: str, run_id: str, prompt: str = "go"):
    return await agent.start(client, [ChatMessage.from_user(prompt)], run_id=run_id, task_queue=worker)


async def wait_pending(handle, count: int = 1, exclude: set[str] | None = None, timeout: float = 30.0):
    """Query the run until ``count`` requests (not in ``exclude``) are pending; returns them."""
    exclude = exclude or set()

    async def pending():
        return [p for p in await handle.pending_confirmations() if p.tool_call_id not in exclude]

    return await eventually(
        pending,
        lambda found: len(found) >= count,
        timeout=timeout,
        message=f"{count} pending confirmation(s) never appeared on {handle.run_id}",
    )


async def history_events(handle) -> list:
    return list((await handle.workflow.fetch_history()).events)


async def signals_processed(handle, count: int, timeout: float = 30.0) -> list:
    """Wait until the run has received ``count`` signals and completed a workflow task after the
    last one (so it has acted on every one of them); returns the history at that point."""

    def processed(events: list) -> bool:
        signaled = [e.event_id for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]
        completed = [e.event_id for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]
        return len(signaled) == count and bool(completed) and completed[-1] > signaled[-1]

    return await eventually(
        lambda: history_events(handle),
        processed,
        timeout=timeout,
        message=f"run {handle.run_id} did not process {count} signal(s)",
    )
