"""The current run, as hook code and the families' workflow handlers see it.

There is one way to reach per-run state: :func:`current_run` (or :func:`current_run_or_none`),
which returns the run's :class:`RunContext`. A family keeps what it needs per run in a typed slot
of that context, keyed by its own class: ``current_run().slot(ConfirmationRegistry)``, created
by the family on first use with :meth:`RunContext.slot_or_create`. Nothing is keyed by strings
and the run loop never names a family's class.

Why this mechanism:

- **Inside a workflow** the context is an attribute of the workflow instance
  (:class:`HoldsRunContext`, which ``AgentWorkflow`` is), found through temporalio's
  ``workflow.instance()``. Every piece of a run's workflow code sees the same instance: the run
  loop, its hooks, tasks a hook starts, and the Signal, Update and Query handlers, which Temporal
  runs outside the run's own task (so a ContextVar set by the run would not reach them). One
  lookup serves them all, with nothing to install or reset.
- **A family's workflow handlers** are registered by the family when a run starts
  (``HookFamily.register_handlers``, with ``workflow.set_signal_handler``/``set_update_handler``/
  ``set_query_handler``) and read the run through :func:`current_run_or_none`, like any hook; the
  workflow class inherits nothing from the families.
- **Outside a workflow** (a hook used in-process, a test) there is no workflow instance:
  :func:`set_current_run` installs a context for the calling code, and :func:`current_run` finds
  it there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from temporalio import workflow

from activities.model import ModelCallInput, ModelCallOutput, call_model
from core.payloads import add_usage
from core.spec import AgentSpec
from core.state import State
from hooks.protocol import CancelsPending, ReportsPending

T = TypeVar("T")


@dataclass
class RunContext:
    """Per-run data shared by the run loop, its hooks and the families' message handlers.

    :param run_id: The workflow id.
    :param agent: The run's agent spec.
    :param state: The live State.
    :param phase: Where the run loop is (a hook point, ``"model"``, ``"tools"``, ``"done"``).
    :param hook_token_usage: Usage of the model calls hooks made (summaries), kept apart from the
        agent's own ``token_usage`` as in Haystack.
    """

    run_id: str
    agent: AgentSpec
    state: State
    phase: str = "starting"
    hook_token_usage: dict[str, Any] = field(default_factory=dict)
    #: Appends an event to the run's live stream (``kind``, ``data``; DESIGN.md "Live"); set by the run loop.
    publish: Callable[[str, dict[str, Any]], None] | None = field(default=None, repr=False)
    _slots: dict[type, Any] = field(default_factory=dict, init=False, repr=False)

    def slot(self, kind: type[T]) -> T | None:
        """The family object of class ``kind`` this run holds, or None before the family made one."""
        return self._slots.get(kind)

    def slot_or_create(self, kind: type[T], create: Callable[[], T]) -> T:
        """The family object of class ``kind``, made with ``create()`` on first use.

        :raises TypeError: If ``create`` returns something that is not a ``kind``.
        """
        found = self._slots.get(kind)
        if found is None:
            found = create()
            if not isinstance(found, kind):
                raise TypeError(
                    f"The slot for {kind.__name__} must hold a {kind.__name__}, got {type(found).__name__}."
                )
            self._slots[kind] = found
        return found

    def publish_event(self, kind: str, data: dict[str, Any]) -> None:
        """Tell the run's watchers (a ``RunEvent`` of ``kind``, see core/events.py); nothing when no stream is set."""
        if self.publish is not None:
            self.publish(kind, data)

    def add_hook_usage(self, usage: dict[str, Any]) -> None:
        """Count a hook's model call."""
        self.hook_token_usage = add_usage(self.hook_token_usage, usage)

    def pending_count(self) -> int:
        """Requests waiting for a person, over every family object that holds some (:class:`ReportsPending`)."""
        return sum(held.pending_count() for held in self._slots.values() if isinstance(held, ReportsPending))

    def cancel_pending(self, reason: str) -> int:
        """The run is cancelled: close what waits in every family object that holds some
        (:class:`~hooks.protocol.CancelsPending`); returns how many requests closed."""
        return sum(held.cancel_pending(reason) for held in self._slots.values() if isinstance(held, CancelsPending))


class HoldsRunContext(Protocol):
    """A workflow whose instance carries its run's context (``AgentWorkflow``); None until the run starts."""

    run_context: RunContext | None


#: The context of code running outside a workflow (see the module docstring).
_local: ContextVar[RunContext | None] = ContextVar("agent_local_run_context", default=None)


def set_current_run(context: RunContext | None) -> None:
    """Outside a workflow: make ``context`` the current run for the calling code (None clears it).

    :raises RuntimeError: Inside a workflow, where the run's context belongs to the workflow instance.
    """
    if workflow.in_workflow():
        raise RuntimeError("Inside a workflow the run's context is the workflow instance's run_context.")
    _local.set(context)


def current_run_or_none() -> RunContext | None:
    """The current run's context, or None (before the run starts, or outside any run)."""
    if workflow.in_workflow():
        return getattr(workflow.instance(), "run_context", None)  # HoldsRunContext
    return _local.get()


def current_run() -> RunContext:
    """The context of the run whose code is executing.

    :raises RuntimeError: Outside an ``AgentWorkflow`` run (and with no context set outside a workflow).
    """
    context = current_run_or_none()
    if context is None:
        raise RuntimeError("current_run() is only available inside an AgentWorkflow run.")
    return context


def run_logger(name: str) -> logging.Logger | logging.LoggerAdapter:
    """``workflow.logger`` inside a workflow (quiet during replay), the module logger ``name`` elsewhere."""
    return workflow.logger if workflow.in_workflow() else logging.getLogger(name)


async def call_model_from_hook(request: ModelCallInput) -> ModelCallOutput:
    """A hook's model call (a summary): the ``chat_completion`` activity with ``purpose="hook"``,
    its usage added to the current run's ``hook_token_usage``.

    :param request: The call; its ``purpose`` is set to ``"hook"``.
    """
    output = await call_model(request.model_copy(update={"purpose": "hook"}))
    if (run := current_run_or_none()) is not None:
        run.add_hook_usage(output.usage)
    return output
