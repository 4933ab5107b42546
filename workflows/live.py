"""The run's live events (DESIGN.md "Live"), a part of ``AgentWorkflow``.

The run hosts a Temporal Workflow Stream (``temporalio.contrib.workflow_streams``) and appends its
own events to it as workflow code: deterministic, so a replay rebuilds the same log and publishes
nothing twice (the log lives in workflow memory; subscribers read it by offset through the
stream's Update and Query). The model activity publishes ``token`` events into the same stream by
Signal (activities/model_stream.py). The stream's state is carried across continue-as-new, and a
finished run's events are read by the stream's Query.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamState

with workflow.unsafe.imports_passed_through():
    from activities.model_stream import TokenStream
    from core.events import RESULT_PREVIEW_CHARS, RUN_EVENTS_TOPIC
    from core.messages import ChatMessage, ToolCall
    from core.payloads import MessageReceipt, UserMessage
    from core.spec import AgentSpec

#: Most events a run carries into the next run of a continue-as-new (older ones are dropped: a
#: subscriber that far behind resumes at the oldest one kept).
MAX_CARRIED_EVENTS = 2_000


class RunEvents:
    """The run's stream and what the run loop publishes on it.

    :param prior_state: The stream state the previous run of a continue-as-new carried, or None.
    :param run: The workflow (its ``chat`` and ``run_context`` say the turn and the step).
    """

    def __init__(self, prior_state: WorkflowStreamState | None, run: Any) -> None:
        # WorkflowStream must be made from a method called __init__ reached from @workflow.init.
        self.stream = WorkflowStream(prior_state)
        self._topic = self.stream.topic(RUN_EVENTS_TOPIC)
        self._run = run

    def where(self) -> tuple[int, int | None]:
        """``(turn, step)`` of the run loop now: the conversation's turn, the state's step count."""
        chat, context = getattr(self._run, "chat", None), getattr(self._run, "run_context", None)
        turn = chat.turn if chat is not None else 1
        return turn, context.state.data.get("step_count", 0) if context is not None else None

    def publish(self, kind: str, data: dict[str, Any] | None = None, *, in_step: bool = True) -> None:
        """Append one event, labelled with the current turn (and step, when ``in_step``)."""
        turn, step = self.where()
        self._topic.publish({"kind": kind, "turn": turn, "step": step if in_step else None, "data": data or {}})

    def token_stream(self, agent: AgentSpec) -> TokenStream | None:
        """What the model activity needs to publish this step's tokens; None unless ``stream_tokens``."""
        if not agent.stream_tokens:
            return None
        turn, step = self.where()
        return TokenStream(turn=turn, step=step or 0)

    def message_received(self, message: UserMessage, receipt: MessageReceipt) -> None:
        self.publish(
            "message_received",
            {"message_id": receipt.message_id, "sender": message.sender, "text": message.text, "turn": receipt.turn},
            in_step=False,
        )

    def model_reply(self, reply: ChatMessage) -> None:
        meta = reply.meta or {}
        self.publish(
            "model_reply",
            {
                "text": reply.text,
                "tool_calls": [call_data(c) for c in reply.tool_calls],
                "usage": meta.get("usage") or {},
                "finish_reason": meta.get("finish_reason"),
                # Which model and endpoint answered, when the agent names an endpoint or a Fallback.
                **({"answered_by": meta["answered_by"]} if "answered_by" in meta else {}),
                **({"fallback_failures": meta["fallback_failures"]} if "fallback_failures" in meta else {}),
            },
        )

    def tool_started(self, call: ToolCall) -> None:
        self.publish("tool_started", call_data(call, id_key="tool_call_id"))

    def tool_finished(self, call: ToolCall, result: str, error: bool) -> None:
        self.publish(
            "tool_finished",
            {
                "tool_call_id": call.id,
                "tool_name": call.tool_name,
                "error": error,
                "result_preview": result[:RESULT_PREVIEW_CHARS],
            },
        )

    def carried_state(self) -> WorkflowStreamState:
        """The stream's state for the next run of a continue-as-new (the newest events only)."""
        state = self.stream.get_state()
        if len(state.log) > MAX_CARRIED_EVENTS:
            dropped = len(state.log) - MAX_CARRIED_EVENTS
            state.log = state.log[dropped:]
            state.base_offset += dropped
        return state

    def close(self) -> None:
        """Release waiting subscribers before the run completes or continues as new (a waiting
        poll is an unfinished handler); they follow to the next run or read the closed one."""
        self.stream.detach_pollers()


def call_data(call: ToolCall, id_key: str = "id") -> dict[str, Any]:
    """A tool call as event data."""
    return {id_key: call.id, "tool_name": call.tool_name, "arguments": call.arguments}
