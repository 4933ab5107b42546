"""``agent watch RUN``: follow one run live until it ends.

What happened comes from the run's live events (``AgentRunHandle.events()``, printed through
:class:`agent.live_view.LiveTranscript`): each model call's answer as its tokens arrive (when the
agent streams them), tool calls with their arguments and a preview of the result, decisions with
who decided, messages people sent, and a session's turns. A run whose events cannot be read
(started by code that publishes none) is followed through its history instead, decoded by
:mod:`agent.run_history`, which gives the same lines without the tokens.

Every ~0.5 s the watcher also reads ``describe()`` (``AgentRunHandle.health()``, answered by the
server) and, while the run is open and its history grew since the last look, the ``run_status``
query (step and phase; 5 s deadline) and, when the run waits for a person, the pending calls with
the command that approves each: a run that is idle is asked nothing. A rewind (``agent rewind``)
prints a ``run rewound`` line, and the events that follow are the new run's. Problems are printed
once each: no worker polling the run's task queue, a workflow task that keeps failing (its
attempt, error, the fix and, for non-determinism, a hint; the watcher goes on, since fixed code
lets the run resume), a model call being retried. At the end it prints the exit reason (or the failure) and returns the
exit code: 0 when the run completed, 1 otherwise. ``agent run --wait`` uses it without the event
lines.

On a terminal the step and phase sit on a ``rich`` progress line with the events scrolling above
it (and the answer's line being written on it); elsewhere (a pipe, a log file, a test) every event
is one plain line, an answer's tokens written as they arrive.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from typing import Any

from temporalio.client import WorkflowFailureError, WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from activities.tool_invocation import ToolInvocationInput
from agent.approvals.decisions import ConfirmationError, default_approver
from agent.client import AgentRunHandle
from agent.live_view import LiveTranscript, PlainScreen, describe_call, preview
from agent.run_endings import cut_calls, ending_line, tool_errors
from agent.run_history import HistoryDecoder, HistoryItem, copied_before_reset
from agent.run_problems import failing_task_lines, health_lines
from agent.workers import workers_of
from core.payloads import RunHealth, RunStatus, TurnResult
from core.wire import RUN_STATUS_QUERY, TURN_RESULT_QUERY
from hooks.human_in_the_loop.dataclasses import PendingConfirmation
from hooks.human_in_the_loop.wire import CONFIRMATION_TIMER_PREFIX, ESCALATION_TIMER_PREFIX

#: How often the watcher polls the run.
POLL_SECONDS = 0.5
#: How long one poll waits for the run's own answer (a query needs a worker).
QUERY_SECONDS = 5
#: How long an ended run's last live events may take to arrive before the end is printed.
DRAIN_SECONDS = 10


def waiting_line(run_id: str, request: PendingConfirmation, me: str | None = None) -> str:
    """``waiting for approval of TOOL (call ID): approve with `agent approve RUN ID```, or, when
    the call's approvers leave out ``me`` (default: :func:`default_approver`), who may decide it."""
    call = request.tool_call_id
    waiting = f"waiting for approval of {request.tool_name} ({call})"
    me = me if me is not None else default_approver()
    if request.approvers and me not in request.approvers:
        return (
            f"{waiting}: only {', '.join(request.approvers)} may decide it (you are {me or 'unknown'}): "
            f"`agent approve {run_id} {call} --approver {request.approvers[0]}` as them"
        )
    return f"{waiting}: approve with `agent approve {run_id} {call}`"


# -- renderers ---------------------------------------------------------------------------------


class PlainRenderer(PlainScreen):
    """One line per event, flushed at once (pipes, logs, tests); an answer's tokens are written
    as they arrive, on one line."""

    def __enter__(self) -> PlainRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end_partial()
        self.out.flush()

    def position(self, text: str) -> None:
        self.line(text)


