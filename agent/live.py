"""Following a run as it happens (DESIGN.md "Live"): its :class:`~core.events.RunEvent` stream.

``AgentRunHandle.events()`` reads the run's Temporal Workflow Stream
(``temporalio.contrib.workflow_streams``) through the stream's poll Query. A Query writes nothing
to the run's history (the contrib's long-poll Update records two events and a workflow task a
poll, for every watcher), and it answers for a running, a continued and a finished run alike.
But a Query is work for the run's worker, a whole replay of the history when the worker does not
cache the run, and a Query that arrives while a workflow task runs waits in the server's
small buffer. So watching is shaped to cost the run nothing:

- **One subscription per run per process.** Every local watcher of a run (``handle.events()``
  iterators, the inbox's SSE clients, ``agent watch``) reads one :class:`RunFeed`: one poller, a
  shared buffer of events, each subscriber with its own offset. The feed closes when its last
  subscriber leaves.
- **No Query while nothing happened.** The poller reads ``describe()`` (answered by the server,
  no worker involved) and queries the stream only when the run's history grew since the last
  Query (a stream item is only ever appended by a workflow task, which grows the history), at
  most once per :data:`MIN_QUERY_GAP` seconds. Its pause doubles from :data:`MIN_POLL` to
  :data:`MAX_POLL` while nothing changes, and drops back at the first change.
- **Transient errors are retried** (an RPC timeout, "consistent query buffer is full", a lost
  connection, no worker): the poller backs off up to :data:`MAX_ERROR_BACKOFF` and goes on from
  its offset; subscribers never see them. Only a run that does not exist or publishes no stream
  ends its subscribers with the error.

So a run sees at most one stream Query per watching process per change of its history (and at
most ``1 / MIN_QUERY_GAP`` a second per process), none while it is idle, fewer under errors.

**Rewind.** ``agent rewind`` (Temporal's reset) keeps the run id and starts a new Temporal run
whose stream holds the old one's events up to the start of the rewound step. The feed notices
the new run, finds where its events start to differ (the first event of the rewound step), and
gives each subscriber a ``run_rewound`` event (``data``: ``reason``, ``from_offset``,
``temporal_run_id``, ``previous_temporal_run_id``) followed by the new run's events from
``from_offset`` on: the offsets go back, and nothing more of the discarded attempt follows.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import contextlib
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
)
from temporalio.contrib.workflow_streams import PollInput, PollResult
from temporalio.service import RPCError, RPCStatusCode

from agent.operations.rewind import read_steps
from agent.run_history import is_reset_event
from core.events import RUN_EVENTS_TOPIC, RunEvent

#: The contrib's poll Query (and Update) name.
STREAM_POLL = "__temporal_workflow_stream_poll"
#: Shortest pause between two reads of a run that is changing (seconds).
MIN_POLL = 0.05
#: Longest pause, reached by doubling while nothing changes (seconds).
MAX_POLL = 1.0
#: Shortest time between two stream Queries of one run from one process (seconds).
MIN_QUERY_GAP = 0.1
#: Longest pause after transient errors in a row (seconds).
MAX_ERROR_BACKOFF = 5.0
#: Deadline of one describe() or Query (a worker that does not answer is a transient error).
RPC_TIMEOUT = timedelta(seconds=10)
#: Kept for callers of the old signature: the pause of a caught-up subscriber.
DEFAULT_POLL_INTERVAL = timedelta(seconds=MIN_POLL)

#: RPC statuses that will not go away by asking again.
PERMANENT_STATUSES = frozenset(
    {
        RPCStatusCode.NOT_FOUND,
        RPCStatusCode.INVALID_ARGUMENT,
        RPCStatusCode.PERMISSION_DENIED,
        RPCStatusCode.UNAUTHENTICATED,
        RPCStatusCode.UNIMPLEMENTED,
    }
)
_CLOSED = (WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.CONTINUED_AS_NEW)


def is_transient(err: BaseException) -> bool:
    """True for a failed read worth retrying: a timeout, a full query buffer, a lost connection,
    a worker that is missing or busy. False for an unknown run, or a run without the stream's
    Query (it publishes no events)."""
    if isinstance(err, RPCError):
        return err.status not in PERMANENT_STATUSES
    if isinstance(err, WorkflowQueryRejectedError):
        return False
    if isinstance(err, WorkflowQueryFailedError):
        text = str(err).lower()  # the Python SDK's words for a missing handler, and the server's
        return "expected but not found" not in text and "unknown querytype" not in text
    return isinstance(err, TimeoutError | OSError)


def decode_item(converter: Any, data: str) -> dict[str, Any]:
    """One stream item's value: the contrib's documented wire form (``PublishEntry.data``) is
    base64 of a serialized ``Payload``."""
    return converter.from_payload(Payload.FromString(base64.b64decode(data)))


@dataclass(eq=False)
class Subscription:
    """One local watcher of a feed: where it is, and the rewinds it has yet to be told of."""

    offset: int
    rewinds: list[RunEvent] = field(default_factory=list)


class RunFeed:
    """The one poller of a run in this process, fanning its events out to local subscribers.

    :param client: The Temporal client.
    :param run_id: The run (workflow id).
    """

    def __init__(self, client: Client, run_id: str) -> None:
        self.client = client
        self.run_id = run_id
        self.log: list[RunEvent] = []  # sorted by offset; trimmed below the slowest subscriber
        self.head: int | None = None  # the next offset the poller reads
        self.subscribers: set[Subscription] = set()
        self.ended = False  # the run closed and every event it published is in the log
        self.error: BaseException | None = None  # a permanent failure, raised to subscribers
        self.queries = 0  # stream Queries sent (figures and tests)
        self.transient_errors = 0
        self._backfill: int | None = None  # a subscriber wants events from before the log
        self._temporal_run: str | None = None
        self._history_length = -1
        self._last_query = 0.0
        self._changed = asyncio.Event()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._key = (id(asyncio.get_running_loop()), id(client), run_id)

    # -- subscribers -------------------------------------------------------------------------------

    def join(self, from_offset: int) -> Subscription:
        sub = Subscription(from_offset)
        self.subscribers.add(sub)
        if self.head is None:
            self.head = from_offset
        elif from_offset < self._low():
            self._backfill = min(from_offset, self._backfill if self._backfill is not None else from_offset)
            self._wake.set()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"live events of {self.run_id}")
        return sub

    def leave(self, sub: Subscription) -> None:
        self.subscribers.discard(sub)
        if not self.subscribers:
            if _FEEDS.get(self._key) is self:
                del _FEEDS[self._key]
            if self._task is not None and not self._task.done():
                with contextlib.suppress(RuntimeError):  # a watcher closed after its loop
                    self._task.cancel()
        self._trim()

    async def read(self, sub: Subscription) -> AsyncIterator[RunEvent]:
        """``sub``'s events until ``run_ended``, the end of a run that closed without one, or a
        permanent error (raised)."""
        while True:
            if sub.rewinds and sub.offset >= sub.rewinds[0].offset + 1:
                marker = sub.rewinds.pop(0)
                sub.offset = marker.offset + 1
                yield marker
                continue
            index = bisect.bisect_left(self.log, sub.offset, key=lambda e: e.offset)
            if index < len(self.log):
                event = self.log[index]
                if sub.rewinds and event.offset > sub.rewinds[0].offset:
                    sub.offset = event.offset  # past the rewind point: its marker comes first
                    continue
                sub.offset = event.offset + 1
                self._trim()
                yield event
                if event.kind == "run_ended":
                    return
                continue
            if self.error is not None:
                raise self.error
            if self.ended and not sub.rewinds:
                return
            changed = self._changed
            await changed.wait()

    def _low(self) -> int:
        return self.log[0].offset if self.log else (self.head or 0)

    def _trim(self) -> None:
        if not self.subscribers:
            return
        # a subscriber told of a rewind goes back to its offset: keep the events from there
        slowest = min(min([s.offset, *(m.offset + 1 for m in s.rewinds)]) for s in self.subscribers)
        cut = bisect.bisect_left(self.log, slowest, key=lambda e: e.offset)
        if cut:
            del self.log[:cut]

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # -- the poller --------------------------------------------------------------------------------

    async def _run(self) -> None:
        pause, errors = MIN_POLL, 0
        try:
            while self.subscribers and not self.ended:
                try:
                    changed = await self._step()
                    errors = 0
                    pause = MIN_POLL if changed else min(pause * 2, MAX_POLL)
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    if not is_transient(err):
                        self.error = err
                        return
                    errors += 1
                    self.transient_errors += 1
                    # jittered, so that processes failing together do not retry together
                    pause = min(MIN_POLL * 2**errors, MAX_ERROR_BACKOFF) * random.uniform(0.75, 1.25)
                self._notify()
                if self.ended:
                    return
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), pause)
                except TimeoutError:
                    pass
        finally:
            if _FEEDS.get(self._key) is self:
                del _FEEDS[self._key]
            self._notify()

    async def _step(self) -> bool:
        """One look at the run; True when something changed."""
        latest = await self.client.get_workflow_handle(self.run_id).describe(rpc_timeout=RPC_TIMEOUT)
        if self._temporal_run is None:
            self._temporal_run = latest.run_id
        if latest.run_id != self._temporal_run:
            await self._run_changed(latest)
            return True
        changed = False
        if self._backfill is not None:
            await self._read_backfill()
            changed = True
        closed = latest.status not in _CLOSED
        if latest.history_length == self._history_length and not closed:
            return changed
        wait = self._last_query + MIN_QUERY_GAP - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        added = await self._read(self._pinned(), self.head or 0)
        self._history_length = latest.history_length
        if closed:  # described closed before the read: the read got everything
            self.ended = True
        return changed or bool(added) or closed

    def _pinned(self, temporal_run: str | None = None) -> WorkflowHandle[Any, Any]:
        return self.client.get_workflow_handle(self.run_id, run_id=temporal_run or self._temporal_run)

    async def _query(self, handle: WorkflowHandle[Any, Any], offset: int) -> PollResult:
        self.queries += 1
        self._last_query = time.monotonic()
        return await handle.query(
            STREAM_POLL,
            PollInput(topics=[RUN_EVENTS_TOPIC], from_offset=offset),
            result_type=PollResult,
            rpc_timeout=RPC_TIMEOUT,
        )

    async def _fetch(self, handle: WorkflowHandle[Any, Any], offset: int, stop: int | None = None) -> list[RunEvent]:
        """Every event from ``offset`` (to ``stop``, exclusive) that ``handle``'s run has now."""
        converter = self.client.data_converter.payload_converter
        events: list[RunEvent] = []
        while True:
            result = await self._query(handle, offset)
            for item in result.items:
                if stop is not None and item.offset >= stop:
                    return events
                events.append(RunEvent(offset=item.offset, **decode_item(converter, item.data)))
            offset = max(offset, result.next_offset)
            if not result.more_ready:
                return events

    async def _read(self, handle: WorkflowHandle[Any, Any], offset: int) -> int:
        events = await self._fetch(handle, offset)
        self.log.extend(e for e in events if e.offset >= (self.head or 0))
        if events:
            self.head = max(self.head or 0, events[-1].offset + 1)
        return len(events)

    async def _read_backfill(self) -> None:
        start, self._backfill = self._backfill, None
        assert start is not None
        older = await self._fetch(self._pinned(), start, stop=self._low())
        self.log[:0] = older

    async def _run_changed(self, latest: WorkflowExecutionDescription) -> None:
        """The run id names a new Temporal run: a continue-as-new (the stream goes on), a rewind
        (the stream goes back to the rewound step), or a new run after this one closed."""
        previous = await self._pinned().describe(rpc_timeout=RPC_TIMEOUT)
        reset_to = previous.raw_description.workflow_extended_info.reset_run_id
        if reset_to:  # a running run is terminated by its reset, a closed one keeps its status
            await self._rewound(previous, reset_to)
            return
        await self._read(self._pinned(), self.head or 0)  # what the old run published last
        if previous.status == WorkflowExecutionStatus.CONTINUED_AS_NEW:
            # the stream rides along the chain, so its latest run goes on from the same offsets
            self._temporal_run, self._history_length = latest.run_id, -1
        else:
            self.ended = True  # a new run under the same id is not this one

    async def _rewound(self, previous: WorkflowExecutionDescription, new_run: str) -> None:
        """Follow a rewind from ``previous`` to ``new_run``: cut the log where the new run's events
        start and queue a ``run_rewound`` marker for every subscriber."""
        reason, reset_event = "", None
        async for event in self._pinned(new_run).fetch_history_events(skip_archival=True):
            if is_reset_event(event):
                reason, reset_event = event.workflow_task_failed_event_attributes.failure.message, event.event_id
                break
        steps = await read_steps(self.client, self.run_id, temporal_run_id=previous.run_id)
        start = next((s for s in steps.steps if reset_event is not None and s.reset_event_id >= reset_event), None)
        new_events = await self._fetch(self._pinned(new_run), 0)
        if start is None:  # not a rewind to a step: what the new run has now is its copy
            cut = new_events[-1].offset + 1 if new_events else 0
        else:
            cut = next(
                (e.offset for e in new_events if (e.turn, e.step) == (start.turn, start.step)),
                new_events[-1].offset + 1 if new_events else 0,
            )
        marker = RunEvent(
            offset=cut - 1,
            kind="run_rewound",
            turn=start.turn if start else (new_events[-1].turn if new_events else 1),
            step=start.step if start else None,
            data={
                "reason": reason,
                "from_offset": cut,
                "temporal_run_id": new_run,
                "previous_temporal_run_id": previous.run_id,
            },
        )
        # what the feed had not read of the old run before the cut is the new run's copy
        seam = min(cut, self.head or 0)
        self.log = [e for e in self.log if e.offset < seam] + [e for e in new_events if e.offset >= seam]
        self.head = max(cut, new_events[-1].offset + 1 if new_events else cut)
        self._temporal_run, self._history_length = new_run, -1
        for sub in self.subscribers:
            sub.rewinds.append(marker)


