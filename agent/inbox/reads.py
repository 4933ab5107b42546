"""What the inbox reads about a run, from Temporal alone: its history, ``describe()`` and queries.

The call page needs the conversation that led to a call and the tool's JSON schema; the run page
needs a timeline. Both come from the run's history, read through the client (no workflow query is
added, so replay is unaffected):

- the workflow input (``AgentRunInput``): the agent spec (tools with their schemas, hooks with
  their strategies) and the first messages;
- each agent model call (``chat_completion``): the messages it sent (only the new ones when the
  worker stores the conversation by reference, see ``workflows/stored_conversation.py``: the
  client rebuilds the whole from the heads it has seen) and the reply;
- tool calls (``invoke_tool``), decisions (``submit_tool_decision`` Update results, which are
  ``DecisionRecord``s, and ``tool_decision`` Signals) and how the run ended.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.model import ModelCallInput, ModelCallOutput
from activities.tool_invocation import ToolInvocationInput, ToolInvocationOutput
from core.messages import ChatMessage
from core.payloads import AgentRunInput
from core.tool_records import OFFLOADED_META_KEY
from core.tools import ToolSpec
from core.wire import CHAT_COMPLETION_ACTIVITY, INVOKE_TOOL_ACTIVITY
from hooks.human_in_the_loop.dataclasses import DecisionRecord, ToolDecision
from hooks.human_in_the_loop.hooks import CONFIRMATION_KEY
from hooks.human_in_the_loop.wire import SUBMIT_TOOL_DECISION_UPDATE, TOOL_DECISION_SIGNAL

#: Characters of a tool result or message shown in a timeline line.
PREVIEW_CHARS = 160


class TimelineEntry(BaseModel):
    """One line of a run's timeline.

    :param at: When it happened (the history event's time).
    :param kind: ``start``, ``model``, ``tool``, ``decision``, ``signal`` or ``end``.
    :param step: The agent step, when known.
    :param text: What happened, in one line.
    :param record: The decision's audit record, for ``decision`` entries.
    """

    at: datetime | None
    kind: str
    step: int | None = None
    text: str
    record: DecisionRecord | None = None


class ShownMessage(BaseModel):
    """A conversation message as the call page shows it.

    :param role: ``user``, ``assistant``, ``tool`` or ``system``.
    :param text: Its text (a tool result's text for tool messages).
    :param tool_calls: ``name(arguments)`` of each call an assistant message asks for.
    :param offloaded: References of offloaded results whose text here is only a pointer.
    :param error: True for a tool message that reports an error (or a rejection).
    """

    role: str
    text: str = ""
    tool_calls: list[str] = Field(default_factory=list)
    offloaded: list[str] = Field(default_factory=list)
    error: bool = False


class RunRead(BaseModel):
    """What the inbox learned from one run's history.

    :param run_id: The run (workflow id).
    :param agent: The agent spec of the run (``Agent.to_dict()``), None if the input was unreadable.
    :param tools: The run's tools by name.
    :param conversation: The conversation as of the last model reply (what led to a pending call).
    :param conversation_complete: False when earlier messages live only in stored segments this
        history does not show (a run continued as new with a stored conversation).
    :param timeline: Steps, tool calls, decisions, in history order.
    :param decisions: Accepted decisions by tool call id.
    :param status: Temporal's status name (``RUNNING``, ``COMPLETED``, ...).
    """

    run_id: str
    agent: dict[str, Any] | None = None
    tools: dict[str, ToolSpec] = Field(default_factory=dict)
    conversation: list[ChatMessage] = Field(default_factory=list)
    conversation_complete: bool = True
    timeline: list[TimelineEntry] = Field(default_factory=list)
    decisions: dict[str, DecisionRecord] = Field(default_factory=dict)
    status: str = "UNKNOWN"


def preview(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    """``text`` on one line, cut at ``limit`` characters (ending in "…" when cut)."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """``name({"a": 1})``, cut to a preview."""
    return f"{name}({preview(json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str))})"


def shown(message: ChatMessage) -> ShownMessage:
    """The display form of one message."""
    result = message.tool_call_result
    if result is not None:
        offloaded = message.meta.get(OFFLOADED_META_KEY) or []
        return ShownMessage(
            role="tool", text=result.result, offloaded=[str(r) for r in offloaded], error=bool(result.error)
        )
    return ShownMessage(
        role=message.role.value,
        text=message.text or "",
        tool_calls=[call_text(c.tool_name, c.arguments) for c in message.tool_calls],
    )


def _time(event: HistoryEvent) -> datetime | None:
    if not event.HasField("event_time"):
        return None
    return event.event_time.ToDatetime(tzinfo=UTC)


def _record_decisions(messages: list[ChatMessage], into: dict[str, DecisionRecord]) -> None:
    """Decision records kept in the conversation (confirmed calls' ``extra``, rejections' ``meta``),
    which also covers decisions made by a timeout (no Update or Signal in history)."""
    for message in messages:
        for call in message.tool_calls:
            if call.extra and isinstance(call.extra.get(CONFIRMATION_KEY), dict):
                record = DecisionRecord.model_validate(call.extra[CONFIRMATION_KEY])
                into.setdefault(record.tool_call_id, record)
        if isinstance(message.meta.get(CONFIRMATION_KEY), dict):
            record = DecisionRecord.model_validate(message.meta[CONFIRMATION_KEY])
            into.setdefault(record.tool_call_id, record)


class HistoryReader:
    """Reads one run's history into a :class:`RunRead`.

    :param client: A client with the project's data converter (``agent.connect``), so payloads
        kept in external storage are fetched back.
    """

    def __init__(self, client: Client) -> None:
        self.client = client

    async def read(self, run_id: str) -> RunRead:
        """Read the latest run (after any continue-as-new) of ``run_id``.

        :raises RPCError: NOT_FOUND when there is no such run.
        """
        handle = self.client.get_workflow_handle(run_id)
        description = await handle.describe()
        out = RunRead(run_id=run_id, status=description.status.name if description.status else "UNKNOWN")
        events = [event async for event in handle.fetch_history_events()]
        await _HistoryReader(self.client, out).run(events)
        return out


class _HistoryReader:
    """Reads a run's history events into its :class:`RunRead`, in one pass, keeping what the pages need."""

    def __init__(self, client: Client, out: RunRead) -> None:
        self.converter = client.data_converter
        self.out = out
        self.by_head: dict[str, list[ChatMessage]] = {}
        self.model_sent: dict[int, tuple[list[ChatMessage], int | None]] = {}
        self.tool_calls: dict[int, ToolInvocationInput | None] = {}
        self.updates: dict[str, ToolDecision] = {}
        self.step = 0
        self.first_step = 0
        self.agent_calls = 0
        self.model_calls = 0

    async def _decode(self, payloads: Any, kind: type) -> Any:
        try:
            [value] = await self.converter.decode(payloads, [kind])
        except Exception:  # a payload this client cannot read: the line still shows
            return None
        return value

    def add(self, event: HistoryEvent, kind: str, text: str, **extra: Any) -> None:
        self.out.timeline.append(TimelineEntry(at=_time(event), kind=kind, step=self.step, text=text, **extra))

    async def run(self, events: list[HistoryEvent]) -> None:
        for event in events:
            await self.on_event(event)
        _record_decisions(self.out.conversation, self.out.decisions)

    async def on_event(self, event: HistoryEvent) -> None:  # noqa: C901 - one branch per event kind
        if event.HasField("workflow_execution_started_event_attributes"):
            await self._started(event)
        elif event.HasField("activity_task_scheduled_event_attributes"):
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == CHAT_COMPLETION_ACTIVITY:
                request = await self._decode(attrs.input.payloads, ModelCallInput)
                if request is not None and request.purpose == "agent":
                    # One agent model call per step: the step is the calls made before this one.
                    self.step = self.first_step + self.agent_calls
                    self.agent_calls += 1
                    self.model_sent[event.event_id] = (self._sent(request), None)
            elif attrs.activity_type.name == INVOKE_TOOL_ACTIVITY:
                call = await self._decode(attrs.input.payloads, ToolInvocationInput)
                self.tool_calls[event.event_id] = call
                if call is not None:
                    self.step = call.step
                    self.add(
                        event, "tool", f"tool {call_text(call.tool_call.tool_name, call.tool_call.arguments)} started"
                    )
        elif event.HasField("activity_task_completed_event_attributes"):
            attrs = event.activity_task_completed_event_attributes
            if attrs.scheduled_event_id in self.model_sent:
                await self._model_reply(event, attrs.scheduled_event_id, attrs.result.payloads)
            elif attrs.scheduled_event_id in self.tool_calls:
                call = self.tool_calls.pop(attrs.scheduled_event_id)
                output = await self._decode(attrs.result.payloads, ToolInvocationOutput)
                name = call.tool_call.tool_name if call else "call"
                outcome = "done" if output is None else ("error: " if output.error else "-> ") + preview(output.result)
                self.add(event, "tool", f"tool {name} {outcome}")
        elif event.HasField("activity_task_failed_event_attributes"):
            attrs = event.activity_task_failed_event_attributes
            if attrs.scheduled_event_id in self.tool_calls:
                call = self.tool_calls.pop(attrs.scheduled_event_id)
                name = call.tool_call.tool_name if call else "call"
                self.add(event, "tool", f"tool {name} failed: {preview(attrs.failure.message)}")
            elif self.model_sent.pop(attrs.scheduled_event_id, None) is not None:
                self.add(event, "model", f"model call failed: {preview(attrs.failure.message)}")
        elif event.HasField("workflow_execution_update_accepted_event_attributes"):
            attrs = event.workflow_execution_update_accepted_event_attributes
            if attrs.accepted_request.input.name == SUBMIT_TOOL_DECISION_UPDATE:
                decision = await self._decode(attrs.accepted_request.input.args.payloads, ToolDecision)
                if decision is not None:
                    self.updates[attrs.protocol_instance_id] = decision
        elif event.HasField("workflow_execution_update_completed_event_attributes"):
            attrs = event.workflow_execution_update_completed_event_attributes
            if attrs.outcome.HasField("success"):
                record = await self._decode(attrs.outcome.success.payloads, DecisionRecord)
                if isinstance(record, DecisionRecord):
                    self._decision(event, record)
        elif event.HasField("workflow_execution_signaled_event_attributes"):
            attrs = event.workflow_execution_signaled_event_attributes
            if attrs.signal_name == TOOL_DECISION_SIGNAL:
                decision = await self._decode(attrs.input.payloads, ToolDecision)
                if decision is not None:
                    who = decision.approver or "no approver"
                    self.add(event, "signal", f"signal: {decision.action} {decision.tool_call_id} by {who}")
        else:
            self._end(event)

    async def _started(self, event: HistoryEvent) -> None:
        attrs = event.workflow_execution_started_event_attributes
        run_input = await self._decode(attrs.input.payloads, AgentRunInput)
        if run_input is None:
            self.add(event, "start", "run started (its input could not be read)")
            return
        self.out.agent = run_input.agent
        for raw in run_input.agent.get("tools", []):
            spec = ToolSpec.model_validate(raw)
            self.out.tools[spec.name] = spec
        if run_input.snapshot is not None:
            messages = run_input.snapshot.state.get("messages") or []
            self.out.conversation = [ChatMessage.model_validate(m) for m in messages]
            self.step = self.first_step = int(run_input.snapshot.state.get("step_count") or 0)
            self.add(event, "start", f"run continued as new (continuation {run_input.snapshot.continuations})")
        else:
            self.out.conversation = list(run_input.messages)
            first = next((m.text for m in run_input.messages if m.role.value == "user" and m.text), "")
            self.add(event, "start", f"run started: {preview(first)}")

    def _sent(self, request: ModelCallInput) -> list[ChatMessage]:
        if request.conversation_head is None:
            return list(request.messages)
        base = self.by_head.get(request.conversation_head)
        if base is None:  # stored before this history began: only the tail is known here
            self.out.conversation_complete = False
            base = []
        return [*base, *request.messages]

    async def _model_reply(self, event: HistoryEvent, scheduled: int, payloads: Any) -> None:
        sent, _ = self.model_sent.pop(scheduled)
        output = await self._decode(payloads, ModelCallOutput)
        self.model_calls += 1
        if output is None:
            self.add(event, "model", f"model call {self.model_calls} answered")
            return
        conversation = [*sent, output.message]
        if output.conversation_head:
            self.by_head[output.conversation_head] = conversation
        self.out.conversation = conversation
        _record_decisions(sent, self.out.decisions)
        message = output.message
        if message.tool_calls:
            asked = ", ".join(c.tool_name for c in message.tool_calls)
            self.add(event, "model", f"model call {self.model_calls} asked for: {asked}")
        else:
            self.add(event, "model", f"model call {self.model_calls} answered: {preview(message.text)}")

    def _decision(self, event: HistoryEvent, record: DecisionRecord) -> None:
        self.out.decisions[record.tool_call_id] = record
        who = record.approver or "nobody (timeout)"
        text = f"{record.action} of {record.tool_name} call {record.tool_call_id} by {who} via {record.via}"
        self.add(event, "decision", text, record=record)

    def _end(self, event: HistoryEvent) -> None:
        if event.HasField("workflow_execution_completed_event_attributes"):
            self.add(event, "end", "run completed")
        elif event.HasField("workflow_execution_failed_event_attributes"):
            message = event.workflow_execution_failed_event_attributes.failure.message
            self.add(event, "end", f"run failed: {preview(message)}")
        elif event.HasField("workflow_execution_continued_as_new_event_attributes"):
            self.add(event, "end", "run continued as new")
        elif event.HasField("workflow_execution_terminated_event_attributes"):
            self.add(event, "end", "run terminated")
        elif event.HasField("workflow_execution_canceled_event_attributes"):
            self.add(event, "end", "run canceled")
        elif event.HasField("workflow_execution_timed_out_event_attributes"):
            self.add(event, "end", "run timed out")


def is_not_found(err: BaseException) -> bool:
    """True for Temporal's NOT_FOUND (no such run)."""
    return isinstance(err, RPCError) and err.status == RPCStatusCode.NOT_FOUND