class RichRenderer:
    """A ``rich`` progress line (spinner, step and phase, elapsed time) with events printed above it."""

    def __init__(self, console: Any = None) -> None:
        """:param console: The ``rich.console.Console`` written to (default: rich's, on stdout)."""
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), transient=True, console=console
        )
        self.task = self.progress.add_task("connecting", total=None)
        self._where = "connecting"
        self._tail = ""  # the answer's line being streamed, shown on the progress line until it ends

    def __enter__(self) -> RichRenderer:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.end_partial()
        self.progress.stop()

    @property
    def partial_open(self) -> bool:
        return bool(self._tail)

    def line(self, text: str) -> None:
        self.progress.console.print(text, markup=False, highlight=False)

    def partial(self, text: str) -> None:
        """Text added to the line being written: whole lines scroll up, the rest sits on the
        progress line (a live display cannot keep a half-printed line above it)."""
        *done, self._tail = (self._tail + text).split("\n")
        for finished in done:
            self.line(finished)
        self._show()

    def end_partial(self) -> None:
        """Print the line being streamed above the progress line."""
        if self._tail:
            tail, self._tail = self._tail, ""
            self.line(tail)
            self._show()

    def position(self, text: str) -> None:
        self._where = text
        self._show()

    def _show(self) -> None:
        tail = self._tail[-80:]
        self.progress.update(self.task, description=f"{self._where}  {tail}" if tail else self._where)


Renderer = PlainRenderer | RichRenderer


def make_renderer(plain: bool | None = None) -> Renderer:
    """Rich on a terminal, plain lines otherwise (or as ``plain`` says)."""
    if plain is None:
        plain = not sys.stdout.isatty()
    return PlainRenderer() if plain else RichRenderer()


# -- the watcher -------------------------------------------------------------------------------


class WatchTranscript(LiveTranscript):
    """The live events in ``agent watch``'s words (the lines its history reading prints), plus
    the turns of a session and the messages people sent.

    :param watcher: The watcher (it knows whether the run is a session).
    """

    def __init__(self, screen: Renderer, run_id: str, watcher: RunWatcher) -> None:
        super().__init__(screen, run_id, lambda n: f"  model call {n} answered: ", approvals=False)
        self.watcher = watcher

    def _on_turn_started(self, event: Any, data: dict) -> None:
        if self.watcher._session:
            self.line(f"turn {event.turn} started")

    def _on_turn_ended(self, event: Any, data: dict) -> None:
        if self.watcher._session:
            reason = data.get("exit_reason") or "unknown"
            self.line(f"turn {event.turn} ended: exit_reason {reason}; waiting for the user's next message")

    def _on_message_received(self, event: Any, data: dict) -> None:
        who = data.get("sender") or "someone (no sender)"
        turn = data.get("turn", event.turn)
        self.line(f"  message from {who} for turn {turn}: {preview(str(data.get('text') or ''))}")


