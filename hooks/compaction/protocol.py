"""The ``Compactor`` protocol: *how* a conversation is made shorter (``CompactionHook`` decides *when*).

As in Haystack, ``Compactor`` is both a protocol and a base class: subclass it explicitly and
implement ``compact`` (and ``to_dict`` when the compactor has settings), and the rest comes with
it: ``compact_async`` calls ``compact``, ``to_dict``/``from_dict`` serialise a compactor without
settings by import path, and the lifecycle methods do nothing. A class that does not subclass it
(duck typing) works with ``CompactionHook`` too, which looks each method up before calling it.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from core.messages import ChatMessage
from core.serialization import default_from_dict, default_to_dict
from core.trust import Slot
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

    Compactors run as workflow code: deterministic, and any I/O (a summary written by the model, a
    result written to a store) goes through an activity awaited from :meth:`compact_async`.
    ``to_dict``/``from_dict`` let the compactor travel inside a serialised ``CompactionHook``: the
    defaults fit a compactor whose constructor takes no arguments; one with settings implements
    ``to_dict``, and ``from_dict`` too when a setting must be rebuilt first (a store, a nested object).

    ``isinstance(obj, Compactor)`` checks every method named here, defaults included, so a
    duck-typed compactor may fail it and still work: ``CompactionHook`` does not rely on it.
    """

    def compact(
        self, messages: list[ChatMessage], target_tokens: int, token_counter: TokenCounter
    ) -> list[ChatMessage] | None:
        """A shorter replacement for ``messages``, or None to leave them unchanged.

        :param messages: The conversation, oldest to newest.
        :param target_tokens: The size the result should come in under.
        :param token_counter: The counter the caller sized the context with.
        :raises NotImplementedError: Unless a subclass implements it (an async-only compactor may not).
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not implement compact(); await compact_async (CompactionHook.run_async does)."
        )

    async def compact_async(
        self, messages: list[ChatMessage], target_tokens: int, token_counter: TokenCounter
    ) -> list[ChatMessage] | None:
        """The one ``CompactionHook.run_async`` awaits. By default, :meth:`compact`.

        Override it when compacting needs I/O: in a workflow, await an activity here.
        """
        return self.compact(messages, target_tokens, token_counter)

    def warm_up(self) -> None:
        """Prepare once per workflow run (workflow code: no I/O). Does nothing by default."""

    async def warm_up_async(self) -> None:
        """Async variant of :meth:`warm_up`; by default it calls :meth:`warm_up`, so overriding the sync one is enough."""
        self.warm_up()

    def close(self) -> None:
        """Release what :meth:`warm_up` prepared, when the workflow run ends. Does nothing by default."""

    async def close_async(self) -> None:
        """Async variant of :meth:`close`; by default it calls :meth:`close`."""
        self.close()

    def to_dict(self) -> dict[str, Any]:
        """Serialise the compactor: by default its import path and no settings."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Compactor:
        """Rebuild the compactor, passing ``data["init_parameters"]`` to the constructor."""
        return default_from_dict(cls, data)


#: What a run's input may name in this family's places (core.trust checks them before construction).
COMPACTOR_SLOT = Slot("compactor", any_of=("compact", "compact_async"))
COUNTER_SLOT = Slot("token counter", methods=("count",))
RESULT_STORE_SLOT = Slot("tool result store", methods=("write",))
CHAT_GENERATOR_SLOT = Slot("chat generator spec", methods=("to_dict",))
