"""A run's live events (:class:`core.events.RunEvent`) as AG-UI 1.0 events (package ``ag-ui-protocol``).

:class:`AguiTranslator` folds a run's events, in offset order, into the AG-UI events a client
needs, and keeps the conversation they add up to (for ``MESSAGES_SNAPSHOT``). Ids are stable per
run, turn and step, so a client that reconnects finds its own messages again:

- a model reply's text and tool calls are one assistant message ``{run}:{turn}:{step}`` (a retried
  model call's second attempt is ``{run}:{turn}:{step}#2``);
- a tool call is its run's tool call id; its result is the tool message ``{message}:{call id}``;
- a user message is its ``message_id`` (the AG-UI message id the client sent).

A tool result is what the model gets: when the run may have changed it after the tool (an
``after_tool`` hook, a result longer than the event's preview) or no ``tool_finished`` event
exists (a rejected call), it is read from the next model call's input in the run's history.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    FunctionCall,
    Message,
    MessagesSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)

from core.events import RESULT_PREVIEW_CHARS, RunEvent

#: Reads the results the model got for some tool calls (call id -> text) from the run's history.
ResultReader = Callable[[set[str]], Awaitable[dict[str, str]]]
#: How long a deferred tool result is looked for in the history before the fallback is used.
RESULT_WAIT_SECONDS = 5.0
#: Text of a rejected call whose rejection text the history does not show.
REJECTED_FALLBACK = "The call was rejected: it did not run."


def message_id(run_id: str, turn: int, step: int | None, attempt: int = 1) -> str:
    """The AG-UI id of the assistant message of ``(turn, step)`` (model call attempt ``attempt``)."""
    base = f"{run_id}:{turn}:{step if step is not None else 0}"
    return base if attempt <= 1 else f"{base}#{attempt}"


@dataclass
class _Text:
    """An assistant message being written: its id, text so far, and what the client has of it."""

    id: str
    text: str = ""
    sent: int = 0
    open: bool = False
    ended: bool = False


@dataclass
class _Call:
    """A tool call shown to the client, and what is known of its result."""

    id: str
    name: str
    arguments: str
    parent: str
    step: tuple[int, int | None]
    preview: str | None = None
    rejected: bool = False
    result: str | None = None
    result_sent: bool = False


@dataclass
class AguiTranslator:
    """Folds one run's events into AG-UI events (see the module docstring).

    :param run_id: The run (the AG-UI thread id).
    :param read_results: Reads tool results from the run's history.
    :param exact_previews: True when a complete ``tool_finished`` preview is what the model gets
        (the agent has no ``after_tool`` hook that could change it): no history read is needed.
    """

    run_id: str
    read_results: ResultReader
    exact_previews: bool = True
    #: The conversation so far (AG-UI messages by id, in order).
    messages: dict[str, Message] = field(default_factory=dict)
    texts: dict[str, _Text] = field(default_factory=dict)
    calls: dict[str, _Call] = field(default_factory=dict)
    attempts: dict[tuple[int, int | None], int] = field(default_factory=dict)
    #: Calls asked for approval and not decided yet.
    asked: set[str] = field(default_factory=set)
    turn: int = 0
    turn_open: bool = False
    #: A message came in while no turn ran: a turn is about to begin.
    awaiting_turn: bool = False
    run_ended: bool = False

    # -- folding -------------------------------------------------------------------------------

    async def feed(self, event: RunEvent) -> list[BaseEvent]:
        """Take the next event; returns the AG-UI events it makes (results of earlier calls first)."""
        out: list[BaseEvent] = []
        key = (event.turn, event.step)
        if event.kind in ("token", "model_reply", "model_retry", "turn_ended", "run_ended"):
            out += await self.flush_results(before=key if event.kind not in ("turn_ended", "run_ended") else None)
        kind, data = event.kind, event.data
        if kind == "message_received":
            mid = str(data.get("message_id"))
            self.messages[mid] = UserMessage(id=mid, content=str(data.get("text", "")), name=data.get("sender"))
            self.awaiting_turn = not self.turn_open
        elif kind == "turn_started":
            self.turn, self.turn_open, self.awaiting_turn = event.turn, True, False
        elif kind == "turn_ended":
            self.turn, self.turn_open = event.turn, False
        elif kind == "run_ended":
            self.turn_open, self.run_ended = False, True
        elif kind == "model_retry":
            out += self._end_text(self._text_of(key))
            self.attempts[key] = max(int(data.get("attempt", 2)), self.attempts.get(key, 1) + 1)
        elif kind == "token":
            attempt = int(data.get("attempt", 1))
            if attempt >= self.attempts.get(key, 1):
                if attempt > self.attempts.get(key, 1):
                    out += self._end_text(self._text_of(key))
                    self.attempts[key] = attempt
                out += self._add_text(self._text_of(key), str(data.get("text", "")))
        elif kind == "model_reply":
            out += self._reply(key, data)
        elif kind == "tool_started":
            self._call_of(event)
        elif kind == "tool_finished":
            call = self._call_of(event)
            call.preview = str(data.get("result_preview", ""))
            if self.exact_previews and len(call.preview) < RESULT_PREVIEW_CHARS:
                out += self._result(call, call.preview)
        elif kind == "approval_requested":
            self.asked.add(str(data.get("tool_call_id")))
        elif kind == "decision":
            self.asked.discard(str(data.get("tool_call_id")))
            if data.get("action") == "reject":
                self._call_of(event).rejected = True
        return out

    def _call_of(self, event: RunEvent) -> _Call:
        """The call an event is about; one shown in an earlier AG-UI run (a resumed approval) is
        known from here on by its id, its tool and its step."""
        call_id = str(event.data.get("tool_call_id"))
        if call_id not in self.calls:
            self.calls[call_id] = _Call(
                id=call_id,
                name=str(event.data.get("tool_name")),
                arguments=json.dumps(event.data.get("arguments") or {}),
                parent=message_id(self.run_id, event.turn, event.step, self.attempts.get((event.turn, event.step), 1)),
                step=(event.turn, event.step),
            )
        return self.calls[call_id]

    def _text_of(self, key: tuple[int, int | None]) -> _Text:
        mid = message_id(self.run_id, key[0], key[1], self.attempts.get(key, 1))
        if mid not in self.texts:
            self.texts[mid] = _Text(mid)
        return self.texts[mid]

    def _add_text(self, text: _Text, piece: str) -> list[BaseEvent]:
        if not piece or text.ended:
            return []
        out: list[BaseEvent] = []
        if not text.open:
            text.open = True
            out.append(TextMessageStartEvent(message_id=text.id, role="assistant"))
        text.text += piece
        self._keep(text)
        out += self._send_rest(text)
        return out

    def _send_rest(self, text: _Text) -> list[BaseEvent]:
        if text.sent >= len(text.text):
            return []
        delta, text.sent = text.text[text.sent :], len(text.text)
        return [TextMessageContentEvent(message_id=text.id, delta=delta)]

    def _end_text(self, text: _Text) -> list[BaseEvent]:
        if not text.open or text.ended:
            return []
        text.open, text.ended = False, True
        return [TextMessageEndEvent(message_id=text.id)]

    def _keep(self, text: _Text) -> None:
        """Record the assistant message's text in the conversation (its tool calls stay)."""
        known = self.messages.get(text.id)
        calls = known.tool_calls if isinstance(known, AssistantMessage) else None
        self.messages[text.id] = AssistantMessage(id=text.id, content=text.text or None, tool_calls=calls)

    def _reply(self, key: tuple[int, int | None], data: dict[str, Any]) -> list[BaseEvent]:
        text = self._text_of(key)
        full = str(data.get("text") or "")
        out: list[BaseEvent] = []
        if full.startswith(text.text) and len(full) > len(text.text):
            out += self._add_text(text, full[len(text.text) :])
        out += self._end_text(text)
        text.ended = True
        tool_calls = []
        for raw in data.get("tool_calls") or []:
            call = _Call(
                id=str(raw.get("id")),
                name=str(raw.get("tool_name")),
                arguments=json.dumps(raw.get("arguments") or {}),
                parent=text.id,
                step=key,
            )
            self.calls[call.id] = call
            tool_calls.append(ToolCall(id=call.id, function=FunctionCall(name=call.name, arguments=call.arguments)))
            out += [
                ToolCallStartEvent(tool_call_id=call.id, tool_call_name=call.name, parent_message_id=text.id),
                ToolCallArgsEvent(tool_call_id=call.id, delta=call.arguments),
                ToolCallEndEvent(tool_call_id=call.id),
            ]
        if text.text or tool_calls:
            self.messages[text.id] = AssistantMessage(
                id=text.id, content=text.text or None, tool_calls=tool_calls or None
            )
        return out

    def _result(self, call: _Call, content: str) -> list[BaseEvent]:
        if call.result_sent:
            return []
        call.result, call.result_sent = content, True
        result_id = f"{call.parent}:{call.id}"
        self.messages[result_id] = ToolMessage(id=result_id, tool_call_id=call.id, content=content)
        return [ToolCallResultEvent(message_id=result_id, tool_call_id=call.id, content=content, role="tool")]

    async def flush_results(self, before: tuple[int, int | None] | None = None) -> list[BaseEvent]:
        """The results of calls from steps before ``before`` (all calls when None) that the client
        has not had: decided or finished calls whose result the model got, read from the history."""
        waiting = [
            c
            for c in self.calls.values()
            if not c.result_sent
            and (c.preview is not None or c.rejected)
            and (before is None or _at(c.step) < _at(before))
        ]
        if not waiting:
            return []
        found = await self._read(
            {c.id for c in waiting}, wait=before is not None
        )  # a later step has begun: its model call's input holds them
        out: list[BaseEvent] = []
        for call in waiting:
            text = found.get(call.id) or call.preview or (REJECTED_FALLBACK if call.rejected else "")
            out += self._result(call, text)
        return out

    async def _read(self, ids: set[str], wait: bool) -> dict[str, str]:
        loop = asyncio.get_running_loop()
        give_up = loop.time() + (RESULT_WAIT_SECONDS if wait else 0)
        while True:
            found = await self.read_results(ids)
            if ids <= found.keys() or loop.time() >= give_up:
                return found
            await asyncio.sleep(0.1)

    # -- what a client lacks (re-attach) -------------------------------------------------------

    def catch_up(self, has: list[Message]) -> list[BaseEvent]:
        """The events that bring a client holding ``has`` up to this conversation: the rest of each
        partly received text, missing tool calls and results; a ``MESSAGES_SNAPSHOT`` of the whole
        conversation when the client lacks a user message or holds text that differs. Afterwards
        the client has everything folded so far."""
        held = {m.id: m for m in has}
        order = list(self.messages.values())
        last_held = max((i for i, m in enumerate(order) if m.id in held), default=-1)
        # Events add messages at the end of the client's list: what it lacks must all come after
        # what it holds, and what it holds must be the start of what the run has.
        missing = any((isinstance(m, UserMessage) or i < last_held) and m.id not in held for i, m in enumerate(order))
        differs = any(
            isinstance(m, AssistantMessage) and m.id in held and not (m.content or "").startswith(_text_of(held[m.id]))
            for m in order
        )
        conflict = missing or differs
        out: list[BaseEvent] = []
        if conflict:
            out.append(MessagesSnapshotEvent(messages=list(self.messages.values())))
            for text in self.texts.values():
                text.sent = len(text.text)
            for call in self.calls.values():
                call.result_sent = call.result is not None
        else:
            for text in self.texts.values():
                had = held.get(text.id)
                text.sent = len(_text_of(had)) if had is not None else 0
                if text.open or text.sent < len(text.text):
                    # a text being written is opened again in this run, so that it can go on
                    out.append(TextMessageStartEvent(message_id=text.id, role="assistant"))
                    out += self._send_rest(text)
                    if text.ended:
                        out.append(TextMessageEndEvent(message_id=text.id))
            held_calls = {c.id for m in has if isinstance(m, AssistantMessage) for c in m.tool_calls or []}
            held_results = {m.tool_call_id for m in has if isinstance(m, ToolMessage)}
            for call in self.calls.values():
                if call.id not in held_calls:
                    out += [
                        ToolCallStartEvent(
                            tool_call_id=call.id, tool_call_name=call.name, parent_message_id=call.parent
                        ),
                        ToolCallArgsEvent(tool_call_id=call.id, delta=call.arguments),
                        ToolCallEndEvent(tool_call_id=call.id),
                    ]
                if call.result is not None and call.id not in held_results:
                    call.result_sent = False
                    out += self._result(call, call.result)
        for text in self.texts.values():
            if text.open and conflict:
                out.append(TextMessageStartEvent(message_id=text.id, role="assistant"))
        return out


def _at(key: tuple[int, int | None]) -> tuple[int, int]:
    """A ``(turn, step)`` that sorts (a turn-level event has no step: it comes first)."""
    return key[0], -1 if key[1] is None else key[1]


def _text_of(message: Message) -> str:
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""