class RunWatcher:
    """Follows one run and reports what changed to a renderer.

    :param handle: The run.
    :param renderer: Where lines go.
    :param interval: Seconds between polls.
    :param events: Show each model reply, tool call and decision (``agent watch``); False shows
        only the step, waiting calls, problems and the end (``agent run --wait``).
    """

    def __init__(
        self, handle: AgentRunHandle, renderer: Renderer, interval: float = POLL_SECONDS, events: bool = True
    ) -> None:
        self.handle = handle
        self.out = renderer
        self.interval = interval
        self.events = events
        self._history_key: Any = None
        self._events_seen = 0
        self._last_seen: tuple[int, int] = (0, 0)
        self._decoder = HistoryDecoder(handle.client.data_converter)
        self._model_replies = 0
        self._replies_before_run = 0  # model replies shown for the runs before this one (continue-as-new)
        self._position: tuple[int, str] | None = None
        self._pending: tuple[str, ...] = ()
        self._problems: set[str] = set()
        #: Turn lines are shown for sessions only (a one-turn run's turn says nothing new).
        self._session = False
        self._failing_error: str | None = None
        #: The run's live events (tokens included) when it publishes them; history otherwise.
        self._transcript = WatchTranscript(renderer, handle.run_id, self)
        self._stream: asyncio.Task[None] | None = None
        self._stream_failed = False
        self._status_read_at = -1  # the history length when run_status was last read

    async def run(self) -> int:
        """Watch until the run ends; returns 0 when it completed, 1 when it did not."""
        run_id = self.handle.run_id
        health = await self.handle.health()  # raises RPCError NOT_FOUND for an unknown run
        self.out.line(
            f"watching run {run_id} ({health.status.lower()}) until it ends; Ctrl-C stops watching, not the run"
        )
        if self.events:
            await self._read_session()
            self._stream = asyncio.create_task(self._follow_events())
        try:
            return await self._poll(health)
        finally:
            if self._stream is not None:
                self._stream.cancel()

    async def _poll(self, health: RunHealth) -> int:
        while True:
            if self._stream is None or self._stream_failed:
                await self._read_history()
            if health.status != "RUNNING":
                await self._drain_events()
                return await self._finish(health)
            # a stuck run cannot answer the query, and one whose history did not grow has nothing new
            if health.failing_workflow_task is None and health.history_length != self._status_read_at:
                self._status_read_at = health.history_length
                await self._read_status()
            self._report_problems(health)
            await asyncio.sleep(self.interval)
            health = await self.handle.health()

    # -- the live events -------------------------------------------------------------------------

    async def _follow_events(self) -> None:
        """Print the run's events as they are published (``AgentRunHandle.events``). A run that
        publishes none (its stream cannot be read) is followed through its history instead."""
        seen = False
        try:
            async for event in self.handle.events():
                seen = True
                self._transcript.show(event)
        except (RPCError, WorkflowQueryFailedError, WorkflowUpdateFailedError) as err:
            if seen:
                self._problem(f"run {self.handle.run_id}: its live events stopped: {preview(str(err))}")
            self._stream_failed = True

    async def _drain_events(self) -> None:
        """Let the stream deliver the events of an ended run (up to ``run_ended``) before the end
        is printed; a stream that does not end in time is dropped."""
        if self._stream is None or self._stream_failed:
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._stream), DRAIN_SECONDS)
        except TimeoutError:
            self._problem(f"run {self.handle.run_id}: its last live events did not arrive within {DRAIN_SECONDS} s")
        if self._stream_failed:  # it could not be read after all: the history says what happened
            await self._read_history()
        self.out.end_partial()

    async def _read_session(self) -> None:
        """Whether the run is a session (its turn lines are worth showing), from its first event."""
        try:
            async for event in self.handle.workflow.fetch_history_events():
                for item in await self._decoder.decode_all(event):
                    if item.kind == "run_started":
                        self._on_item(item)
                break
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                raise
        self._decoder = HistoryDecoder(self.handle.client.data_converter)

    # -- pieces of one poll --------------------------------------------------------------------

    async def _read_status(self) -> None:
        try:
            status = await self.handle.workflow.query(
                RUN_STATUS_QUERY, result_type=RunStatus, rpc_timeout=timedelta(seconds=QUERY_SECONDS)
            )
        except (WorkflowQueryFailedError, RPCError) as err:
            self._status_read_at = -1  # ask again at the next poll
            if isinstance(err, RPCError) and err.status == RPCStatusCode.FAILED_PRECONDITION:
                return  # its workflow task failed since health was read: the next poll reports it
            # No worker, or the query itself failed: say which.
            description = await self.handle.workflow.describe()
            workers = await workers_of(self.handle.client, description.task_queue)
            why = (
                workers.describe() if not workers.alive else f"the run_status query did not answer: {preview(str(err))}"
            )
            self._problem(f"run {self.handle.run_id}: {why}")
            return
        self._show_position(status)
        await self._show_pending(status)

    def _show_position(self, status: RunStatus) -> None:
        position = (status.step_count, status.phase)
        if position != self._position:
            self._position = position
            self.out.position(f"step {status.step_count}: {status.phase}")

    async def _show_pending(self, status: RunStatus) -> None:
        if not status.waiting_for_approval:
            if self._pending:
                self.out.line("no longer waiting for approval")
            self._pending = ()
            return
        try:
            pending = await self.handle.pending_confirmations(timeout=timedelta(seconds=QUERY_SECONDS))
        except ConfirmationError as err:
            self._problem(f"run {self.handle.run_id}: {err}")
            return
        ids = tuple(p.tool_call_id for p in pending)
        if ids == self._pending:
            return
        self._pending = ids
        for p in pending:
            self.out.line(waiting_line(self.handle.run_id, p))
            self.out.line(f"  {describe_call(p.tool_name, p.tool_params)}  (or: agent reject / agent modify)")

    def _report_problems(self, health: RunHealth) -> None:
        run_id = self.handle.run_id
        task = health.failing_workflow_task
        if task is None:
            if self._failing_error is not None:
                self.out.line(f"run {run_id} resumed: its workflow task no longer fails")
                self._failing_error = None
        elif task.error != self._failing_error:  # once per error, not once per attempt
            self._failing_error = task.error
            for line in failing_task_lines(run_id, task):
                self.out.line(f"problem: {line}")
        for line in health_lines(run_id, health.model_copy(update={"failing_workflow_task": None})):
            self._problem(line)

    def _problem(self, line: str) -> None:
        if line not in self._problems:
            self._problems.add(line)
            self.out.line(f"problem: {line}")

    async def _read_history(self) -> None:
        """Report what happened since the last poll (from the run's history)."""
        events = []
        try:
            async for event in self.handle.workflow.fetch_history_events():
                events.append(event)
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                raise
            self._problem(f"run {self.handle.run_id}: reading its history failed: {err.message}")
            return
        if not events:
            return
        key = events[0].event_time.ToNanoseconds()  # a new run after continue-as-new: start over
        if key != self._history_key or self._rewritten(events):
            # After a rewind (Temporal's reset) the new run starts with a copy of the old one's
            # events: read them again quietly and show only what comes from the reset on.
            copied = copied_before_reset(events) if key == self._history_key else 0
            if key != self._history_key:
                self._replies_before_run = self._model_replies
            self._history_key, self._events_seen = key, copied
            self._decoder = HistoryDecoder(self.handle.client.data_converter)
            self._model_replies = self._replies_before_run
            for event in events[:copied]:
                items = await self._decoder.decode_all(event)
                self._model_replies += sum(item.kind == "model_replied" for item in items)
        for event in events[self._events_seen :]:
            for item in await self._decoder.decode_all(event) if self.events else []:
                if item.kind == "turn_ended":
                    await self._show_turn_end(item)
                else:
                    self._on_item(item)
        self._events_seen = len(events)
        self._last_seen = (events[-1].event_id, events[-1].event_time.ToNanoseconds())

    def _rewritten(self, events: list) -> bool:
        """True when the history no longer holds the last event seen (the run was reset)."""
        if not self._events_seen:
            return False
        if len(events) < self._events_seen:
            return True
        last = events[self._events_seen - 1]
        return (last.event_id, last.event_time.ToNanoseconds()) != self._last_seen

    async def _show_turn_end(self, item: HistoryItem) -> None:
        """``turn N ended: exit_reason text``; the reason comes from the run (``turn_result``), the
        history holds only the turn's number."""
        reason = "unknown (the run did not answer)"
        try:
            result = await self.handle.workflow.query(
                TURN_RESULT_QUERY,
                item.turn,
                result_type=TurnResult | None,
                rpc_timeout=timedelta(seconds=QUERY_SECONDS),
            )
            if result is not None:
                reason = str(result.exit_reason)
        except (WorkflowQueryFailedError, RPCError):
            pass  # no worker: the line still shows, without the reason
        self.out.line(f"turn {item.turn} ended: exit_reason {reason}; waiting for the user's next message")

    def _on_item(self, item: HistoryItem) -> None:
        if item.kind == "run_started":
            self._session = item.run_input is not None and item.run_input.wait_for_user_seconds is not None
        elif item.kind == "turn_started":
            if self._session:
                self.out.line(f"turn {item.turn} started")
        elif item.kind == "run_rewound":
            self.out.line(f"  run rewound (reset from Temporal run {item.base_run_id}): {item.message}")
        elif item.kind == "message_received":
            message = item.user_message
            who = message.sender if message and message.sender else "someone (no sender)"
            text = preview(message.text) if message else "(unreadable)"
            where = f" for turn {item.turn}" if item.turn is not None else " by signal"
            self.out.line(f"  message from {who}{where}: {text}")
        elif item.kind == "model_replied":
            self._model_replies += 1
            message = item.model_output.message if item.model_output else None
            if message is None:
                self.out.line(f"  model call {self._model_replies} answered")
            elif message.tool_calls:
                calls = ", ".join(call.tool_name for call in message.tool_calls)
                self.out.line(f"  model call {self._model_replies} asked for: {calls}")
            else:
                self.out.line(f"  model call {self._model_replies} answered: {preview(message.text or '')}")
        elif item.kind == "tool_finished":
            output = item.tool_output
            outcome = "done" if output is None else f"{'error: ' if output.error else '-> '}{preview(output.result)}"
            self.out.line(f"  tool {self._call_text(item.tool_call)} {outcome}")
        elif item.kind == "tool_failed":
            self.out.line(f"  tool {self._call_text(item.tool_call)} failed: {preview(item.message)}")
        elif item.kind == "approval_timed_out":  # no one's decision: the strategy's on_timeout applied
            self.out.line(f"  timed out, no one decided: {item.summary.removeprefix(CONFIRMATION_TIMER_PREFIX)}")
        elif item.kind == "approval_escalated":
            self.out.line(f"  escalated: {item.summary.removeprefix(ESCALATION_TIMER_PREFIX)}")
        elif item.kind == "decision_sent":
            # a signal the run refused is in history too: it was sent, not necessarily taken
            how = "decided" if item.via == "update" else "decision sent by signal"
            decision = item.decision
            if decision is None:  # a payload this client cannot read
                self.out.line(f"  {how}")
                return
            who = f" by {decision.approver}" if decision.approver else ""
            feedback = f": {preview(decision.feedback)}" if decision.feedback else ""
            self.out.line(f"  {how}: {decision.tool_call_id} {decision.action}{who}{feedback}")

    @staticmethod
    def _call_text(call: ToolInvocationInput | None) -> str:
        if call is None:
            return "call"
        return f"{describe_call(call.tool_call.tool_name, call.tool_call.arguments)} [step {call.step}]"

    async def _finish(self, health: RunHealth) -> int:
        run_id = self.handle.run_id
        if health.status == "COMPLETED":
            try:
                result = await self.handle.result()
            except WorkflowFailureError as err:  # closed between describe() and here
                self.out.line(f"run {run_id} failed: {err.cause or err}")
                return 1
            counts = ", ".join(f"{name} x{n}" for name, n in result.tool_call_counts.items()) or "none"
            self.out.line(
                f"run {run_id} completed: exit reason {result.exit_reason}, {result.step_count} steps, tool calls: {counts}"
            )
            if not self.events:  # `agent run --wait`: the tool errors the event lines would have shown
                for error in tool_errors(result.messages):
                    self.out.line(f"  {error.line()}")
            ending = await ending_line(self.handle.workflow, self.handle.client.data_converter, result)
            if ending is not None:
                self.out.line(ending)
                for cut in cut_calls(result):  # cut by the cancel: no tool_finished event says so
                    self.out.line(f"  cut: {cut.line()}")
            if result.last_message is not None and result.last_message.text:
                self.out.line(f"final answer: {result.last_message.text}")
            return 0
        failure = health.failure or "no failure message"
        self.out.line(f"run {run_id} {health.status.lower()}: {failure}")
        return 1


async def watch(
    handle: AgentRunHandle, plain: bool | None = None, interval: float = POLL_SECONDS, events: bool = True
) -> int:
    """Follow ``handle``'s run until it ends; returns the process exit code (0: completed).

    :param events: As for :class:`RunWatcher`.
    """
    with make_renderer(plain) as renderer:
        return await RunWatcher(handle, renderer, interval, events).run()
