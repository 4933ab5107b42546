"""The two small interfaces the offload hook is built from: where results go, and when.

Both travel by reference in the workflow input (``to_dict``/``from_dict``), so a custom store
or policy must be a module-level class the worker can import.

As in Haystack, each is a ``Protocol`` with default ``to_dict``/``from_dict``: subclass it and a
store or policy whose constructor takes no arguments serialises as
``{"type": "<module>.<Class>", "init_parameters": {}}`` and rebuilds with no further code (override
both when the constructor takes arguments). Both are also ``runtime_checkable``, so
``isinstance(obj, ToolResultStore)`` holds for a subclass and for any class with the same methods.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from core.serialization import default_from_dict, default_to_dict
from core.state import State
from core.trust import Slot


@runtime_checkable
class ToolResultStore(Protocol):
    """Where offloaded tool results live; ``read_tool_result`` fetches them back.

    In a run the store is only a descriptor: the hook sends ``to_dict()`` to the
    ``store_tool_result`` activity, which rebuilds the store on the worker and calls ``write``.
    A store may also define ``for_run(run_id) -> ToolResultStore`` returning a copy scoped to
    one run (its keys and readable references confined to that run); the hook and the
    ``read_tool_result`` tool call it when present.

    The default ``to_dict``/``from_dict`` cover stores whose constructor takes no arguments.
    """

    def write(self, *, key: str, content: str) -> str:
        """Persist ``content`` under ``key`` and return a reference ``read`` resolves.

        Writing the same key twice with the same content must be harmless (activities retry).

        :param key: A relative, per-result key derived from the tool call (e.g. ``step-3/search/call_1.txt``).
        :param content: The tool result text.
        :returns: A reference string (a path or ``s3://`` URI) to put in the conversation.
        """
        ...

    def read(self, reference: str) -> str:
        """Return the content written under ``reference``.

        :param reference: A reference returned by :meth:`write`, passed back unchanged.
        """
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialise to ``{"type": import_path, "init_parameters": {}}`` (override when ``__init__`` takes arguments)."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolResultStore:
        """Rebuild from :meth:`to_dict`'s output: ``cls(**init_parameters)``."""
        return default_from_dict(cls, data)


@runtime_checkable
class OffloadPolicy(Protocol):
    """Decides, per tool result, whether it is offloaded or stays in the conversation.

    Policies run as workflow code: keep ``should_offload`` deterministic (no I/O, no clock).
    A policy that decides from the tool name and result alone may say so with a class attribute
    ``decides_without_state = True``; the tool activity may then apply it itself (see
    ``ToolResultOffloadHook.activity_offload``). The default ``to_dict``/``from_dict`` cover
    policies whose constructor takes no arguments.
    """

    def should_offload(self, tool_name: str, result: str, state: State) -> bool:
        """Whether to offload this result.

        :param tool_name: The tool that produced it.
        :param result: The result text as it would stay in the conversation.
        :param state: The run's live ``State``, for policies that look at the run.
        """
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialise to ``{"type": import_path, "init_parameters": {}}`` (override when ``__init__`` takes arguments)."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OffloadPolicy:
        """Rebuild from :meth:`to_dict`'s output: ``cls(**init_parameters)``."""
        return default_from_dict(cls, data)


#: What a run's input may name in this family's places (core.trust checks them before construction).
STORE_SLOT = Slot("tool result store", methods=("write", "read"))
OFFLOAD_POLICY_SLOT = Slot("offload policy", methods=("should_offload",))
