"""``CompactionHook``: compact the conversation before a model call once it fills too much of the window."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from core.messages import ChatMessage
from core.serialization import default_to_dict, object_from_dict, object_to_dict
from core.state import State, replace_values
from hooks import lifecycle
from hooks.compaction.protocol import COMPACTOR_SLOT, COUNTER_SLOT, Compactor
from hooks.compaction.token_counters import ApproximateTokenCounter, TokenCounter, Tools
from hooks.compaction.utils import last_assistant_index
from hooks.context import run_logger


def estimate_context_tokens(
    messages: Sequence[ChatMessage], context_tokens: int, token_counter: TokenCounter, tools: Tools | None = None
) -> int:
    """The size of the next model request.

    :param messages: The conversation, oldest to newest.
    :param context_tokens: The ``context_tokens`` State anchor: the provider's prompt plus completion
        tokens of the last model call, which covers everything through the last assistant message
        (the system prompt, tool schemas and chat-template overhead included), or the whole
        conversation when there is no assistant message. ``0`` means no anchor yet.
    :param token_counter: Counts what the anchor does not cover.
    :param tools: Tool schemas sent with the request; counted only when there is no anchor.
    :returns: The anchor plus the counted messages after the last assistant message; with no anchor,
        the counted conversation and tools.
    """
    if not context_tokens:
        return token_counter.count(messages, tools)
    last = last_assistant_index(messages)
    if last < 0:
        return context_tokens
    return context_tokens + token_counter.count(messages[last + 1 :])


async def _compact_async(
    compactor: Any, messages: list[ChatMessage], target_tokens: int, token_counter: TokenCounter
) -> list[ChatMessage] | None:
    """``compactor.compact_async`` when it has one (awaited if it returns an awaitable), else ``compactor.compact``."""
    compact_async = getattr(compactor, "compact_async", None)
    if not callable(compact_async):
        return compactor.compact(messages, target_tokens, token_counter)
    outcome = compact_async(messages, target_tokens, token_counter)
    return await outcome if inspect.isawaitable(outcome) else outcome


class CompactionHook:
    """Compacts the conversation once it fills ``compact_at`` of the model's context window.

    A ``before_llm`` hook. Before each model call it estimates the request's size (see
    :func:`estimate_context_tokens`: the ``context_tokens`` anchor the run loop records from the
    last reply, plus only the messages appended since, so deciding costs next to nothing however
    long the conversation is). At ``compact_at`` of ``context_window`` or more, it hands the
    messages to its compactor with a target of ``compact_to`` of the window minus the request's
    non-message overhead (tool schemas, chat template), and writes the result back with
    ``replace_values``. After a compaction the anchor is re-estimated for the compacted messages
    through the last assistant message, plus the same overhead; an absent anchor stays absent.

    ``run_async`` (what the run loop awaits) uses ``compactor.compact_async``, so a summarising
    compactor can await its model activity, and falls back to ``compactor.compact`` for a
    duck-typed compactor without it; ``run`` uses ``compactor.compact``.

    Lifecycle, exactly as in Haystack: ``warm_up``/``close`` reach the token counter and the
    compactor (whichever has the method). ``warm_up_async`` calls the counter's ``warm_up`` (never
    its ``warm_up_async``) and the compactor's ``warm_up_async``, else its ``warm_up``;
    ``close_async`` calls each part's ``close_async``, else its ``close``. The run loop, being
    async, calls the two async variants.

    :param compactor: How to compact: ``SlidingWindowCompactor``, ``ToolResultPruningCompactor``,
        ``SummarizationCompactor`` or any :class:`Compactor`.
    :param context_window: The model's context window in tokens.
    :param compact_at: Fraction of the window at which to compact. Leave room above it for the
        reply and the tool results it brings.
    :param compact_to: Fraction of the window to compact down to.
    :param token_counter: Counts what the anchor does not cover; ``ApproximateTokenCounter()`` by
        default (as in Haystack), ``TiktokenTokenCounter()`` for OpenAI-exact counts.
    :raises ValueError: Unless ``context_window > 0`` and ``0 < compact_to < compact_at <= 1``.
    """

    allowed_hook_points = ("before_llm",)

    def __init__(
        self,
        compactor: Compactor,
        *,
        context_window: int,
        compact_at: float = 0.7,
        compact_to: float = 0.4,
        token_counter: TokenCounter | None = None,
    ) -> None:
        if context_window < 1:
            raise ValueError(f"`context_window` must be a positive number of tokens, got {context_window}.")
        if not 0 < compact_to < compact_at <= 1:
            raise ValueError(
                f"`compact_at` and `compact_to` must satisfy 0 < compact_to < compact_at <= 1, got "
                f"compact_at={compact_at} and compact_to={compact_to}: a target at or above the trigger would leave "
                "the conversation over the trigger, so it would be compacted again at every step."
            )
        self.compactor = compactor
        self.context_window = context_window
        self.compact_at = compact_at
        self.compact_to = compact_to
        self.token_counter: TokenCounter = token_counter or ApproximateTokenCounter()

    def run(self, state: State) -> None:
        """Compact ``state.data["messages"]`` with ``compactor.compact`` when it is over the trigger."""
        plan = self._plan(state)
        if plan is not None:
            messages, target_tokens, overhead = plan
            compacted = self.compactor.compact(messages, target_tokens, self.token_counter)
            self._apply(state, messages, compacted, target_tokens, overhead)

    async def run_async(self, state: State) -> None:
        """Compact ``state.data["messages"]`` with ``compactor.compact_async`` when it is over the trigger.

        A compactor without ``compact_async`` (duck-typed) is called through ``compact``.
        """
        plan = self._plan(state)
        if plan is not None:
            messages, target_tokens, overhead = plan
            compacted = await _compact_async(self.compactor, messages, target_tokens, self.token_counter)
            self._apply(state, messages, compacted, target_tokens, overhead)

    def warm_up(self) -> None:
        """Warm up the token counter and the compactor (the run loop calls this once per workflow run)."""
        for part in (self.token_counter, self.compactor):
            lifecycle.warm_up(part)

    async def warm_up_async(self) -> None:
        """As Haystack's: the token counter's ``warm_up`` (a counter's ``warm_up_async`` is never
        called), then the compactor's ``warm_up_async``, else its ``warm_up``."""
        lifecycle.warm_up(self.token_counter)
        await lifecycle.warm_up_async(self.compactor)

    def close(self) -> None:
        """Release the token counter's and the compactor's resources (once, when the workflow run ends)."""
        for part in (self.token_counter, self.compactor):
            lifecycle.close(part)

    async def close_async(self) -> None:
        """Release the token counter's and the compactor's resources, through their async variants where present."""
        for part in (self.token_counter, self.compactor):
            await lifecycle.close_async(part)

    def target_tokens(
        self, messages: Sequence[ChatMessage], context_tokens: int, tools: Tools | None = None
    ) -> tuple[int, int] | None:
        """``(target for the messages, non-message overhead)``, or None below the trigger.

        :param messages: The conversation.
        :param context_tokens: The ``context_tokens`` anchor (``0`` for none).
        :param tools: The tool schemas sent with the request.
        """
        estimated = estimate_context_tokens(messages, context_tokens, self.token_counter, tools)
        if estimated < self.context_window * self.compact_at:
            return None
        overhead = estimated - self.token_counter.count(messages)
        if overhead < 0:
            run_logger(__name__).warning(
                "The token counter measures the messages at more tokens than the estimated request (%s > %s); it may "
                "overestimate: consider a more accurate TokenCounter.",
                estimated - overhead,
                estimated,
            )
        return max(int(self.context_window * self.compact_to) - overhead, 0), overhead

    def _plan(self, state: State) -> tuple[list[ChatMessage], int, int] | None:
        # Read the live data: State.get would deep-copy the whole conversation at every step.
        messages: list[ChatMessage] = state.data.get("messages") or []
        target = self.target_tokens(messages, state.data.get("context_tokens") or 0, state.data.get("tools"))
        return None if target is None else (messages, *target)

    def _apply(
        self,
        state: State,
        before: list[ChatMessage],
        compacted: list[ChatMessage] | None,
        target_tokens: int,
        overhead: int,
    ) -> None:
        if compacted is None:
            return
        state.set("messages", compacted, handler_override=replace_values)
        if state.data.get("context_tokens"):
            # Anchor again through the last assistant message, as the provider would have counted it; the
            # results after it stay uncounted so a second compaction hook does not count them twice.
            last = last_assistant_index(compacted)
            accounted = compacted if last < 0 else compacted[: last + 1]
            state.set("context_tokens", self.token_counter.count(accounted) + overhead)
        run_logger(__name__).debug(
            "Compacted the conversation at step %s from %s to %s messages, targeting %s tokens.",
            state.data.get("step_count", 0),
            len(before),
            len(compacted),
            target_tokens,
        )

    def to_dict(self) -> dict[str, Any]:
        """Serialise the hook with its compactor and token counter."""
        return default_to_dict(
            self,
            compactor=object_to_dict(self.compactor),
            context_window=self.context_window,
            compact_at=self.compact_at,
            compact_to=self.compact_to,
            token_counter=object_to_dict(self.token_counter),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompactionHook:
        """Rebuild the hook, its compactor and its token counter."""
        params = dict(data.get("init_parameters", {}))
        compactor = object_from_dict(params.pop("compactor"), COMPACTOR_SLOT)
        counter = params.pop("token_counter", None)
        return cls(compactor, token_counter=object_from_dict(counter, COUNTER_SLOT) if counter else None, **params)
