"""The ``Compactor`` protocol: *how* a conversation is made shorter (``CompactionHook`` decides *when*)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from core.messages import ChatMessage
from hooks.compaction.token_counters import TokenCounter


@runtime_checkable
class Compactor(Protocol):
    """Rewrites a conversation into a shorter one that carries the same working context.

    Every implementation honours three rules (Haystack's):

    1. **Return None unless the conversation gets smaller.** The caller applies whatever else comes back.
    2. **Return a new list; leave ``messages`` as it is.** The caller owns it and writes the result back.
    3. **Keep tool calls and their results together.** Never keep a tool result without the assistant
       message that made the call, nor a call without all its results: chat APIs reject both.

    ``target_tokens`` is a goal, not a guarantee: a compactor that cannot reach it gets as close as
    it can without stripping what the agent needs to keep working.

    Compactors run as workflow code: deterministic, and any I/O (a summary written by the model)
    goes through an activity awaited from :meth:`compact_async`. ``to_dict``/``from_dict`` let the
    compactor travel inside a serialised ``CompactionHook``.
    """

    def compact(
        self, messages: list[ChatMessage], target_tokens: int, token_counter: TokenCounter
    ) -> list[ChatMessage] | None:
        """A shorter replacement for ``messages``, or None to leave them unchanged.

        :param messages: The conversation, oldest to newest.
        :param target_tokens: The size the result should come in under.
        :param token_counter: The counter the caller sized the context with.
        """
        ...

    async def compact_async(
        self, messages: list[ChatMessage], target_tokens: int, token_counter: TokenCounter
    ) -> list[ChatMessage] | None:
        """Same as :meth:`compact`; the one ``CompactionHook.run_async`` awaits (and where activities go)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialise the compactor's settings."""
        ...
