"""What the inbox shows of a run, from Temporal alone: its ``describe()`` and its history, as
:mod:`agent.run_history` decodes it.

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
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.model import ModelCallInput
from agent.run_history import HistoryItem, read_history
from core.messages import ChatMessage
from core.tool_records import OFFLOADED_META_KEY
from core.tools import ToolSpec
from hooks.human_in_the_loop.dataclasses import DecisionRecord
from hooks.human_in_the_loop.hooks import CONFIRMATION_KEY

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
    :param rewinds: The reasons of each rewind (Temporal's reset) in this run's history, oldest first.
    """

    run_id: str
    agent: dict[str, Any] | None = None
    tools: dict[str, ToolSpec] = Field(default_factory=dict)
    conversation: list[ChatMessage] = Field(default_factory=list)
    conversation_complete: bool = True
    timeline: list[TimelineEntry] = Field(default_factory=list)
    decisions: dict[str, DecisionRecord] = Field(default_factory=dict)
    status: str = "UNKNOWN"
    rewinds: list[str] = Field(default_factory=list)


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
        fold = _Fold(out)
        async for item in read_history(handle, self.client.data_converter):
            fold.on_item(item)
        _record_decisions(out.conversation, out.decisions)
        return out


class _Fold:
    """One pass over the decoded history; keeps what the pages need."""

    def __init__(self, out: RunRead) -> None:
        self.out = out
        self.by_head: dict[str, list[ChatMessage]] = {}
        self.step = 0
        self.first_step = 0
        self.agent_calls = 0
        self.model_calls = 0

    def add(self, item: HistoryItem, kind: str, text: str, **extra: Any) -> None:
        self.out.timeline.append(TimelineEntry(at=item.at, kind=kind, step=self.step, text=text, **extra))

    def on_item(self, item: HistoryItem) -> None:  # noqa: C901 - one branch per item kind
        agent_call = item.model_input is not None and item.model_input.purpose == "agent"
        if item.kind == "run_started":
            self._started(item)
        elif item.kind == "model_called" and agent_call:
            # One agent model call per step: the step is the calls made before this one.
            self.step = self.first_step + self.agent_calls
            self.agent_calls += 1
        elif item.kind == "model_replied" and agent_call:
            self._model_reply(item)
        elif item.kind == "model_failed" and agent_call:
            self.add(item, "model", f"model call failed: {preview(item.message)}")
        elif item.kind == "tool_started" and item.tool_call is not None:
            call = item.tool_call
            self.step = call.step
            self.add(item, "tool", f"tool {call_text(call.tool_call.tool_name, call.tool_call.arguments)} started")
        elif item.kind == "tool_finished":
            output = item.tool_output
            outcome = "done" if output is None else ("error: " if output.error else "-> ") + preview(output.result)
            self.add(item, "tool", f"tool {self._tool_name(item)} {outcome}")
        elif item.kind == "tool_failed":
            self.add(item, "tool", f"tool {self._tool_name(item)} failed: {preview(item.message)}")
        elif item.kind == "decision_recorded" and item.record is not None:
            self._decision(item, item.record)
        elif item.kind == "decision_sent" and item.via == "signal" and item.decision is not None:
            decision = item.decision
            who = decision.approver or "no approver"
            self.add(item, "signal", f"signal: {decision.action} {decision.tool_call_id} by {who}")
        elif item.kind == "run_rewound":
            self.out.rewinds.append(item.message)
            self.add(item, "rewind", f"run rewound: {preview(item.message)}")
        elif item.kind == "run_ended":
            self.add(item, "end", f"run {item.ending}" + (f": {preview(item.message)}" if item.message else ""))

    @staticmethod
    def _tool_name(item: HistoryItem) -> str:
        return item.tool_call.tool_call.tool_name if item.tool_call else "call"

    def _started(self, item: HistoryItem) -> None:
        run_input = item.run_input
        if run_input is None:
            self.add(item, "start", "run started (its input could not be read)")
            return
        self.out.agent = run_input.agent
        for raw in run_input.agent.get("tools", []):
            spec = ToolSpec.model_validate(raw)
            self.out.tools[spec.name] = spec
        if run_input.snapshot is not None:
            messages = run_input.snapshot.state.get("messages") or []
            self.out.conversation = [ChatMessage.model_validate(m) for m in messages]
            self.step = self.first_step = int(run_input.snapshot.state.get("step_count") or 0)
            self.add(item, "start", f"run continued as new (continuation {run_input.snapshot.continuations})")
        else:
            self.out.conversation = list(run_input.messages)
            first = next((m.text for m in run_input.messages if m.role.value == "user" and m.text), "")
            self.add(item, "start", f"run started: {preview(first)}")

    def _sent(self, request: ModelCallInput) -> list[ChatMessage]:
        if request.conversation_head is None:
            return list(request.messages)
        base = self.by_head.get(request.conversation_head)
        if base is None:  # stored before this history began: only the tail is known here
            self.out.conversation_complete = False
            base = []
        return [*base, *request.messages]

    def _model_reply(self, item: HistoryItem) -> None:
        assert item.model_input is not None
        sent = self._sent(item.model_input)
        output = item.model_output
        self.model_calls += 1
        if output is None:
            self.add(item, "model", f"model call {self.model_calls} answered")
            return
        conversation = [*sent, output.message]
        if output.conversation_head:
            self.by_head[output.conversation_head] = conversation
        self.out.conversation = conversation
        _record_decisions(sent, self.out.decisions)
        message = output.message
        if message.tool_calls:
            asked = ", ".join(c.tool_name for c in message.tool_calls)
            self.add(item, "model", f"model call {self.model_calls} asked for: {asked}")
        else:
            self.add(item, "model", f"model call {self.model_calls} answered: {preview(message.text)}")

    def _decision(self, item: HistoryItem, record: DecisionRecord) -> None:
        self.out.decisions[record.tool_call_id] = record
        who = record.approver or "nobody (timeout)"
        text = f"{record.action} of {record.tool_name} call {record.tool_call_id} by {who} via {record.via}"
        self.add(item, "decision", text, record=record)


def is_not_found(err: BaseException) -> bool:
    """True for Temporal's NOT_FOUND (no such run)."""
    return isinstance(err, RPCError) and err.status == RPCStatusCode.NOT_FOUND