_FEEDS: dict[tuple[int, int, str], RunFeed] = {}


def feed_of(client: Client, run_id: str) -> RunFeed:
    """This process's feed of ``run_id`` (made when none is open)."""
    key = (id(asyncio.get_running_loop()), id(client), run_id)
    feed = _FEEDS.get(key)
    if feed is None or feed.ended or feed.error is not None:
        feed = _FEEDS[key] = RunFeed(client, run_id)
    return feed


async def run_events(
    client: Client, run_id: str, from_offset: int = 0, poll_interval: timedelta = DEFAULT_POLL_INTERVAL
) -> AsyncIterator[RunEvent]:
    """The events of run ``run_id`` from offset ``from_offset`` on, as they happen, read through
    this process's one feed of the run (see the module docstring).

    :param client: A Temporal client (``agent.connect()``).
    :param run_id: The run (workflow id); the latest run of its continue-as-new chain is read,
        and a rewind is followed (a ``run_rewound`` event, then the new run's events).
    :param from_offset: The first offset wanted: 0 for everything, ``last.offset + 1`` to resume.
    :param poll_interval: Unused (the feed's pauses adapt, :data:`MIN_POLL` to :data:`MAX_POLL`);
        kept for callers of the earlier signature.
    :returns: An async iterator that ends after the ``run_ended`` event, or once a run that
        closed without one (failed, terminated) has no more events.
    :raises ValueError: For a negative ``from_offset``.
    :raises temporalio.service.RPCError: NOT_FOUND for an unknown run (from the iterator).
    :raises temporalio.client.WorkflowQueryFailedError: For a run that publishes no events.
    """
    if from_offset < 0:
        raise ValueError(f"from_offset must be 0 or more, got {from_offset}.")
    feed = feed_of(client, run_id)
    sub = feed.join(from_offset)
    try:
        async for event in feed.read(sub):
            yield event
    finally:
        feed.leave(sub)


def local_watchers(client: Client, run_id: str) -> int:
    """How many subscribers in this process read ``run_id``'s feed through ``client`` now (they
    share its one subscription); 0 when none does."""
    feed = _FEEDS.get((id(asyncio.get_running_loop()), id(client), run_id))
    return len(feed.subscribers) if feed is not None else 0
