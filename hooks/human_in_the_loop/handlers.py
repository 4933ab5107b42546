"""The workflow's confirmation handlers: Signal ``tool_decision``, Update ``submit_tool_decision``
(with a validator) and Query ``pending_confirmations``.

A mixin that ``AgentWorkflow`` inherits through this family's declaration. The handlers
delegate to the run's :class:`ConfirmationDesk`, which ``DurableConfirmationStrategy`` fills:

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

from hooks.context import RunContext
from hooks.human_in_the_loop.dataclasses import DecisionRecord, PendingConfirmation, ToolDecision
from hooks.human_in_the_loop.desk import DESK_KEY, ConfirmationDesk, DecisionError
from hooks.human_in_the_loop.wire import (
    DECISION_REFUSED,
    PENDING_CONFIRMATIONS_QUERY,
    SUBMIT_TOOL_DECISION_UPDATE,
    TOOL_DECISION_SIGNAL,
)


class ConfirmationHandlers:
    """Mixin: confirmation handlers reading the run's desk through ``self._context``."""

    _context: RunContext | None = None

    def _confirmation_desk(self) -> ConfirmationDesk | None:
        context = self._context
        return context.extensions.get(DESK_KEY) if context is not None else None

    def _check_decision(self, decision: ToolDecision) -> ConfirmationDesk:
        desk = self._confirmation_desk()
        if desk is None:
            raise DecisionError(
                f"No pending confirmation for tool call '{decision.tool_call_id}': this run is not waiting for one."
            )
        desk.validate(decision)
        return desk

    @workflow.signal(name=TOOL_DECISION_SIGNAL)
    def tool_decision(self, decision: ToolDecision) -> None:
        """Fire-and-forget decision; one that does not fit a pending call, or comes from an approver
        who may not decide it, is logged with the reason and ignored."""
        try:
            self._check_decision(decision).accept(decision, via="signal")
        except DecisionError as err:
            who = f"approver '{decision.approver}'" if decision.approver else "no approver"
            workflow.logger.warning("Ignored tool_decision signal (%s, %s): %s", decision.action, who, err)

    @workflow.update(name=SUBMIT_TOOL_DECISION_UPDATE)
    def submit_tool_decision(self, decision: ToolDecision) -> DecisionRecord:
        """Accept a decision; returns its audit record (approver, time, hash of the approved arguments)."""
        try:
            return self._check_decision(decision).accept(decision, via="update")
        except DecisionError as err:
            raise ApplicationError(str(err), type=DECISION_REFUSED, non_retryable=True) from err

    @submit_tool_decision.validator
    def validate_tool_decision(self, decision: ToolDecision) -> None:
        """Refuse, before history: unknown or decided call, an approver not allowed to decide it, bad
        action, arguments failing the schema."""
        self._check_decision(decision)

    @workflow.query(name=PENDING_CONFIRMATIONS_QUERY)
    def pending_confirmations(self) -> list[PendingConfirmation]:
        """The calls waiting for a person, oldest first."""
        desk = self._confirmation_desk()
        return desk.pending() if desk is not None else []
