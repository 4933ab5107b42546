"""The hook protocol: what the run loop calls at each of its six points.

Same meaning as Haystack 3.x (``haystack.hooks.protocol``), with one rule that durability adds:
a hook runs as workflow code, so it must be deterministic (no I/O, no wall clock, no
randomness, no threads). A hook that needs I/O awaits an activity from ``run_async``.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, get_args, runtime_checkable

from agent.state import State

HookPoint = Literal["before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run"]

BEFORE_RUN: HookPoint = "before_run"
BEFORE_LLM: HookPoint = "before_llm"
BEFORE_TOOL: HookPoint = "before_tool"
AFTER_TOOL: HookPoint = "after_tool"
ON_EXIT: HookPoint = "on_exit"
AFTER_RUN: HookPoint = "after_run"
VALID_HOOK_POINTS: tuple[HookPoint, ...] = get_args(HookPoint)


@runtime_checkable
class Hook(Protocol):
    """Something the agent invokes at a point of its run loop with the live ``State``.

    A hook changes the run only by mutating ``State``. It may also define
    ``async def run_async(self, state)`` (awaited in preference to ``run``, and the place to
    await activities) and ``allowed_hook_points`` (a tuple of points it may be registered
    under; registering it elsewhere is a ``ValueError`` when the ``Agent`` is built).
    """

    def run(self, state: State) -> None:
        """Run against the live ``State``, mutating it in place."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialise to ``{"type": import_path, "init_parameters": {...}}``."""
        ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hook:
        """Rebuild from :meth:`to_dict`'s output."""
        ...
