"""``ConfirmationHook``: confirm, modify or reject the pending tool calls before they run."""

from __future__ import annotations

import asyncio
from typing import Any

from core.messages import ChatMessage, ToolCall
from core.serialization import default_to_dict, object_from_dict, object_to_dict
from core.state import State, replace_values
from core.tools import ToolSpec
from hooks._tool_keys import ToolKey, decode_tool_key, encode_tool_key, lookup_by_tool, validate_tool_keys
from hooks.human_in_the_loop.dataclasses import ToolExecutionDecision
from hooks.human_in_the_loop.protocol import ConfirmationStrategy
from hooks.human_in_the_loop.strategies import (
    MODIFICATION_FEEDBACK_TEMPLATE,
    REJECTION_FEEDBACK_TEMPLATE,
    modification_feedback,
)
from hooks.protocol import HasMemory, NeedsSearchAttributes

#: Where a confirmed or modified call keeps its audit record (``ToolCall.extra``), and where the
#: tool message answering a rejected call keeps it (``ChatMessage.meta``).
CONFIRMATION_KEY = "confirmation"


class ConfirmationHook:
    """A ``before_tool`` hook that applies confirmation strategies to the pending tool calls.

    Keys of ``confirmation_strategies`` are a tool name, a tuple of tool names sharing one
    strategy, or ``"*"`` for every tool without a more specific key (a tool's own key beats a
    tuple, a tuple beats ``"*"``). A tool with no matching key runs unasked; so does a call of an
    unknown tool (the run loop answers it with an error).

    The calls of one step are decided independently and wait concurrently; each decision is
    bound to one ``tool_call_id`` (id-less or duplicate ids get deterministic ones first). The
    messages are then rewritten as in Haystack: the last (assistant) message is replaced by, in
    order, an assistant/tool message pair per rejected call (the tool message has ``error=True``
    and the rejection text), a user message per modified call explaining the change, and the
    assistant message with the confirmed and modified calls (modified ones carrying the new
    arguments), which is last, so the run loop runs exactly those. When every call is rejected,
    the last message is a tool message and nothing runs.

    :param confirmation_strategies: Tool name (or tuple of names, or ``"*"``) -> strategy, e.g.
        ``DurableConfirmationStrategy(AlwaysAskPolicy())``.
    :raises ValueError: If the mapping is empty, a key is not a non-empty string or tuple of
        strings, or a strategy has no ``run_async``/``run``.
    """

    allowed_hook_points = ("before_tool",)

    def __init__(self, confirmation_strategies: dict[ToolKey, ConfirmationStrategy]) -> None:
        if not confirmation_strategies:
            raise ValueError("ConfirmationHook needs at least one confirmation strategy.")
        validate_tool_keys(confirmation_strategies, "confirmation_strategies")
        for key, strategy in confirmation_strategies.items():
            if not (callable(getattr(strategy, "run_async", None)) or callable(getattr(strategy, "run", None))):
                raise ValueError(f"Strategy for {key!r} has no run_async() or run(): {strategy!r}.")
        self.confirmation_strategies = dict(confirmation_strategies)

    async def run_async(self, state: State) -> None:
        """Ask for every pending call at once, wait for all decisions, rewrite ``messages``.

        :param state: The run's State: reads ``messages`` (pending calls on the last message),
            ``tools``, ``step_count`` and ``hook_context``; writes ``messages``.
        """
        messages: list[ChatMessage] = state.data.get("messages") or []
        if not messages or not messages[-1].tool_calls:
            return
        last = messages[-1]
        calls = with_unique_ids(last.tool_calls, state.data.get("step_count", 0))
        tools: dict[str, ToolSpec] = {t.name: t for t in state.data.get("tools") or []}
        context = state.data.get("hook_context")
        decisions = await asyncio.gather(*(self._decide(call, tools, context) for call in calls))
        replacement = apply_decisions(last.with_updates(tool_calls=calls), list(decisions))
        state.set("messages", messages[:-1] + replacement, handler_override=replace_values)

    async def _decide(
        self, call: ToolCall, tools: dict[str, ToolSpec], context: dict[str, Any] | None
    ) -> ToolExecutionDecision:
        passthrough = ToolExecutionDecision(
            tool_name=call.tool_name, execute=True, tool_call_id=call.id, final_tool_params=dict(call.arguments)
        )
        spec = tools.get(call.tool_name)
        strategy = lookup_by_tool(call.tool_name, self.confirmation_strategies)
        if spec is None or strategy is None or (call.extra and "invalid_arguments" in call.extra):
            return passthrough
        inputs = {
            "tool_name": call.tool_name,
            "tool_description": spec.description,
            "tool_params": dict(call.arguments),
            "tool_call_id": call.id,
            "confirmation_strategy_context": context,
        }
        run_async = getattr(strategy, "run_async", None)
        decision = await run_async(**inputs) if run_async is not None else strategy.run(**inputs)
        if not isinstance(decision, ToolExecutionDecision):
            decision = ToolExecutionDecision.model_validate(
                decision.to_dict() if hasattr(decision, "to_dict") else decision
            )
        # Bind to this call whatever the strategy said.
        return decision.model_copy(update={"tool_call_id": call.id, "tool_name": call.tool_name})

    def search_attributes(self) -> dict[str, str]:
        """The search attributes the strategies set while a run waits for a person."""
        out: dict[str, str] = {}
        for strategy in self.confirmation_strategies.values():
            if isinstance(strategy, NeedsSearchAttributes):
                out.update(strategy.search_attributes())
        return out

    # -- memory across continue-as-new -------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Strategies' memory (e.g. ``AskOncePolicy``'s confirmed calls), keyed by encoded key."""
        return {
            encode_tool_key(key): strategy.snapshot()
            for key, strategy in self.confirmation_strategies.items()
            if isinstance(strategy, HasMemory)
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Give strategies back what :meth:`snapshot` returned."""
        for raw_key, memory in (data or {}).items():
            strategy = self.confirmation_strategies.get(decode_tool_key(raw_key))
            if isinstance(strategy, HasMemory):
                strategy.restore(memory)

    # -- serialisation -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Serialise; tuple keys become JSON-array strings."""
        return default_to_dict(
            self,
            confirmation_strategies={
                encode_tool_key(key): object_to_dict(strategy) for key, strategy in self.confirmation_strategies.items()
            },
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfirmationHook:
        """Rebuild from :meth:`to_dict`'s output."""
        raw = data.get("init_parameters", {}).get("confirmation_strategies", {})
        return cls({decode_tool_key(key): object_from_dict(value) for key, value in raw.items()})

    def __repr__(self) -> str:
        return f"ConfirmationHook({self.confirmation_strategies!r})"


def with_unique_ids(calls: list[ToolCall], step: int) -> list[ToolCall]:
    """The calls, each with an id unique in the step: an id-less call gets ``hitl-s{step}-c{index}``,
    a repeated id gets ``-{index}`` appended (deterministic, so replay gives the same ids)."""
    seen: set[str] = set()
    out = []
    for index, call in enumerate(calls):
        call_id = call.id or f"hitl-s{step}-c{index}"
        if call_id in seen:
            call_id = f"{call_id}-{index}"
        seen.add(call_id)
        out.append(call if call_id == call.id else call.model_copy(update={"id": call_id}))
    return out


def apply_decisions(message: ChatMessage, decisions: list[ToolExecutionDecision]) -> list[ChatMessage]:
    """The messages that replace ``message`` (the assistant message with the pending calls).

    :raises ValueError: If a call has no decision bound to its id.
    """
    by_id = {d.tool_call_id: d for d in decisions}
    rejections: list[ChatMessage] = []
    explanations: list[ChatMessage] = []
    kept: list[ToolCall] = []
    for call in message.tool_calls:
        decision = by_id.pop(call.id, None)
        if decision is None:
            raise ValueError(f"No decision is bound to tool call {call.tool_name!r} with id {call.id!r}.")
        extra = dict(call.extra or {})
        if decision.record is not None:
            extra[CONFIRMATION_KEY] = decision.record
        if not decision.execute:
            origin = call.model_copy(update={"extra": extra or None})
            text = decision.feedback or REJECTION_FEEDBACK_TEMPLATE.format(tool_name=call.tool_name)
            meta = {CONFIRMATION_KEY: decision.record} if decision.record is not None else {}
            rejections += [
                message.with_updates(tool_calls=[origin]),
                ChatMessage.from_tool(text, origin=origin, error=True, meta=meta),
            ]
            continue
        final = dict(decision.final_tool_params or {})
        if final != call.arguments:
            explanations.append(
                ChatMessage.from_user(
                    decision.feedback or modification_feedback(MODIFICATION_FEEDBACK_TEMPLATE, call.tool_name, final)
                )
            )
        kept.append(call.model_copy(update={"arguments": final, "extra": extra or None}))
    tail = [message.with_updates(tool_calls=kept)] if kept else []
    return rejections + explanations + tail
