"""The current run, as hook code sees it.

Hooks get the ``State``; a few need more of the run: its spec (tool schemas), a place to
publish a pending confirmation that Signals, Updates and Queries can see, and the token usage of
the model calls hooks make. The run loop puts a :class:`RunContext` in a ContextVar for the
duration of the run; :func:`current_run` reads it.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from temporalio import workflow

from activities.model import ModelCallInput, ModelCallOutput, call_model
from core.payloads import add_usage
from core.spec import AgentSpec
from core.state import State
from hooks.protocol import ReportsPending


@dataclass
class RunContext:
    """Per-run data shared by the run loop, its hooks and its message handlers.

    :param run_id: The workflow id.
    :param agent: The run's agent spec.
    :param state: The live State.
    :param phase: Where the run loop is (a hook point, ``"model"``, ``"tools"``, ``"done"``).
    :param extensions: Per-run objects owned by hook families (e.g. the confirmation desk),
        keyed by a name the family chooses.
    :param hook_token_usage: Usage of the model calls hooks made (summaries), kept apart from the
        agent's own ``token_usage`` as in Haystack.
    """

    run_id: str
    agent: AgentSpec
    state: State
    phase: str = "starting"
    extensions: dict[str, Any] = field(default_factory=dict)
    hook_token_usage: dict[str, Any] = field(default_factory=dict)

    def add_hook_usage(self, usage: dict[str, Any]) -> None:
        """Count a hook's model call."""
        self.hook_token_usage = add_usage(self.hook_token_usage, usage)

    def pending_count(self) -> int:
        """Requests waiting for a person, over every extension that holds some."""
        return sum(ext.pending_count() for ext in self.extensions.values() if isinstance(ext, ReportsPending))


_current: ContextVar[RunContext | None] = ContextVar("agent_run_context", default=None)


def set_current_run(context: RunContext | None) -> None:
    """Install the run's context (called once by the run loop; None clears it)."""
    _current.set(context)


def current_run() -> RunContext:
    """The context of the run whose workflow code is executing.

    :raises RuntimeError: Outside an ``AgentWorkflow`` run.
    """
    context = _current.get()
    if context is None:
        raise RuntimeError("current_run() is only available inside an AgentWorkflow run.")
    return context


def current_run_or_none() -> RunContext | None:
    """The current run's context, or None outside a run (a hook used in-process)."""
    return _current.get()


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
