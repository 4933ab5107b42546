"""``agent watch RUN``: follow one run live until it ends.

Every ~0.5 s the watcher reads ``describe()`` (``AgentRunHandle.health()``), the history events it
has not seen yet (tool calls as they complete, with their arguments and a preview of the result;
decisions on confirmations, with who decided) and, while the run is open, the ``run_status`` query
(step and phase) and, when the run waits for a person, the pending calls. Problems Temporal reports (a workflow task that keeps failing, a
model call being retried) are printed once each. At the end it prints the exit reason (or the
failure) and returns the exit code: 0 when the run completed, 1 otherwise.

On a terminal the step and phase sit on a ``rich`` progress line with the events scrolling above
it; elsewhere (a pipe, a log file, a test) every event is one plain line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import timedelta
from typing import Any, TextIO

from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowFailureError, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from activities.model import ModelCallOutput
from activities.tool_invocation import ToolInvocationInput, ToolInvocationOutput
from agent.client import AgentRunHandle
from core.payloads import RunHealth, RunStatus
from core.wire import CHAT_COMPLETION_ACTIVITY, INVOKE_TOOL_ACTIVITY, RUN_STATUS_QUERY
from hooks.human_in_the_loop.client import ConfirmationError
from hooks.human_in_the_loop.dataclasses import ToolDecision
from hooks.human_in_the_loop.wire import SUBMIT_TOOL_DECISION_UPDATE, TOOL_DECISION_SIGNAL

#: How often the watcher polls the run.
POLL_SECONDS = 0.5
#: How much of a tool result or argument list a line shows.
PREVIEW_CHARS = 120


def health_lines(run_id: str, health: RunHealth) -> list[str]:
    """One readable line per problem Temporal reports for the run."""
    lines = []
    if health.failure:
        lines.append(f"run {run_id} {health.status.lower()}: {health.failure}")
    if health.workflow_task_attempts > 1:
        lines.append(
            f"run {run_id}: its workflow task keeps failing (attempt {health.workflow_task_attempts}): "
            f"{health.workflow_task_error or 'no message'}"
        )
    for retry in health.retrying_activities:
        lines.append(
            f"run {run_id}: {retry.activity_type} is being retried (attempt {retry.attempt}): {retry.last_error}"
        )
    return lines


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe_call(tool_name: str, arguments: dict[str, Any]) -> str:
    args = ", ".join(f"{key}={json.dumps(value, default=str)}" for key, value in arguments.items())
    return f"{tool_name}({_preview(args)})"


# -- renderers ---------------------------------------------------------------------------------


class PlainRenderer:
    """One line per event, flushed at once (pipes, logs, tests)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def __enter__(self) -> PlainRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.out.flush()

    def line(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def position(self, text: str) -> None:
        self.line(text)


class RichRenderer:
    """A ``rich`` progress line (spinner, step and phase, elapsed time) with events printed above it."""

    def __init__(self) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), transient=True)
        self.task = self.progress.add_task("connecting", total=None)

    def __enter__(self) -> RichRenderer:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def line(self, text: str) -> None:
        self.progress.console.print(text, markup=False, highlight=False)

    def position(self, text: str) -> None:
        self.progress.update(self.task, description=text)


Renderer = PlainRenderer | RichRenderer


def make_renderer(plain: bool | None = None) -> Renderer:
    """Rich on a terminal, plain lines otherwise (or as ``plain`` says)."""
    if plain is None:
        plain = not sys.stdout.isatty()
    return PlainRenderer() if plain else RichRenderer()


# -- the watcher -------------------------------------------------------------------------------


