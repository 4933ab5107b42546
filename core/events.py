"""What a run tells whoever watches it (DESIGN.md "Live"): :class:`RunEvent` and its kinds.

A run publishes its events on a Temporal Workflow Stream (``temporalio.contrib.workflow_streams``)
under :data:`RUN_EVENTS_TOPIC`: the workflow publishes its own (turns, steps, replies, tools,
approvals, messages), the model activity publishes the reply's text as it arrives (``token``).
Each event gets the stream's offset, so a subscriber that reconnects with its last offset + 1
misses nothing and sees nothing twice.

Kinds and their ``data``:

- ``turn_started`` ``{}``; ``turn_ended`` ``{"exit_reason", "step_count"}``; ``run_ended`` ``{"exit_reason"}``.
- ``step_started`` ``{}`` (``step`` is the step's 0-based index in its turn).
- ``token`` ``{"text", "attempt"}``: the next piece of the step's reply text, from model call attempt ``attempt``.
- ``model_retry`` ``{"attempt"}``: the step's streamed model call broke and is made again as a
  whole; drop the text of the step's earlier attempts (:class:`ReplyText` does).
- ``model_reply`` ``{"text", "tool_calls": [{"id", "tool_name", "arguments"}], "usage", "finish_reason"}``.
- ``tool_started`` ``{"tool_call_id", "tool_name", "arguments"}``;
  ``tool_finished`` ``{"tool_call_id", "tool_name", "error", "result_preview"}``.
- ``approval_requested`` ``{"tool_call_id", "tool_name", "arguments"}``;
  ``approval_escalated`` ``{"tool_call_id", "tool_name", "approvers"}`` (no one decided in time and
  the call now waits for the escalation's approvers, ``Escalation``);
  ``decision`` ``{"tool_call_id", "tool_name", "action", "approver", "feedback", "via"}`` (``via``:
  ``"update"``, ``"signal"``, or ``"timeout"`` when no one answered in time: then ``approver`` is None
  and ``action`` is the strategy's ``on_timeout``).
- ``message_received`` ``{"message_id", "sender", "text"}``.
- ``run_rewound`` ``{"reason", "from_offset", "temporal_run_id", "previous_temporal_run_id"}``: made
  by the reading client, not published by the run: ``agent rewind`` took the run back to the start
  of step ``step`` of turn ``turn`` (a new Temporal run). The events that follow are the new run's,
  from ``from_offset`` on (the offsets go back; the marker's own offset is ``from_offset - 1``, so
  resuming with ``offset + 1`` works as for any event).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

#: The Workflow Streams topic a run's events go to.
RUN_EVENTS_TOPIC = "agent.run_events"

RunEventKind = Literal[
    "turn_started",
    "step_started",
    "token",
    "model_retry",
    "model_reply",
    "tool_started",
    "tool_finished",
    "approval_requested",
    "approval_escalated",
    "decision",
    "message_received",
    "turn_ended",
    "run_ended",
    "run_rewound",
]
#: Every kind, in the order a step usually shows them.
RUN_EVENT_KINDS: tuple[str, ...] = get_args(RunEventKind)

#: Characters of a tool result a ``tool_finished`` event carries.
RESULT_PREVIEW_CHARS = 500


class RunEvent(BaseModel):
    """One event of a run.

    :param offset: Its position in the run's stream (0, 1, 2, ... over the whole run, across
        continue-as-new); reconnect with ``from_offset=offset + 1``.
    :param kind: One of :data:`RUN_EVENT_KINDS` (see the module docstring for each ``data``).
    :param turn: The conversation turn it belongs to (1 for a run without a session).
    :param step: The step's 0-based index within the turn; None for turn and run events.
    :param data: What happened (shape by ``kind``).
    """

    offset: int = 0
    kind: str
    turn: int
    step: int | None = None
    data: dict[str, Any] = Field(default_factory=dict)


class ReplyText:
    """Folds ``token`` and ``model_retry`` events into each step's reply text as it arrives:
    text of an attempt that was retried is dropped, never mixed with the next attempt's.

    Feed every event to :meth:`add`; :meth:`text` is the text so far of a step.
    """

    def __init__(self) -> None:
        self._steps: dict[tuple[int, int | None], tuple[int, str]] = {}

    def add(self, event: RunEvent) -> str | None:
        """Take one event; returns the text it added to its step ('' when a retry reset it),
        or None for an event that is not about reply text (or is from an attempt already superseded)."""
        key = (event.turn, event.step)
        attempt, text = self._steps.get(key, (1, ""))
        if event.kind == "model_retry":
            new_attempt = int(event.data.get("attempt", attempt + 1))
            if new_attempt > attempt or text:
                self._steps[key] = (max(new_attempt, attempt), "")
            return ""
        if event.kind != "token":
            return None
        event_attempt = int(event.data.get("attempt", 1))
        if event_attempt < attempt:
            return None
        if event_attempt > attempt:
            attempt, text = event_attempt, ""
        piece = str(event.data.get("text", ""))
        self._steps[key] = (attempt, text + piece)
        return piece

    def text(self, turn: int, step: int | None) -> str:
        """The reply text of ``(turn, step)`` so far (of its latest attempt)."""
        return self._steps.get((turn, step), (1, ""))[1]
