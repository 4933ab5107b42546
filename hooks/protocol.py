"""The hook protocol: what the run loop calls at each of its six points, and the few other
things it may ask of a hook.

Same meaning as Haystack 3.x (``haystack.hooks.protocol``), with one rule that durability adds:
a hook runs as workflow code, so it must be deterministic (no I/O, no wall clock, no
randomness, no threads). A hook that needs I/O awaits an activity from ``run_async``.

Beyond ``run``/``run_async`` the run loop looks for these protocols (``isinstance`` checks,
nothing else is duck-typed):

- :class:`HasMemory`: memory kept across continue-as-new (``snapshot``/``restore``);
- :class:`WarmsUp`/:class:`WarmsUpAsync` and :class:`Closes`/:class:`ClosesAsync`: lifecycle, once
  per workflow run (the async variant is awaited in preference); ``close`` runs also when the run
  fails or is cancelled;
- :class:`OffloadsInToolActivity`: an ``after_tool`` hook that wants the tool activity itself
  to write a big result to a store, so the result never enters history;
- :class:`ReadsToolResults`: whether an ``after_tool`` hook reads this step's tool results
  (``reads_tool_results = False`` declares it does not); see "Tool results and hook order";
- :class:`NeedsSearchAttributes`: search attributes the hook sets, checked when a run starts;
- :class:`ReportsPending` (on a family's per-run object, not a hook): how many decisions a run awaits;
- :class:`CancelsPending` (on a family's per-run object): close what waits for a person when the
  run is cancelled.

Tool results and hook order
---------------------------
``after_tool`` hooks run in registration order, and each sees the tool results as the hooks before
it left them (a redaction hook registered before ``ToolResultOffloadHook`` means the store only ever
gets redacted text). The tool activity may write a result to a store itself
(:class:`OffloadsInToolActivity`) only when that gives the same outcome as running the hooks in
order: the offloading hook comes first among the ``after_tool`` hooks that read results. Any hook
counts as reading results (it may read, rewrite or copy them) unless it declares otherwise with a
class attribute ``reads_tool_results = False`` (:class:`ReadsToolResults`, checked by
:func:`reads_tool_results`); a function hook (``@hook``) cannot declare it, so it always counts.
Declare it only for a hook that never looks at tool-result messages (one that reads only
``step_count`` or ``token_usage``, say).

Errors
------
A hook is part of the run, so what it raises decides the run's fate, by one rule:

- **Any exception a hook raises** from ``run``/``run_async``/``warm_up``/``close`` (a ``ValueError``,
  a ``KeyError``, an ``ActivityError`` from an activity it awaited after that activity's retries)
  **ends the run at once**: the workflow fails with a non-retryable ``ApplicationError`` of type
  ``"HookError"`` whose message names the hook (its class's or function's import path), the hook
  point, the step and the original error (``handle.result()`` raises it; ``agent status`` shows it).
  Retrying the same deterministic code on the same history would raise the same error forever.
- **Non-determinism** (``temporalio.workflow.NondeterminismError``, which includes the sandbox's
  ``RestrictedWorkflowAccessError`` for a hook that reads the clock or does I/O) and
  ``ReadOnlyContextError`` are bugs in the code, not in the run: they fail the *workflow task*,
  which Temporal retries, so the run waits (visibly: ``agent status`` shows the failing task and
  its last error) until fixed code is deployed, then goes on from where it was.
- A worker that cannot rebuild the run's agent spec (a hook's module missing on the worker) fails
  the run with ``"AgentSpecError"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from temporalio import workflow
from temporalio.workflow import ContinueAsNewError

from core.spec import (
    AFTER_RUN,
    AFTER_TOOL,
    BEFORE_LLM,
    BEFORE_RUN,
    BEFORE_TOOL,
    ON_EXIT,
    VALID_HOOK_POINTS,
    HookPoint,
)
from core.state import State

if TYPE_CHECKING:
    from activities.tool_invocation import OffloadInstruction

#: Errors that keep the workflow task retrying instead of failing the run (see "Errors" above):
#: the code does not match the history (non-determinism, including sandbox violations) or broke
#: workflow rules, or a continue-as-new is under way. Deploying fixed code lets the run go on.
TASK_RETRYING_ERRORS = (workflow.NondeterminismError, workflow.ReadOnlyContextError, ContinueAsNewError)

__all__ = [
    "AFTER_RUN",
    "AFTER_TOOL",
    "BEFORE_LLM",
    "BEFORE_RUN",
    "BEFORE_TOOL",
    "ON_EXIT",
    "VALID_HOOK_POINTS",
    "Closes",
    "CancelsPending",
    "ClosesAsync",
    "HasMemory",
    "Hook",
    "HookPoint",
    "NeedsSearchAttributes",
    "OffloadsInToolActivity",
    "ReadsToolResults",
    "ReportsPending",
    "TASK_RETRYING_ERRORS",
    "WarmsUp",
    "WarmsUpAsync",
    "reads_tool_results",
]


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


@runtime_checkable
class HasMemory(Protocol):
    """A hook that remembers something across steps (``AskOncePolicy``'s confirmed calls).

    A long run continues as new with a fresh workflow run and a hook rebuilt from its spec;
    the run loop carries what ``snapshot`` returned into the next run and hands it to
    ``restore`` before the first step there.
    """

    def snapshot(self) -> Any:
        """The memory, as JSON-serialisable data (it is recorded in history)."""
        ...

    def restore(self, data: Any) -> None:
        """Take back what :meth:`snapshot` returned.

        :param data: The snapshot, after a JSON round trip.
        """
        ...


@runtime_checkable
class WarmsUp(Protocol):
    """A hook with set-up to do once per workflow run, before its first point runs.

    Called at the start of every workflow run (so again after continue-as-new and after the
    worker rebuilds the run on replay). It is workflow code: deterministic, no I/O. Resources
    that need I/O belong to the worker and are reached through an activity.
    """

    def warm_up(self) -> None:
        """Prepare (e.g. load a token counter's encoding from the process cache)."""
        ...


@runtime_checkable
class WarmsUpAsync(Protocol):
    """:class:`WarmsUp`, awaited: the run loop awaits ``warm_up_async`` in preference to ``warm_up``
    (it may await activities)."""

    async def warm_up_async(self) -> None:
        """Prepare, awaiting activities if needed."""
        ...


@runtime_checkable
class ClosesAsync(Protocol):
    """:class:`Closes`, awaited: the run loop awaits ``close_async`` in preference to ``close``."""

    async def close_async(self) -> None:
        """Release, awaiting activities if needed."""
        ...


@runtime_checkable
class Closes(Protocol):
    """A hook with something to release when the workflow run ends (also when it fails).

    Workflow code, like :meth:`WarmsUp.warm_up`.
    """

    def close(self) -> None:
        """Release what :meth:`WarmsUp.warm_up` prepared."""
        ...


@runtime_checkable
class ReadsToolResults(Protocol):
    """An ``after_tool`` hook that says whether it reads this step's tool results.

    Set ``reads_tool_results = False`` (a class attribute) on a hook that never reads, rewrites or
    copies tool-result messages; an offloading hook registered after it may then still have the
    tool activity write results (see "Tool results and hook order" above). A hook without the
    attribute, or with any other value, counts as reading them.
    """

    reads_tool_results: bool


def reads_tool_results(hook: Any) -> bool:
    """Whether ``hook`` may read this step's tool results: True unless it declares
    ``reads_tool_results = False`` (:class:`ReadsToolResults`)."""
    return not (isinstance(hook, ReadsToolResults) and hook.reads_tool_results is False)


@runtime_checkable
class OffloadsInToolActivity(Protocol):
    """An ``after_tool`` hook that may have the tool activity write a result to a store itself.

    Before each tool call the run loop asks the first ``after_tool`` hook that has this protocol
    (the ones after it run later, on what it left, so they are not asked), and hands it the
    ``after_tool`` hooks registered before it. Its instruction travels with the call, so a
    multi-MB result is written on the worker and only a pointer comes back into history.

    Writing in the activity must give the same outcome as running the hooks in order: the hook
    answers None when any of ``hooks_before`` reads tool results (:func:`reads_tool_results`) or
    when its decision needs more than the tool name and result, and then decides in its own turn.
    It must recognise (and skip) the results the activity already offloaded.
    """

    def activity_offload(
        self,
        state: State,
        tool_name: str,
        call_id: str | None,
        position: int,
        hooks_before: Sequence[Any] = (),
    ) -> OffloadInstruction | None:
        """The instruction for this call, or None to leave the result to the hook's own turn.

        :param state: The run's State before the call.
        :param tool_name: The tool to be called.
        :param call_id: The call's id (None for id-less calls).
        :param position: The call's position in this step's batch.
        :param hooks_before: The ``after_tool`` hooks registered before this one, which run
            before it on the tool results.
        """
        ...


@runtime_checkable
class NeedsSearchAttributes(Protocol):
    """A hook that upserts search attributes; ``Agent.start`` checks the namespace has them, so a
    run never starts only to fail its workflow task on an unknown attribute."""

    def search_attributes(self) -> dict[str, str]:
        """Name -> Temporal type (``"Bool"``, ``"Keyword"``, ...) of each attribute it sets."""
        ...


@runtime_checkable
class ChecksToolArguments(Protocol):
    """A hook that names tools' arguments (a rule over ``args``) and checks them against the tools'
    JSON schemas when the ``Agent`` is built (``agent.Agent``), so a misspelled argument is a
    ``ValueError`` where it is written, not a surprise in every run."""

    def check_tool_arguments(self, schemas: dict[str, dict[str, Any]], every_tool_known: bool) -> None:
        """Check what the hook reads of tools' arguments.

        :param schemas: Tool name -> JSON schema of its parameters, for the agent's function and
            sub-agent tools (an MCP server's tools are listed only when a run starts: absent).
        :param every_tool_known: False when the agent has MCP tools, whose names and arguments
            are not known yet (a rule for every tool may be meant for them).
        :raises ValueError: Naming the rule, the tool, the unknown argument and the known ones.
        """
        ...


@runtime_checkable
class ReportsPending(Protocol):
    """A family's per-run object (a ``RunContext`` slot) that holds requests waiting for a person."""

    def pending_count(self) -> int:
        """How many requests wait for a decision now."""
        ...


@runtime_checkable
class CancelsPending(Protocol):
    """A family's per-run object (a ``RunContext`` slot) whose waiting requests close when the run
    is cancelled (``handle.cancel(reason)`` or Temporal's own cancel), so nothing stays pending on a
    run that has ended. Workflow code, called once, before ``after_run`` and ``close``."""

    def cancel_pending(self, reason: str) -> int:
        """Close every request still waiting, as cancelled with ``reason``; returns how many."""
        ...
