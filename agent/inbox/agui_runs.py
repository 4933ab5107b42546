"""What the AG-UI endpoint (:mod:`agent.inbox.agui`) asks of a run and of a request: the thread's
status, the live stream's offset, a message's delivery, the tool results the model got (from the
run's history), and AG-UI resume entries as ``ToolDecision``s."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, TypeVar

from ag_ui.core import Message, ResumeEntry, UserMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RPCError, RPCStatusCode

from agent.client import AgentRunHandle
from agent.run_history import read_history
from hooks.human_in_the_loop.dataclasses import ToolDecision

#: What a failed read of a run's live events raises.
STREAM_ERRORS = (RPCError, WorkflowQueryFailedError, WorkflowUpdateFailedError)
#: AG-UI resume actions and the ``ToolDecision`` action each one is.
ACTIONS = {"approve": "confirm", "reject": "reject", "modify": "modify"}

T = TypeVar("T")


class AguiError(Exception):
    """A request the endpoint answers with an HTTP error before any stream starts.

    :param status: The HTTP status.
    :param message: What is wrong, for a person.
    :param field: The ``RunAgentInput`` field at fault, when one is.
    """

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field = status, message, field

    def body(self) -> dict[str, Any]:
        """The JSON error body: ``{"error": ..., "field": ...}``."""
        return {"error": self.message, **({"field": self.field} if self.field else {})}


class ResumePayload(BaseModel):
    """The ``payload`` of a resolved ``tool_approval`` interrupt.

    :param action: ``approve``, ``reject`` or ``modify``.
    :param feedback: Text for the model (why, or a note on a modification).
    :param arguments: For ``modify``: the complete new arguments.
    :param arguments_sha256: The interrupt's ``argumentsSha256``: the decision is refused when the
        call's arguments are not the ones it names.
    """

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    action: str
    feedback: str | None = None
    arguments: dict[str, Any] | None = None
    arguments_sha256: str | None = Field(default=None, alias="argumentsSha256")


def decisions_of(entries: list[ResumeEntry], approver: str) -> list[ToolDecision]:
    """The ``ToolDecision`` of each resume entry (``interruptId`` is the tool call id; a
    ``cancelled`` entry rejects the call), decided by ``approver``.

    :raises AguiError: 422 naming the entry's field that is wrong.
    """
    decisions = []
    for index, entry in enumerate(entries):
        where = f"resume[{index}]"
        if entry.status == "cancelled":
            decisions.append(ToolDecision(tool_call_id=entry.interrupt_id, action="reject", approver=approver))
            continue
        if not isinstance(entry.payload, dict):
            raise AguiError(422, f"{where}.payload must be an object with an action.", field=f"{where}.payload")
        try:
            payload = ResumePayload.model_validate(entry.payload)
        except ValidationError as err:
            first = err.errors()[0]
            name = ".".join(str(p) for p in first["loc"])
            raise AguiError(422, f"{where}.payload.{name}: {first['msg']}.", field=f"{where}.payload.{name}") from err
        action = ACTIONS.get(payload.action)
        if action is None:
            raise AguiError(
                422,
                f"{where}.payload.action must be approve, reject or modify, not {payload.action!r}.",
                field=f"{where}.payload.action",
            )
        if action == "modify" and payload.arguments is None:
            raise AguiError(
                422, f"{where}.payload.arguments: a modify needs the new arguments.", field=f"{where}.payload.arguments"
            )
        decisions.append(
            ToolDecision(
                tool_call_id=entry.interrupt_id,
                action=action,
                feedback=payload.feedback,
                new_tool_params=payload.arguments if action == "modify" else None,
                approver=approver,
                arguments_sha256=payload.arguments_sha256,
            )
        )
    return decisions


class NewMessage(BaseModel):
    """The user message a request brings: its AG-UI id and its text."""

    id: str
    text: str


def newest_user_message(messages: list[Message]) -> NewMessage | None:
    """The last user message of the input, or None when it has none.

    :raises AguiError: 422 when it carries no text (only media parts).
    """
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, UserMessage):
            content = message.content
            text = content if isinstance(content, str) else "".join(getattr(p, "text", "") or "" for p in content)
            if not text.strip():
                raise AguiError(
                    422, f"messages[{index}].content: the user message has no text.", field=f"messages[{index}].content"
                )
            return NewMessage(id=message.id, text=text)
    return None


async def thread_status(client: Client, run_id: str) -> WorkflowExecutionStatus | None:
    """The run's Temporal status, None when there is no such run.

    :raises AguiError: 502 when Temporal does not answer.
    """
    try:
        description = await client.get_workflow_handle(run_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise AguiError(502, f"Temporal did not answer: {err.message}") from err
    return description.status


async def stream_offset(client: Client, run_id: str) -> int:
    """The offset the run's next live event will have.

    :raises AguiError: 502 when the run's stream cannot be read (no worker answers it).
    """
    try:
        return await WorkflowStreamClient.create(client, run_id).get_offset()
    except STREAM_ERRORS as err:
        raise AguiError(502, f"The run's live events cannot be read: {err}") from err


async def delivered_between(handle: AgentRunHandle, start: int, end: int, message_id: str) -> bool:
    """Whether the run accepted message ``message_id`` between offsets ``start`` and ``end`` (a
    message it had already had is not received again)."""
    if end <= start:
        return False
    async for event in handle.events(from_offset=start):
        if event.kind == "message_received" and event.data.get("message_id") == message_id:
            return True
        if event.offset >= end - 1:
            return False
    return False


async def read_results(client: Client, run_id: str, call_ids: set[str]) -> dict[str, str]:
    """The tool results the model got for ``call_ids`` (call id -> text), from the inputs of the
    run's model calls in its history; calls no model call has seen yet are left out."""
    found: dict[str, str] = {}
    async for item in read_history(client.get_workflow_handle(run_id), client.data_converter):
        if item.kind != "model_called" or item.model_input is None:
            continue
        for message in item.model_input.messages:
            for result in message.tool_call_results:
                if result.origin.id in call_ids:
                    found[result.origin.id] = result.result
    return found


async def with_pings(source: AsyncIterator[T], seconds: float) -> AsyncIterator[T | None]:
    """``source``'s items, and None after each ``seconds`` without one (for keep-alives)."""
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=64)

    async def pump() -> None:
        try:
            async for item in source:
                await queue.put(("item", item))
            await queue.put(("end", None))
        except Exception as err:  # handed to the reader, which raises it
            await queue.put(("error", err))

    task = asyncio.create_task(pump())
    try:
        while True:
            try:
                kind, value = await asyncio.wait_for(queue.get(), seconds)
            except TimeoutError:
                yield None
                continue
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
