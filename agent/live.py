"""Following a run as it happens (DESIGN.md "Live"): its :class:`~core.events.RunEvent` stream.

``AgentRunHandle.events()`` reads the run's Temporal Workflow Stream
(``temporalio.contrib.workflow_streams``): a long-poll Update while the run is open (it follows
continue-as-new), the stream's Query once it has closed, so a finished run's events can still be
read (a worker must be up to answer the Query).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from core.events import RUN_EVENTS_TOPIC, RunEvent

#: Pause between two polls of a subscriber that has caught up (the contrib's default; each poll
#: is an Update in the run's history, so a shorter pause costs history, not only latency).
DEFAULT_POLL_COOLDOWN = timedelta(milliseconds=100)


async def run_events(
    client: Client, run_id: str, from_offset: int = 0, poll_cooldown: timedelta = DEFAULT_POLL_COOLDOWN
) -> AsyncIterator[RunEvent]:
    """The events of run ``run_id`` from offset ``from_offset`` on, as they happen.

    :param client: A Temporal client (``agent.connect()``).
    :param run_id: The run (workflow id).
    :param from_offset: The first offset wanted: 0 for everything, ``last.offset + 1`` to resume.
    :param poll_cooldown: Pause between polls once caught up.
    :returns: An async iterator that ends after the ``run_ended`` event, or once a run that
        closed without one (failed, terminated) has no more events.
    :raises ValueError: For a negative ``from_offset``.
    """
    if from_offset < 0:
        raise ValueError(f"from_offset must be 0 or more, got {from_offset}.")
    stream = WorkflowStreamClient.create(client, run_id)
    async for item in stream.subscribe([RUN_EVENTS_TOPIC], from_offset=from_offset, poll_cooldown=poll_cooldown):
        event = RunEvent(offset=item.offset, **item.data)
        yield event
        if event.kind == "run_ended":
            return
