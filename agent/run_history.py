"""A run's history, decoded once for everyone who shows it: ``agent watch``, the inbox's pages,
``agent status`` and ``AgentRunHandle.health``.

:class:`HistoryDecoder` turns Temporal history events into :class:`HistoryItem`s: the run's input,
each model call and its reply, each tool call and its result, decisions on confirmations (an
Update accepted, its ``DecisionRecord``, a Signal) and how the run ended. Payloads go through the
client's data converter (codecs and external storage apply); one this client cannot read is
None in the item, never an error, so a line can still be shown.
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
from core.payloads import AgentRunInput
from core.wire import CHAT_COMPLETION_ACTIVITY, INVOKE_TOOL_ACTIVITY
from hooks.human_in_the_loop.dataclasses import DecisionRecord, ToolDecision
from hooks.human_in_the_loop.wire import SUBMIT_TOOL_DECISION_UPDATE, TOOL_DECISION_SIGNAL

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
    "run_ended",
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
    :param message: ``*_failed`` and ``run_ended``: the failure or ending, in one line.
    :param ending: ``run_ended``: ``completed``, ``failed``, ``continued as new``, ...
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

    async def _decode(self, payloads: Any, kind: type) -> Any:
        try:
            [value] = await self.converter.decode(payloads, [kind])
        except Exception:  # a payload this client cannot read: the item still shows
            return None
        return value

    async def decode(self, event: HistoryEvent) -> HistoryItem | None:  # noqa: C901 - one branch per event kind
        """The item ``event`` stands for, or None for an event nobody shows."""
        at = event.event_time.ToDatetime(tzinfo=UTC) if event.HasField("event_time") else None
        if event.HasField("workflow_execution_started_event_attributes"):
            attrs = event.workflow_execution_started_event_attributes
            return HistoryItem("run_started", at, run_input=await self._decode(attrs.input.payloads, AgentRunInput))
        if event.HasField("activity_task_scheduled_event_attributes"):
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == CHAT_COMPLETION_ACTIVITY:
                request = await self._decode(attrs.input.payloads, ModelCallInput)
                self._models[event.event_id] = request
                return HistoryItem("model_called", at, model_input=request)
            if attrs.activity_type.name == INVOKE_TOOL_ACTIVITY:
                call = await self._decode(attrs.input.payloads, ToolInvocationInput)
                self._tools[event.event_id] = call
                return HistoryItem("tool_started", at, tool_call=call)
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
            message = describe_failure(attrs.failure)
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
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request.input
            if request.name != SUBMIT_TOOL_DECISION_UPDATE:
                return None
            decision = await self._decode(request.args.payloads, ToolDecision)
            return HistoryItem("decision_sent", at, decision=decision, via="update")
        if event.HasField("workflow_execution_update_completed_event_attributes"):
            outcome = event.workflow_execution_update_completed_event_attributes.outcome
            if not outcome.HasField("success"):
                return None
            record = await self._decode(outcome.success.payloads, DecisionRecord)
            return HistoryItem("decision_recorded", at, record=record) if isinstance(record, DecisionRecord) else None
        if event.HasField("workflow_execution_signaled_event_attributes"):
            attrs = event.workflow_execution_signaled_event_attributes
            if attrs.signal_name != TOOL_DECISION_SIGNAL:
                return None
            decision = await self._decode(attrs.input.payloads, ToolDecision)
            return HistoryItem("decision_sent", at, decision=decision, via="signal")
        for field, ending in _ENDINGS.items():
            if event.HasField(field):
                return HistoryItem("run_ended", at, ending=ending, message=_ending_message(event, field))
        return None


def _ending_message(event: HistoryEvent, field: str) -> str:
    if field == "workflow_execution_failed_event_attributes":
        return describe_failure(event.workflow_execution_failed_event_attributes.failure)
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
        item = await decoder.decode(event)
        if item is not None:
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


async def last_failures(handle: WorkflowHandle, run_ended_badly: bool) -> LastFailures:
    """The last workflow-task failure, and why the run ended when it did not complete (its failure
    chain, the termination reason, a timeout or a cancellation). Reads only failure fields: no
    payload is decoded.

    :raises temporalio.service.RPCError: NOT_FOUND when there is no such run.
    """
    found = LastFailures()
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_task_failed_event_attributes"):
            attrs = event.workflow_task_failed_event_attributes
            found.workflow_task_error = describe_failure(attrs.failure)
            found.workflow_task_error_kinds = _failure_kinds(attrs)
        elif run_ended_badly:
            for field, ending in _ENDINGS.items():
                if event.HasField(field) and ending not in ("completed", "continued as new"):
                    found.run_failure = _ending_message(event, field) or "no reason given"
    return found
