"""``ToolResultPruningCompactor``: replace old, large tool results with a short placeholder."""

from __future__ import annotations

from typing import Any

from core.messages import ChatMessage
from core.serialization import default_from_dict, default_to_dict
from hooks.compaction.protocol import Compactor
from hooks.compaction.token_counters import TokenCounter
from hooks.compaction.utils import COMPACTION_META_KEY, check_result_rewriting, replace_tool_results_until_target

STRATEGY = "tool_result_pruning"
DEFAULT_PLACEHOLDER = "[Tool result removed to free up context. Call `{tool_name}` again if you need it.]"


class ToolResultPruningCompactor(Compactor):
    """Rewrites older tool results as a placeholder, keeping every message and so every call/result pair.

    Results are pruned oldest first and pruning stops as soon as the conversation fits the target,
    so as much recent output as possible stays. The conversation is counted once; each pruned
    result lowers the running total by what it saved. A pruned message keeps its call (``origin``),
    its error flag and its meta, and is marked in ``meta["context_compaction"]`` with the tokens
    it used to take, so it is never pruned twice.

    :param min_keep_steps: How many of the newest tool-calling steps keep their results untouched,
        even over the target. At least 1: the model has not acted on the latest results yet.
    :param min_tokens: Only results taking more than this many tokens are pruned.
    :param placeholder: The text left in place of a result; ``{tool_name}`` is replaced by the tool's name.
    :param skip_meta_keys: Results whose ``meta`` has any of these keys are left alone. The default
        covers results that ``ToolResultOffloadHook`` already replaced with a reference the model
        needs to read them back.
    :raises ValueError: If ``min_keep_steps < 1`` or ``min_tokens < 0``.
    """

    def __init__(
        self,
        *,
        min_keep_steps: int = 1,
        min_tokens: int = 200,
        placeholder: str = DEFAULT_PLACEHOLDER,
        skip_meta_keys: tuple[str, ...] | list[str] = ("tool_result_offloaded",),
    ) -> None:
        check_result_rewriting(min_keep_steps, min_tokens)
        self.min_keep_steps = min_keep_steps
        self.min_tokens = min_tokens
        self.placeholder = placeholder
        self.skip_meta_keys = tuple(skip_meta_keys)

    def compact(
        self, messages: list[ChatMessage], target_tokens: int, token_counter: TokenCounter
    ) -> list[ChatMessage] | None:
        """The conversation with older results pruned, or None when no result could be pruned."""
        return replace_tool_results_until_target(
            messages,
            target_tokens=target_tokens,
            token_counter=token_counter,
            min_keep_steps=self.min_keep_steps,
            replace=lambda message, _index: self._prune(message, token_counter),
        )

    def _prune(self, message: ChatMessage, counter: TokenCounter) -> tuple[ChatMessage, int] | None:
        """The placeholder message and the tokens it saves, or None when ``message`` is not prunable."""
        result = message.tool_call_result
        if result is None or COMPACTION_META_KEY in message.meta:
            return None
        if any(key in message.meta for key in self.skip_meta_keys):
            return None
        original_tokens = counter.count([message])
        if original_tokens <= self.min_tokens:
            return None
        pruned = ChatMessage.from_tool(
            self.placeholder.replace("{tool_name}", result.origin.tool_name),
            origin=result.origin,
            error=result.error,
            meta={**message.meta, COMPACTION_META_KEY: {"strategy": STRATEGY, "original_tokens": original_tokens}},
        )
        saved = original_tokens - counter.count([pruned])
        return (pruned, saved) if saved > 0 else None

    def to_dict(self) -> dict[str, Any]:
        """Serialise the compactor."""
        return default_to_dict(
            self,
            min_keep_steps=self.min_keep_steps,
            min_tokens=self.min_tokens,
            placeholder=self.placeholder,
            skip_meta_keys=list(self.skip_meta_keys),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolResultPruningCompactor:
        """Rebuild the compactor from :meth:`to_dict`'s output."""
        return default_from_dict(cls, data)
