"""A session to talk to: a plain ``Agent``'s run that has answered its first message and waits for
the next (``wait_for_user``)."""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import Client

from agent import Agent, AgentRunHandle, ChatMessage


async def answered_session(
    client: Client, model: str, run_id: str, task_queue: str, first: str = "hi"
) -> AgentRunHandle:
    """Start a session of ``model`` on ``task_queue`` with ``first`` and wait until it answered it."""
    handle = await Agent(model=model).start(
        client, [ChatMessage.from_user(first)], run_id=run_id, task_queue=task_queue, wait_for_user=timedelta(minutes=5)
    )
    await handle.wait_turn(1, timeout=timedelta(seconds=60))
    return handle
