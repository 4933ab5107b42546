"""A run's live events (``AgentRunHandle.events()``) as lines a person reads: the answer as its
tokens arrive, tool calls, approvals and decisions. ``agent watch`` and ``agent chat`` both print
through :class:`LiveTranscript`; they differ only in how an answer is labelled.

A streamed model call that breaks is retried as a whole (a ``model_retry`` event). The text of
the broken attempt is already on screen and cannot be taken back, so the transcript ends that
line, prints a marker saying the answer starts over, and shows the new attempt's text on a fresh
line: two attempts' text never run together as one answer.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:
    from agent import RunEvent

#: How much of a tool result or argument list a line shows.
PREVIEW_CHARS = 120


class Screen(Protocol):
    """Where a transcript writes: whole lines, and text added to the line being written. A whole
    line written while a partial one is open goes below it, never into it."""

    @property
    def partial_open(self) -> bool: ...

    def line(self, text: str) -> None: ...

    def partial(self, text: str) -> None: ...

    def end_partial(self) -> None: ...


class PlainScreen:
    """Plain text on ``out`` (default stdout), flushed at once: pipes, logs, tests, ``agent chat``.

    :param out: The stream written to.
    """

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._partial_open = False

    @property
    def partial_open(self) -> bool:
        return self._partial_open

    def line(self, text: str) -> None:
        self.end_partial()
        print(text, file=self.out, flush=True)

    def partial(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
        self._partial_open = True

    def end_partial(self) -> None:
        """End the line being written, if one is."""
        if self._partial_open:
            self.out.write("\n")
            self.out.flush()
            self._partial_open = False


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (``...`` says it was cut)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_call(tool_name: str, arguments: dict[str, Any]) -> str:
    """``tool(key="value", n=1)`` with the argument list cut to a preview."""
    args = ", ".join(f"{key}={json.dumps(value, default=str)}" for key, value in (arguments or {}).items())
    return f"{tool_name}({preview(args)})"


def retry_marker(attempt: int) -> str:
    """The line shown when a streamed model call starts over."""
    return f"  [the model call broke and is retried (attempt {attempt}): its answer starts over]"


class LiveTranscript:
    """Turns run events into lines on a :class:`Screen`.

    :param screen: Where the lines go.
    :param run_id: The run (named in the approve command of a waiting call).
    :param answer_label: The label before a model call's text, given the call's number in this
        transcript, e.g. ``"assistant: "`` (chat) or ``"  model call 3 answered: "`` (watch).
    :param approvals: Print calls waiting for approval (``agent watch`` shows them from its own
        status poll, with the reject and modify commands, and passes False).
    :param whole_answers: Print an answer that was not streamed whole (``agent chat``), not as a
        one-line preview (``agent watch``).
    """

    def __init__(
        self,
        screen: Screen,
        run_id: str,
        answer_label: Callable[[int], str],
        approvals: bool = True,
        whole_answers: bool = False,
    ) -> None:
        self.screen = screen
        self.run_id = run_id
        self.answer_label = answer_label
        self.approvals = approvals
        self.whole_answers = whole_answers
        self.model_calls = 0
        #: (turn, step) of each model call counted, in order (a rewind counts again from its step).
        self._counted: list[tuple[int, int | None]] = []
        #: (turn, step) of the model call whose tokens are on the open line, and its attempt.
        self._streaming: tuple[int, int | None] | None = None
        self._attempt = 1
        self._labelled = False  # the open line starts with the answer's label
        self._arguments: dict[str, dict[str, Any]] = {}

    # -- the screen ------------------------------------------------------------------------------

    def line(self, text: str) -> None:
        """A whole line (below the answer being streamed, if any)."""
        self.screen.line(text)

    # -- events ---------------------------------------------------------------------------------

    def show(self, event: RunEvent) -> None:
        """Show one event (kinds this transcript does not show are skipped)."""
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler is not None:
            handler(event, event.data or {})

    def _on_token(self, event: RunEvent, data: dict) -> None:
        where = (event.turn, event.step)
        attempt = int(data.get("attempt") or 1)
        if where == self._streaming and attempt < self._attempt:
            return  # a late batch of an attempt already dropped
        if where == self._streaming and attempt > self._attempt:
            self._restart(attempt)  # a retry whose marker event was not seen
        if where != self._streaming:
            self.screen.end_partial()
            self._streaming, self._attempt, self._labelled = where, attempt, False
            self._count(where)
        if not (self._labelled and self.screen.partial_open):  # new, or a whole line came between
            self.screen.end_partial()
            self.screen.partial(self.answer_label(self.model_calls))
            self._labelled = True
        self.screen.partial(str(data.get("text") or ""))

    def _count(self, where: tuple[int, int | None]) -> None:
        self._counted.append(where)
        self.model_calls = len(self._counted)

    def _on_run_rewound(self, event: RunEvent, data: dict) -> None:
        """The run went back to the start of step ``event.step``: calls from there on count again."""
        self.screen.end_partial()
        self._streaming = None
        start = (event.turn, event.step if event.step is not None else -1)
        self._counted = [c for c in self._counted if (c[0], c[1] if c[1] is not None else -1) < start]
        self.model_calls = len(self._counted)
        self.line(
            f"  run rewound (reset from Temporal run {data.get('previous_temporal_run_id')}): {data.get('reason')}"
        )

    def _on_model_retry(self, event: RunEvent, data: dict) -> None:
        if (event.turn, event.step) == self._streaming:
            self._restart(int(data.get("attempt") or self._attempt + 1))

    def _restart(self, attempt: int) -> None:
        self.screen.end_partial()
        self.line(retry_marker(attempt))
        self._attempt, self._labelled = attempt, False

    def _on_model_reply(self, event: RunEvent, data: dict) -> None:
        streamed = (event.turn, event.step) == self._streaming
        self.screen.end_partial()
        self._streaming = None
        if not streamed:
            self._count((event.turn, event.step))
        calls = data.get("tool_calls") or []
        text = str(data.get("text") or "")
        for failure in data.get("fallback_failures") or []:
            self.line(f"  model failed, fell back: {preview(str(failure))}")
        if (answered := data.get("answered_by")) and data.get("fallback_failures"):
            self.line(f"  answered by {answered.get('model')} at {answered.get('endpoint') or 'the default endpoint'}")
        if calls:
            names = ", ".join(str(call.get("tool_name")) for call in calls)
            self.line(f"  model call {self.model_calls} asked for: {names}")
        elif not streamed:
            shown = text if self.whole_answers else preview(text)
            self.line(self.answer_label(self.model_calls) + (shown or "(no text)"))

    def _on_tool_started(self, event: RunEvent, data: dict) -> None:
        self._arguments[str(data.get("tool_call_id"))] = dict(data.get("arguments") or {})

    def _on_tool_finished(self, event: RunEvent, data: dict) -> None:
        arguments = self._arguments.pop(str(data.get("tool_call_id")), {})
        call = describe_call(str(data.get("tool_name")), arguments)
        step = f" [step {event.step}]" if event.step is not None else ""
        outcome = "error: " if data.get("error") else "-> "
        self.line(f"  tool {call}{step} {outcome}{preview(str(data.get('result_preview') or ''))}")

    def _on_approval_requested(self, event: RunEvent, data: dict) -> None:
        if not self.approvals:
            return
        call_id = data.get("tool_call_id")
        self.line(
            f"  waiting for approval of {describe_call(str(data.get('tool_name')), data.get('arguments') or {})} "
            f"({call_id}): agent approve {self.run_id} {call_id} (or: agent reject / agent modify)"
        )

    def _on_approval_escalated(self, event: RunEvent, data: dict) -> None:
        approvers = ", ".join(str(a) for a in data.get("approvers") or [])
        self.line(f"  escalated: {data.get('tool_name')} ({data.get('tool_call_id')}) to {approvers}")

    def _on_decision(self, event: RunEvent, data: dict) -> None:
        if data.get("via") == "timeout":  # no one's decision: the strategy's on_timeout applied
            self.line(f"  timed out, no one decided: {data.get('tool_name')} ({data.get('tool_call_id')})")
            return
        who = f" by {data['approver']}" if data.get("approver") else ""
        feedback = f": {preview(data['feedback'])}" if data.get("feedback") else ""
        self.line(f"  decided: {data.get('tool_call_id')} {data.get('action')}{who}{feedback}")
