"""The two small interfaces the offload hook is built from: where results go, and when.

Both travel by reference in the workflow input (``to_dict``/``from_dict``), so a custom store
or policy must be a module-level class the worker can import.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from core.state import State


@runtime_checkable
class ToolResultStore(Protocol):
    """Where offloaded tool results live; ``read_tool_result`` fetches them back.

    In a run the store is only a descriptor: the hook sends ``to_dict()`` to the
    ``store_tool_result`` activity, which rebuilds the store on the worker and calls ``write``.
    A store may also define ``for_run(run_id) -> ToolResultStore`` returning a copy scoped to
    one run (its keys and readable references confined to that run); the hook and the
    ``read_tool_result`` tool call it when present.
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
        """Serialise to ``{"type": import_path, "init_parameters": {...}}``."""
        ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolResultStore:
        """Rebuild from :meth:`to_dict`'s output."""
        ...


@runtime_checkable
class OffloadPolicy(Protocol):
    """Decides, per tool result, whether it is offloaded or stays in the conversation.

    Policies run as workflow code: keep ``should_offload`` deterministic (no I/O, no clock).
    """

    def should_offload(self, tool_name: str, result: str, state: State) -> bool:
        """Whether to offload this result.

        :param tool_name: The tool that produced it.
        :param result: The result text as it would stay in the conversation.
        :param state: The run's live ``State``, for policies that look at the run.
        """
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialise to ``{"type": import_path, "init_parameters": {...}}``."""
        ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OffloadPolicy:
        """Rebuild from :meth:`to_dict`'s output."""
        ...
