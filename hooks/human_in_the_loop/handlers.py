"""The run's confirmation handlers: Signal ``tool_decision``, Update ``submit_tool_decision``
(with a validator) and Query ``pending_confirmations``.

This family registers them when each run starts (``FAMILY.register_handlers``, through
``workflow.set_*_handler``). They reach the run like any hook does, through
``hooks.context.current_run_or_none``, and delegate to the run's :class:`ConfirmationRegistry`,
which ``DurableConfirmationStrategy`` fills:

- the Update's validator refuses a bad decision before anything is written to history (the
  client gets the reason; the run keeps waiting), including one from an approver the request's
  ``approvers`` list does not name;
- the Signal is fire-and-forget: a bad one (an approver not on the list included) is logged with
  the reason and ignored, never crashing or unblocking the run;
- the Query lists what waits, oldest first.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from hooks.context import current_run_or_none
from hooks.human_in_the_loop.dataclasses import DecisionRecord, PendingConfirmation, ToolDecision
from hooks.human_in_the_loop.registry import ConfirmationRegistry, DecisionError
from hooks.human_in_the_loop.wire import (
    DECISION_REFUSED,
    PENDING_CONFIRMATIONS_QUERY,
    SUBMIT_TOOL_DECISION_UPDATE,
    TOOL_DECISION_SIGNAL,
)


def register_confirmation_handlers() -> None:
    """Register the three handlers for the run that is starting (called before its first await,
    so a decision that arrives with the run's first task finds them)."""
    workflow.set_signal_handler(TOOL_DECISION_SIGNAL, tool_decision)
    workflow.set_update_handler(SUBMIT_TOOL_DECISION_UPDATE, submit_tool_decision, validator=validate_tool_decision)
    workflow.set_query_handler(PENDING_CONFIRMATIONS_QUERY, pending_confirmations)


def _registry() -> ConfirmationRegistry | None:
    context = current_run_or_none()
    return context.slot(ConfirmationRegistry) if context is not None else None


def _checked(decision: ToolDecision) -> ConfirmationRegistry:
    registry = _registry()
    if registry is None:
        raise DecisionError(
            f"No pending confirmation for tool call '{decision.tool_call_id}': this run is not waiting for one."
        )
    registry.validate(decision)
    return registry


def tool_decision(decision: ToolDecision) -> None:
    """Fire-and-forget decision; one that does not fit a pending call, or comes from an approver
    who may not decide it, is logged with the reason and ignored."""
    try:
        _checked(decision).accept(decision, via="signal")
    except DecisionError as err:
        who = f"approver '{decision.approver}'" if decision.approver else "no approver"
        workflow.logger.warning("Ignored tool_decision signal (%s, %s): %s", decision.action, who, err)


def submit_tool_decision(decision: ToolDecision) -> DecisionRecord:
    """Accept a decision; returns its audit record (approver, time, hash of the approved arguments)."""
    try:
        return _checked(decision).accept(decision, via="update")
    except DecisionError as err:
        raise ApplicationError(str(err), type=DECISION_REFUSED, non_retryable=True) from err


def validate_tool_decision(decision: ToolDecision) -> None:
    """Refuse, before history: unknown or decided call, an approver not allowed to decide it, bad
    action, arguments failing the schema."""
    _checked(decision)


def pending_confirmations() -> list[PendingConfirmation]:
    """The calls waiting for a person, oldest first."""
    registry = _registry()
    return registry.pending() if registry is not None else []
