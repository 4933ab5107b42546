"""Following a run as it happens (DESIGN.md "Live"): its :class:`~core.events.RunEvent` stream.

``AgentRunHandle.events()`` reads the run's Temporal Workflow Stream
(``temporalio.contrib.workflow_streams``) through the stream's poll Query, every
``poll_interval`` while nothing new came and at once while a backlog drains. A Query writes
nothing to the run's history (the contrib's long-poll Update records two events and a workflow
task a poll, for every watcher: bench/live.py measured that at more than the token Signals
themselves), and it answers for a running, a continued and a finished run alike, so a finished
run's events can still be read (a worker must be up to answer).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import timedelta

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.workflow_streams import PollInput, PollResult
from temporalio.contrib.workflow_streams._types import _decode_payload

from core.events import RUN_EVENTS_TOPIC, RunEvent

#: The contrib's poll Query (and Update) name.
STREAM_POLL = "__temporal_workflow_stream_poll"
#: Pause between two polls of a subscriber that has caught up.
DEFAULT_POLL_INTERVAL = timedelta(milliseconds=50)
#: How often a caught-up subscriber checks whether the run closed without a ``run_ended`` event.
CLOSED_CHECK_SECONDS = 2.0


async def run_events(
    client: Client, run_id: str, from_offset: int = 0, poll_interval: timedelta = DEFAULT_POLL_INTERVAL
) -> AsyncIterator[RunEvent]:
    """The events of run ``run_id`` from offset ``from_offset`` on, as they happen.

    :param client: A Temporal client (``agent.connect()``).
    :param run_id: The run (workflow id); the latest run of its continue-as-new chain is read.
    :param from_offset: The first offset wanted: 0 for everything, ``last.offset + 1`` to resume.
    :param poll_interval: Pause between polls once caught up.
    :returns: An async iterator that ends after the ``run_ended`` event, or once a run that
        closed without one (failed, terminated) has no more events.
    :raises ValueError: For a negative ``from_offset``.
    """
    if from_offset < 0:
        raise ValueError(f"from_offset must be 0 or more, got {from_offset}.")
    handle = client.get_workflow_handle(run_id)
    converter = client.data_converter.payload_converter
    offset, checked = from_offset, time.monotonic()
    while True:
        result = await handle.query(
            STREAM_POLL, PollInput(topics=[RUN_EVENTS_TOPIC], from_offset=offset), result_type=PollResult
        )
        for item in result.items:
            event = RunEvent(offset=item.offset, **converter.from_payload(_decode_payload(item.data)))
            yield event
            if event.kind == "run_ended":
                return
        offset = max(offset, result.next_offset)
        if result.more_ready:
            continue
        if not result.items and time.monotonic() - checked > CLOSED_CHECK_SECONDS:
            checked = time.monotonic()
            status = (await handle.describe()).status
            if status not in (WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.CONTINUED_AS_NEW):
                again = await handle.query(
                    STREAM_POLL, PollInput(topics=[RUN_EVENTS_TOPIC], from_offset=offset), result_type=PollResult
                )
                if not again.items:
                    return
                continue
        await asyncio.sleep(poll_interval.total_seconds())
