"""How a finished run reads to a person: why a cancelled run was cancelled, the calls the cancel
cut, the tool errors of its answers, and a last message that says something (a tool result or a
call for tools, not ``None``). ``agent result``, ``agent run --wait``, ``agent watch`` and the
inbox's pages show these.
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio.client import Client, WorkflowHandle
from temporalio.converter import DataConverter
from temporalio.service import RPCError

from core.messages import ChatMessage
from core.payloads import AgentRunResult, CancelRequest
from core.wire import CANCEL_RUN_UPDATE

#: ``exit_reason`` of a cancelled run.
CANCELLED = "cancelled"
#: Characters of a message shown on one line.
SHOWN_CHARS = 300


def one_line(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` on one line, cut at ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def message_text(message: ChatMessage | None) -> str:
    """What ``message`` says, for a person: its text, else its tool result(s), else the tools it
    calls for; never ``None``."""
    if message is None:
        return "(no message)"
    if message.text:
        return message.text
    results = message.tool_call_results
    if results:
        return "; ".join(
            f"{r.origin.tool_name} {'error' if r.error else 'result'}: {one_line(str(r.result))}" for r in results
        )
    if message.tool_calls:
        return f"({message.role.value} asks for: {', '.join(c.tool_name for c in message.tool_calls)})"
    return f"({message.role.value} message without text)"


@dataclass(frozen=True)
class ToolError:
    """A tool call whose result was an error (the model saw it)."""

    tool_name: str
    tool_call_id: str | None
    text: str

    def line(self) -> str:
        return f"tool {self.tool_name} ({self.tool_call_id or 'no id'}) error: {one_line(self.text)}"


def tool_errors(messages: list[ChatMessage]) -> list[ToolError]:
    """Every error result of a tool call in ``messages``, in order."""
    return [
        ToolError(r.origin.tool_name, r.origin.id, str(r.result))
        for m in messages
        for r in m.tool_call_results
        if r.error
    ]


def cut_calls(result: AgentRunResult) -> list[ToolError]:
    """The tool calls a cancel cut: the error results after the run's last model reply."""
    if result.exit_reason != CANCELLED:
        return []
    last_reply = max((i for i, m in enumerate(result.messages) if m.role.value == "assistant"), default=-1)
    return tool_errors(result.messages[last_reply + 1 :])


async def cancel_reason(handle: WorkflowHandle, converter: DataConverter) -> str | None:
    """Why the run was cancelled, from its history: the last accepted ``cancel_run`` Update's
    reason, or Temporal's own cancel request's; None when neither is there (or the history cannot
    be read)."""
    reason: str | None = None
    try:
        async for event in handle.fetch_history_events():
            which = event.WhichOneof("attributes")
            if which == "workflow_execution_update_accepted_event_attributes":
                request = event.workflow_execution_update_accepted_event_attributes.accepted_request
                if request.input.name != CANCEL_RUN_UPDATE or not request.input.args.payloads:
                    continue
                [decoded] = await converter.decode(request.input.args.payloads[:1], [CancelRequest])
                reason = decoded.reason or "no reason given"
            elif which == "workflow_execution_cancel_requested_event_attributes":
                reason = (
                    event.workflow_execution_cancel_requested_event_attributes.cause or "cancelled through Temporal"
                )
    except (RPCError, ValueError, TypeError):
        return reason
    return reason


async def ending_line(handle: WorkflowHandle, converter: DataConverter, result: AgentRunResult) -> str | None:
    """``cancelled: REASON`` for a cancelled run, None for any other."""
    if result.exit_reason != CANCELLED:
        return None
    return f"cancelled: {await cancel_reason(handle, converter) or 'no reason recorded'}"


async def ending_of(client: Client, run_id: str, status: str) -> str | None:
    """``cancelled: REASON`` for a run that completed as cancelled (Temporal says "completed"),
    None for any other (its result read from the server: no worker needed)."""
    if status != "COMPLETED":
        return None
    handle = client.get_workflow_handle(run_id, result_type=AgentRunResult)
    try:
        result = await handle.result()
    except Exception:  # a result this page cannot read: Temporal's status stands
        return None
    return await ending_line(handle, client.data_converter, result)
