"""A run's history, decoded once for everyone who shows it: ``agent watch``, the inbox's pages,
``agent status`` and ``AgentRunHandle.health``.

:class:`HistoryDecoder` turns Temporal history events into :class:`HistoryItem`s: the run's input,
each model call and its reply, each tool call and its result, decisions on confirmations (an
Update accepted, its ``DecisionRecord``, a Signal), a rewind (Temporal's reset, ``agent rewind``)
and how the run ended. Payloads go through the client's data converter (codecs and external
storage apply); one this client cannot read is None in the item, never an error, so a line can
still be shown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from temporalio.api.enums.v1 import WorkflowTaskFailedCause
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle
from temporalio.converter import DataConverter

from activities.model import ModelCallInput, ModelCallOutput
from activities.tool_invocation import ToolInvocationInput, ToolInvocationOutput
from core.converter import readable_failure
from core.payloads import AgentRunInput, MessageReceipt, UserMessage
from core.wire import (
    CHAT_COMPLETION_ACTIVITY,
    INVOKE_TOOL_ACTIVITY,
    SEND_MESSAGE_UPDATE,
    USER_MESSAGE_SIGNAL,
    WAITING_FOR_USER_MEMO_KEY,
)
from hooks.human_in_the_loop.dataclasses import DecisionRecord, ToolDecision
from hooks.human_in_the_loop.wire import (
    CONFIRMATION_TIMER_PREFIX,
    ESCALATION_TIMER_PREFIX,
    SUBMIT_TOOL_DECISION_UPDATE,
    TOOL_DECISION_SIGNAL,
)

ItemKind = Literal[
    "run_started",
    "model_called",
    "model_replied",
    "model_failed",
    "tool_started",
    "tool_finished",
    "tool_failed",
    "decision_sent",
    "decision_recorded",
    "approval_escalated",
    "approval_timed_out",
    "message_received",
    "turn_started",
    "turn_ended",
    "run_ended",
    "run_rewound",
]

#: How a run's last event reads, by the history event's field.
_ENDINGS = {
    "workflow_execution_completed_event_attributes": "completed",
    "workflow_execution_failed_event_attributes": "failed",
    "workflow_execution_continued_as_new_event_attributes": "continued as new",
    "workflow_execution_terminated_event_attributes": "terminated",
    "workflow_execution_canceled_event_attributes": "canceled",
    "workflow_execution_timed_out_event_attributes": "timed out",
}


@dataclass
class HistoryItem:
    """One thing that happened in a run, decoded.

    :param kind: What happened (see :data:`ItemKind`).
    :param at: The history event's time.
    :param run_input: ``run_started``: the workflow input (None if unreadable).
    :param model_input: ``model_*``: what the model call sent (None if unreadable).
    :param model_output: ``model_replied``: the reply (None if unreadable).
    :param tool_call: ``tool_*``: the tool invocation (None if unreadable).
    :param tool_output: ``tool_finished``: the tool's result (None if unreadable).
    :param decision: ``decision_sent``: the decision (None if unreadable).
    :param via: ``decision_sent``: ``update`` or ``signal`` (a Signal is in history even when the
        run ignored it).
    :param record: ``decision_recorded``: the audit record the run returned for an Update.
    :param summary: ``approval_escalated``/``approval_timed_out``: the confirmation timer's summary
        (``confirmation of add (call_1)``, ``escalation of add (call_1) to lead``). A timeout is
        no one's decision: ``on_timeout`` applied.
    :param message: ``*_failed`` and ``run_ended``: the failure or ending, in one line.
    :param ending: ``run_ended``: ``completed``, ``failed``, ``continued as new``, ...
    :param user_message: ``message_received``: the person's message (None if unreadable); ``via``
        says ``update`` (accepted, with ``receipt``) or ``signal`` (in history even if refused).
    :param receipt: ``message_received`` by Update: the run's receipt (message id, turn).
    :param turn: ``turn_started``/``turn_ended``: the turn's number; ``message_received``: the
        turn that sees the message (None for a Signal).
    :param preview: ``turn_ended``: the start of the turn's last message (from the run's memo).
    :param scheduled_by: ``model_called``/``tool_started``: the id of the ``WorkflowTaskCompleted``
        event whose commands scheduled the activity (where Temporal's reset can take the run back to).
    :param base_run_id: ``run_rewound``: the Temporal run id the run was reset from; ``message`` is
        the reset's reason.
    """

    kind: ItemKind
    at: datetime | None = None
    run_input: AgentRunInput | None = None
    model_input: ModelCallInput | None = None
    model_output: ModelCallOutput | None = None
    tool_call: ToolInvocationInput | None = None
    tool_output: ToolInvocationOutput | None = None
    decision: ToolDecision | None = None
    via: str = ""
    record: DecisionRecord | None = None
    message: str = ""
    ending: str = ""
    user_message: UserMessage | None = None
    receipt: MessageReceipt | None = None
    turn: int | None = None
    preview: str = ""
    scheduled_by: int = 0
    base_run_id: str = ""
    summary: str = ""


def describe_failure(failure: Failure) -> str:
    """A failure chain in one line: the outermost message (what failed: a hook's name, the step)
    and, when it says something else, the innermost cause with its type
    (``Activity task failed (innermost cause: APIConnectionError: Connection error.)``)."""
    outer = failure.message or "no message"
    inner = failure
    while inner.HasField("cause"):
        inner = inner.cause
    if inner is failure:
        return outer
    kind = inner.application_failure_info.type if inner.HasField("application_failure_info") else ""
    cause = f"{kind}: {inner.message}" if kind and not inner.message.startswith(kind) else inner.message
    said = not cause or cause in outer or (inner.message and inner.message in outer)  # the outer text quotes it
    return outer if said else f"{outer} (innermost cause: {cause})"


class HistoryDecoder:
    """Decodes one history (one run id's run, from its first event on) event by event.

    :param converter: The client's data converter (``client.data_converter``).
    """

    def __init__(self, converter: DataConverter) -> None:
        self.converter = converter
        self._models: dict[int, ModelCallInput | None] = {}
        self._tools: dict[int, ToolInvocationInput | None] = {}
        self._timers: dict[int, str] = {}  # confirmation timers started, by event id: their summary
        self._messages: dict[str, UserMessage | None] = {}  # send_message Updates accepted, by update id
        #: The turn under way (None between turns), and the last turn that began.
        self._open_turn: int | None = None
        self._last_turn = 0

    async def _decode(self, payloads: Any, kind: type) -> Any:
        try:
            [value] = await self.converter.decode(payloads, [kind])
        except Exception:  # a payload this client cannot read: the item still shows
            return None
        return value

    async def decode_all(self, event: HistoryEvent) -> list[HistoryItem]:
        """The items ``event`` stands for: :meth:`decode`'s, preceded by ``turn_started`` when the
        event begins a turn (the first agent model call after the start or a turn's end)."""
        item = await self.decode(event)
        if item is None:
            return []
        if item.kind == "run_ended" and event.HasField("workflow_execution_continued_as_new_event_attributes"):
            return [*await self._turn_ended_by_continue(event), item]
        starts = item.kind == "model_called" and self._open_turn is None
        if starts and (item.model_input is None or item.model_input.purpose == "agent"):
            self._last_turn += 1
            self._open_turn = self._last_turn
            return [HistoryItem("turn_started", item.at, turn=self._open_turn), item]
        return [item]

    async def decode(self, event: HistoryEvent) -> HistoryItem | None:  # noqa: C901 - one branch per event kind
        """The item ``event`` stands for, or None for an event nobody shows (``turn_started`` comes
        from :meth:`decode_all` only)."""
        at = event.event_time.ToDatetime(tzinfo=UTC) if event.HasField("event_time") else None
        if event.HasField("workflow_execution_started_event_attributes"):
            attrs = event.workflow_execution_started_event_attributes
            run_input = await self._decode(attrs.input.payloads, AgentRunInput)
            session = run_input.snapshot.session if run_input is not None and run_input.snapshot else None
            if session is not None:  # a continued conversation counts its turns on
                self._last_turn = session.turn - (0 if session.between_turns else 1)
            return HistoryItem("run_started", at, run_input=run_input)
        if event.HasField("workflow_properties_modified_event_attributes"):
            return await self._turn_ended(event.workflow_properties_modified_event_attributes, at)
        if event.HasField("timer_started_event_attributes") or event.HasField("timer_fired_event_attributes"):
            return await self._confirmation_timer(event, at)
        if event.HasField("activity_task_scheduled_event_attributes"):
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == CHAT_COMPLETION_ACTIVITY:
                request = await self._decode(attrs.input.payloads, ModelCallInput)
                self._models[event.event_id] = request
                return HistoryItem(
                    "model_called", at, model_input=request, scheduled_by=attrs.workflow_task_completed_event_id
                )
            if attrs.activity_type.name == INVOKE_TOOL_ACTIVITY:
                call = await self._decode(attrs.input.payloads, ToolInvocationInput)
                self._tools[event.event_id] = call
                return HistoryItem(
                    "tool_started", at, tool_call=call, scheduled_by=attrs.workflow_task_completed_event_id
                )
            return None
        if event.HasField("activity_task_completed_event_attributes"):
            attrs = event.activity_task_completed_event_attributes
            if attrs.scheduled_event_id in self._models:
                request = self._models.pop(attrs.scheduled_event_id)
                output = await self._decode(attrs.result.payloads, ModelCallOutput)
                return HistoryItem("model_replied", at, model_input=request, model_output=output)
            if attrs.scheduled_event_id in self._tools:
                call = self._tools.pop(attrs.scheduled_event_id)
                output = await self._decode(attrs.result.payloads, ToolInvocationOutput)
                return HistoryItem("tool_finished", at, tool_call=call, tool_output=output)
            return None
        if event.HasField("activity_task_failed_event_attributes"):
            attrs = event.activity_task_failed_event_attributes
            message = describe_failure(await readable_failure(attrs.failure, self.converter))
            if attrs.scheduled_event_id in self._tools:
                return HistoryItem(
                    "tool_failed", at, tool_call=self._tools.pop(attrs.scheduled_event_id), message=message
                )
            if attrs.scheduled_event_id in self._models:
                return HistoryItem(
                    "model_failed", at, model_input=self._models.pop(attrs.scheduled_event_id), message=message
                )
            return None
        if event.HasField("workflow_execution_update_accepted_event_attributes"):
            accepted = event.workflow_execution_update_accepted_event_attributes.accepted_request
            request = accepted.input
            if request.name == SEND_MESSAGE_UPDATE:  # shown once the receipt is in (the Update's completion)
                self._messages[accepted.meta.update_id] = await self._decode(request.args.payloads, UserMessage)
                return None
            if request.name != SUBMIT_TOOL_DECISION_UPDATE:
                return None
            decision = await self._decode(request.args.payloads, ToolDecision)
            return HistoryItem("decision_sent", at, decision=decision, via="update")
        if event.HasField("workflow_execution_update_completed_event_attributes"):
            completed = event.workflow_execution_update_completed_event_attributes
            outcome = completed.outcome
            if not outcome.HasField("success"):
                return None
            if completed.meta.update_id in self._messages:
                message = self._messages.pop(completed.meta.update_id)
                receipt = await self._decode(outcome.success.payloads, MessageReceipt)
                turn = receipt.turn if isinstance(receipt, MessageReceipt) else None
                return HistoryItem(
                    "message_received", at, user_message=message, receipt=receipt, via="update", turn=turn
                )
            record = await self._decode(outcome.success.payloads, DecisionRecord)
            return HistoryItem("decision_recorded", at, record=record) if isinstance(record, DecisionRecord) else None
        if event.HasField("workflow_execution_signaled_event_attributes"):
            attrs = event.workflow_execution_signaled_event_attributes
            if attrs.signal_name == USER_MESSAGE_SIGNAL:
                message = await self._decode(attrs.input.payloads, UserMessage)
                return HistoryItem("message_received", at, user_message=message, via="signal")
            if attrs.signal_name != TOOL_DECISION_SIGNAL:
                return None
            decision = await self._decode(attrs.input.payloads, ToolDecision)
            return HistoryItem("decision_sent", at, decision=decision, via="signal")
        if is_reset_event(event):
            attrs = event.workflow_task_failed_event_attributes
            return HistoryItem("run_rewound", at, message=attrs.failure.message, base_run_id=attrs.base_run_id)
        for field, ending in _ENDINGS.items():
            if event.HasField(field):
                message = await _ending_message(event, field, self.converter)
                return HistoryItem("run_ended", at, ending=ending, message=message)
        return None

    async def _confirmation_timer(self, event: HistoryEvent, at: datetime | None) -> HistoryItem | None:
        """A fired confirmation timer: the call expired (``approval_timed_out``) or was escalated."""
        if event.HasField("timer_started_event_attributes"):
            if event.user_metadata.HasField("summary"):
                summary = await self._decode([event.user_metadata.summary], str)
                if isinstance(summary, str) and summary.startswith(
                    (CONFIRMATION_TIMER_PREFIX, ESCALATION_TIMER_PREFIX)
                ):
                    self._timers[event.event_id] = summary
            return None
        summary = self._timers.pop(event.timer_fired_event_attributes.started_event_id, None)
        if summary is None:
            return None
        kind = "approval_timed_out" if summary.startswith(CONFIRMATION_TIMER_PREFIX) else "approval_escalated"
        return HistoryItem(kind, at, summary=summary)

    async def _turn_ended_by_continue(self, event: HistoryEvent) -> list[HistoryItem]:
        """A session that continues as new right after a turn ends that turn there (the next run
        advertises its wait, not this one): the new run's input says so."""
        attrs = event.workflow_execution_continued_as_new_event_attributes
        next_input = await self._decode(attrs.input.payloads, AgentRunInput)
        session = next_input.snapshot.session if next_input is not None and next_input.snapshot else None
        if session is None or not session.between_turns or self._open_turn is None:
            return []
        self._open_turn, self._last_turn = None, session.turn
        at = event.event_time.ToDatetime(tzinfo=UTC) if event.HasField("event_time") else None
        return [HistoryItem("turn_ended", at, turn=session.turn)]

    async def _turn_ended(self, attrs: Any, at: datetime | None) -> HistoryItem | None:
        """A session publishing that it waits for the user (its memo) ends the turn under way."""
        fields = attrs.upserted_memo.fields
        if WAITING_FOR_USER_MEMO_KEY not in fields:
            return None
        memo = await self._decode([fields[WAITING_FOR_USER_MEMO_KEY]], dict | None)
        if not isinstance(memo, dict) or self._open_turn is None:  # not waiting, or waiting before a first turn
            return None
        turn = memo.get("turn") if isinstance(memo.get("turn"), int) else self._open_turn
        self._open_turn = None
        if turn is not None:
            self._last_turn = turn
        return HistoryItem("turn_ended", at, turn=turn, preview=str(memo.get("last_message") or ""))


def is_reset_event(event: HistoryEvent) -> bool:
    """True for the event where Temporal's reset began a run anew (``agent rewind``): the workflow
    task failed with cause ``RESET_WORKFLOW``; every event before it was copied from the run it was
    reset from."""
    return (
        event.HasField("workflow_task_failed_event_attributes")
        and event.workflow_task_failed_event_attributes.cause
        == WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW
    )


def copied_before_reset(events: list[HistoryEvent]) -> int:
    """How many of ``events`` (a run's history) a reset copied from the run before it: the index of
    the last reset event, 0 for a run never reset."""
    return max((index for index, event in enumerate(events) if is_reset_event(event)), default=0)


async def _ending_message(event: HistoryEvent, field: str, converter: DataConverter | None) -> str:
    if field == "workflow_execution_failed_event_attributes":
        return describe_failure(await _readable(event.workflow_execution_failed_event_attributes.failure, converter))
    if field == "workflow_execution_terminated_event_attributes":
        return event.workflow_execution_terminated_event_attributes.reason
    if field == "workflow_execution_timed_out_event_attributes":
        return "the run's execution or run timeout passed"
    return ""


async def read_history(handle: WorkflowHandle, converter: DataConverter) -> AsyncIterator[HistoryItem]:
    """The items of ``handle``'s latest run, in history order.

    :raises temporalio.service.RPCError: NOT_FOUND when there is no such run.
    """
    decoder = HistoryDecoder(converter)
    async for event in handle.fetch_history_events():
        for item in await decoder.decode_all(event):
            yield item


@dataclass
class LastFailures:
    """The failures :func:`last_failures` found in a run's history.

    :param workflow_task_error: The last workflow-task failure (:func:`describe_failure`).
    :param workflow_task_error_kinds: What that failure was, by name: the event's cause
        (``WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR``, ...) and the application failure
        types in its chain (``RestrictedWorkflowAccessError``, ...).
    :param run_failure: Why the run ended when it did not complete.
    """

    workflow_task_error: str | None = None
    workflow_task_error_kinds: tuple[str, ...] = ()
    run_failure: str | None = None


def _failure_kinds(attrs: Any) -> tuple[str, ...]:
    kinds = [WorkflowTaskFailedCause.Name(attrs.cause)]
    failure = attrs.failure
    while True:
        if failure.HasField("application_failure_info") and failure.application_failure_info.type:
            kinds.append(failure.application_failure_info.type)
        if not failure.HasField("cause"):
            return tuple(kinds)
        failure = failure.cause


async def _readable(failure: Failure, converter: DataConverter | None) -> Failure:
    return failure if converter is None else await readable_failure(failure, converter)


async def last_failures(
    handle: WorkflowHandle, run_ended_badly: bool, converter: DataConverter | None = None
) -> LastFailures:
    """The last workflow-task failure, and why the run ended when it did not complete (its failure
    chain, the termination reason, a timeout or a cancellation). Reads only failure fields.

    :param converter: Decodes the messages that encrypted payloads (``AGENT_PAYLOAD_KEYS``) move
        into a failure's encoded attributes; None reads the messages as stored.

    :raises temporalio.service.RPCError: NOT_FOUND when there is no such run.
    """
    found = LastFailures()
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_task_failed_event_attributes") and not is_reset_event(event):
            attrs = event.workflow_task_failed_event_attributes
            found.workflow_task_error = describe_failure(await _readable(attrs.failure, converter))
            found.workflow_task_error_kinds = _failure_kinds(attrs)
        elif run_ended_badly:
            for field, ending in _ENDINGS.items():
                if event.HasField(field) and ending not in ("completed", "continued as new"):
                    found.run_failure = await _ending_message(event, field, converter) or "no reason given"
    return found
