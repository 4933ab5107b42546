"""The current run, as hook code sees it.

Hooks get the ``State``; a few need more of the run (its spec, the tool schemas, a place to
publish a pending confirmation that Signals, Updates and Queries can see). The run loop puts a
``RunContext`` in a ContextVar for the duration of the run; ``current_run()`` reads it.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.agent import Agent
    from agent.state import State


@dataclass
class RunContext:
    """Per-run data shared by the run loop, its hooks and its message handlers.

    :param run_id: The workflow id.
    :param agent: The run's agent spec.
    :param state: The live State.
    :param extensions: Per-run objects owned by hook packages (e.g. the confirmation desk),
        keyed by a name the package chooses.
    """

    run_id: str
    agent: Agent
    state: State
    phase: str = "starting"
    extensions: dict[str, Any] = field(default_factory=dict)


_current: ContextVar[RunContext | None] = ContextVar("agent_run_context", default=None)


def set_current_run(context: RunContext) -> None:
    """Install the run's context (called once by the run loop)."""
    _current.set(context)


def current_run() -> RunContext:
    """The context of the run whose workflow code is executing.

    :raises RuntimeError: Outside an ``AgentWorkflow``.
    """
    context = _current.get()
    if context is None:
        raise RuntimeError("current_run() is only available inside an AgentWorkflow run.")
    return context
