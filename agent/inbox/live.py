"""The inbox's live updates: a run's events as Server-Sent Events (``/runs/{run}/events``), and
what a page rendered mid-answer needs to pick up where the stream is.

Each SSE message carries one ``RunEvent`` as JSON with its offset as the SSE ``id``. A browser's
``EventSource`` that loses its connection reconnects with ``Last-Event-ID``, and the stream goes
on from the next offset: nothing missed, nothing twice. A page loaded afresh renders what exists
(from history, and the answer being written from the events so far: :func:`read_so_far`) and
subscribes with ``?from=`` the next offset. When the run ends the stream sends an ``end`` event
(the page stops listening); a run whose events cannot be read gets one ``unavailable`` event.

Every SSE client of a run in this inbox process reads the process's one feed of the run
(:mod:`agent.live`): a hundred open pages cost the run what one does. A read that fails for a
while (the worker busy or away) is retried by the feed, so the stream only waits. After
``agent rewind`` the stream sends a ``run_rewound`` event (its id the offset before the new run's
first event) and goes on with the new run's events; the page reloads to show the rewound run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.routing import Route
from temporalio.client import WorkflowExecutionStatus, WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RPCError

from agent.inbox.pages import InboxContext, PageError
from core.events import ReplyText, RunEvent

#: What a failed read of the live events raises.
STREAM_ERRORS = (RPCError, WorkflowQueryFailedError, WorkflowUpdateFailedError)
#: Seconds between the keep-alive comments of an idle stream (proxies close silent connections).
PING_SECONDS = 15


def routes(inbox: InboxContext) -> list[Route]:
    """The live stream's route."""

    async def events(request: Request) -> EventSourceResponse:
        inbox.viewer(request)
        run_id = request.path_params["run_id"]
        start = start_offset(request.headers.get("last-event-id"), request.query_params.get("from"))
        return EventSourceResponse(run_events(inbox, run_id, start), ping=PING_SECONDS)

    return [Route("/runs/{run_id:path}/events", events)]


def start_offset(last_event_id: str | None, from_param: str | None) -> int:
    """Where a subscription starts: after ``Last-Event-ID`` (a reconnecting ``EventSource``)
    when given, else at ``?from=`` (a page's next offset), else at 0.

    :raises PageError: 400 when either is not a whole number of at least 0 (or -1 for the id).
    """
    try:
        if last_event_id:
            offset = int(last_event_id) + 1
        else:
            offset = int(from_param or 0)
    except ValueError as err:
        raise PageError(400, "Bad offset", "Last-Event-ID and ?from= are event offsets: whole numbers.") from err
    if offset < 0:
        raise PageError(400, "Bad offset", "An event offset is at least 0.")
    return offset


async def run_events(inbox: InboxContext, run_id: str, start: int) -> AsyncIterator[ServerSentEvent]:
    """The SSE messages of run ``run_id``'s events from offset ``start`` until it ends."""
    try:
        async for event in inbox.handle(run_id).events(from_offset=start):
            yield ServerSentEvent(event.model_dump_json(), id=str(event.offset))
    except STREAM_ERRORS as err:
        yield ServerSentEvent(f"live updates are unavailable for this run: {err}", event="unavailable")
        return
    yield ServerSentEvent("the run ended", event="end")


async def next_offset(inbox: InboxContext, run_id: str) -> int | None:
    """The offset the run's next event will have, or None when the run has ended (its page has
    it all from history and subscribes to nothing) or its stream cannot be read."""
    try:
        description = await inbox.client.get_workflow_handle(run_id).describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            return None
        return await WorkflowStreamClient.create(inbox.client, run_id).get_offset()
    except STREAM_ERRORS:
        return None


@dataclass
class SoFar:
    """What a page rendered now shows of the live stream.

    :param next_offset: Where the page's subscription starts.
    :param answer: The text of the model call being streamed, as far as it got (the latest
        attempt only); empty when none is.
    :param answer_key: ``turn:step`` of that model call (the page's element for it carries it).
    """

    next_offset: int = 0
    answer: str = ""
    answer_key: str = ""


async def read_so_far(inbox: InboxContext, run_id: str) -> SoFar:
    """The stream's next offset and the answer being written, read before the page's history so
    that the page's subscription misses nothing. A run whose stream cannot be read gives an empty
    :class:`SoFar` (the page then subscribes from 0, and the stream says it is unavailable)."""
    end = await next_offset(inbox, run_id)
    if not end:
        return SoFar()
    events: list[RunEvent] = []

    async def read() -> None:
        async for event in inbox.handle(run_id).events(from_offset=0):
            events.append(event)
            if event.offset >= end - 1:
                return

    try:
        await asyncio.wait_for(read(), inbox.settings.query_timeout.total_seconds())
    except (*STREAM_ERRORS, TimeoutError):
        return SoFar(next_offset=end)  # the page shows no half-written answer; the stream goes on from here
    key, text = answer_in_progress(events)
    return SoFar(next_offset=events[-1].offset + 1 if events else end, answer=text, answer_key=key)


def answer_in_progress(events: list[RunEvent]) -> tuple[str, str]:
    """``(turn:step, text)`` of the model call whose tokens came last and whose reply has not:
    its latest attempt's text (:class:`core.events.ReplyText` drops a retried attempt's).
    ``("", "")`` when no answer is being written."""
    texts = ReplyText()
    writing: tuple[int, int | None] | None = None
    for event in events:
        if texts.add(event) is not None and event.kind == "token":
            writing = (event.turn, event.step)
        elif event.kind == "model_reply" and (event.turn, event.step) == writing:
            writing = None
    if writing is None:
        return "", ""
    return f"{writing[0]}:{writing[1]}", texts.text(*writing)