class RunWatcher:
    """Follows one run and reports what changed to a renderer."""

    def __init__(self, handle: AgentRunHandle, renderer: Renderer, interval: float = POLL_SECONDS) -> None:
        self.handle = handle
        self.out = renderer
        self.interval = interval
        self._history_key: Any = None
        self._events_seen = 0
        self._scheduled: dict[int, ToolInvocationInput | None] = {}
        self._model_calls: set[int] = set()
        self._model_replies = 0
        self._position: tuple[int, str] | None = None
        self._pending: tuple[str, ...] = ()
        self._problems: set[str] = set()

    async def run(self) -> int:
        """Watch until the run ends; returns 0 when it completed, 1 when it did not."""
        run_id = self.handle.run_id
        health = await self.handle.health()  # raises RPCError NOT_FOUND for an unknown run
        self.out.line(f"watching run {run_id} ({health.status.lower()})")
        while True:
            await self._read_history()
            if health.status != "RUNNING":
                return await self._finish(health)
            await self._read_status()
            self._report_problems(health)
            await asyncio.sleep(self.interval)
            health = await self.handle.health()

    # -- pieces of one poll --------------------------------------------------------------------

    async def _read_status(self) -> None:
        try:
            status = await self.handle.workflow.query(
                RUN_STATUS_QUERY, result_type=RunStatus, rpc_timeout=timedelta(seconds=5)
            )
        except (WorkflowQueryFailedError, RPCError) as err:
            # No worker, or its workflow task keeps failing: health() says why on the next line.
            self._problem(f"run {self.handle.run_id}: the run_status query did not answer: {_preview(str(err))}")
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
            pending = await self.handle.pending_confirmations()
        except ConfirmationError as err:
            self._problem(f"run {self.handle.run_id}: {err}")
            return
        ids = tuple(p.tool_call_id for p in pending)
        if ids == self._pending:
            return
        self._pending = ids
        self.out.line(f"waiting for approval ({len(pending)} call{'s' if len(pending) != 1 else ''}):")
        for p in pending:
            self.out.line(f"  {p.tool_call_id}: {_describe_call(p.tool_name, p.tool_params)}")
        self.out.line(f"  decide with: agent approve {self.handle.run_id} CALL_ID  (or reject / modify)")

    def _report_problems(self, health: RunHealth) -> None:
        for line in health_lines(self.handle.run_id, health):
            self._problem(line)

    def _problem(self, line: str) -> None:
        if line not in self._problems:
            self._problems.add(line)
            self.out.line(f"problem: {line}")

    async def _read_history(self) -> None:
        """Report the tool calls completed since the last poll (from the run's history)."""
        events: list[HistoryEvent] = []
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
        if key != self._history_key:
            self._history_key, self._events_seen, self._scheduled, self._model_calls = key, 0, {}, set()
        for event in events[self._events_seen :]:
            await self._on_event(event)
        self._events_seen = len(events)

    async def _on_event(self, event: HistoryEvent) -> None:
        converter = self.handle.client.data_converter
        if event.HasField("activity_task_scheduled_event_attributes"):
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == INVOKE_TOOL_ACTIVITY:
                try:
                    [call] = await converter.decode(attrs.input.payloads, [ToolInvocationInput])
                except Exception:  # an input this client cannot read: still count the call
                    call = None
                self._scheduled[event.event_id] = call
            elif attrs.activity_type.name == CHAT_COMPLETION_ACTIVITY:
                self._model_calls.add(event.event_id)
        elif event.HasField("activity_task_completed_event_attributes"):
            attrs = event.activity_task_completed_event_attributes
            if attrs.scheduled_event_id in self._model_calls:
                self._model_calls.discard(attrs.scheduled_event_id)
                await self._show_model_reply(attrs.result.payloads)
                return
            if attrs.scheduled_event_id not in self._scheduled:
                return
            call = self._scheduled.pop(attrs.scheduled_event_id)
            try:
                [output] = await converter.decode(attrs.result.payloads, [ToolInvocationOutput])
                outcome = f"{'error: ' if output.error else '-> '}{_preview(output.result)}"
            except Exception:
                outcome = "done"
            self.out.line(f"  tool {self._call_text(call)} {outcome}")
        elif event.HasField("workflow_execution_update_accepted_event_attributes"):
            update = event.workflow_execution_update_accepted_event_attributes.accepted_request.input
            if update.name == SUBMIT_TOOL_DECISION_UPDATE:
                await self._show_decision(update.args.payloads, "decided")
        elif event.HasField("workflow_execution_signaled_event_attributes"):
            attrs = event.workflow_execution_signaled_event_attributes
            if attrs.signal_name == TOOL_DECISION_SIGNAL:
                # a signal the run refused is in history too: it was sent, not necessarily taken
                await self._show_decision(attrs.input.payloads, "decision sent by signal")
        elif event.HasField("activity_task_failed_event_attributes"):
            attrs = event.activity_task_failed_event_attributes
            if attrs.scheduled_event_id in self._scheduled:
                call = self._scheduled.pop(attrs.scheduled_event_id)
                self.out.line(f"  tool {self._call_text(call)} failed: {_preview(attrs.failure.message)}")

    async def _show_decision(self, payloads: Any, how: str) -> None:
        try:
            [decision] = await self.handle.client.data_converter.decode(payloads, [ToolDecision])
        except Exception:  # a payload this client cannot read
            self.out.line(f"  {how}")
            return
        who = f" by {decision.approver}" if decision.approver else ""
        feedback = f": {_preview(decision.feedback)}" if decision.feedback else ""
        self.out.line(f"  {how}: {decision.tool_call_id} {decision.action}{who}{feedback}")

    async def _show_model_reply(self, payloads: Any) -> None:
        self._model_replies += 1
        try:
            [output] = await self.handle.client.data_converter.decode(payloads, [ModelCallOutput])
        except Exception:
            self.out.line(f"  model call {self._model_replies} answered")
            return
        message = output.message
        if message.tool_calls:
            calls = ", ".join(call.tool_name for call in message.tool_calls)
            self.out.line(f"  model call {self._model_replies} asked for: {calls}")
        else:
            self.out.line(f"  model call {self._model_replies} answered: {_preview(message.text or '')}")

    @staticmethod
    def _call_text(call: ToolInvocationInput | None) -> str:
        if call is None:
            return "call"
        return f"{_describe_call(call.tool_call.tool_name, call.tool_call.arguments)} [step {call.step}]"

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
            if result.last_message is not None and result.last_message.text:
                self.out.line(f"final answer: {result.last_message.text}")
            return 0
        failure = health.failure or "no failure message"
        self.out.line(f"run {run_id} {health.status.lower()}: {failure}")
        return 1


async def watch(handle: AgentRunHandle, plain: bool | None = None, interval: float = POLL_SECONDS) -> int:
    """Follow ``handle``'s run until it ends; returns the process exit code (0: completed)."""
    with make_renderer(plain) as renderer:
        return await RunWatcher(handle, renderer, interval).run()
