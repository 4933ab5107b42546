"""Batch decisions: approve every waiting call of a run (or every one of a tool) at once.

``agent approve RUN --all`` / ``--tool NAME`` and the inbox's "Approve all" both call
:func:`decide_all`. Each call gets its own ``submit_tool_decision`` Update, so each decision is
validated on its own by the run (an approver not on a call's list, a call decided meanwhile): one
refusal does not stop the others, and the outcome is listed per call.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import WorkflowHandle

from agent.approvals.decisions import DEFAULT_TIMEOUT, ConfirmationError, query_pending, submit_decision
from hooks.human_in_the_loop.dataclasses import DecisionRecord, PendingConfirmation, ToolDecision


@dataclass(frozen=True)
class BatchOutcome:
    """What became of one call of a batch.

    :param request: The call as it was pending.
    :param record: The run's audit record when it accepted the decision, else None.
    :param refusal: Why it was refused (the run's validator, or the error reaching it), else None.
    """

    request: PendingConfirmation
    record: DecisionRecord | None = None
    refusal: str | None = None

    @property
    def accepted(self) -> bool:
        """True when the run accepted the decision."""
        return self.record is not None

    def line(self) -> str:
        """One line for a terminal: ``call_1 add: confirm by ann`` or ``call_2 add: refused: ...``."""
        where = f"{self.request.tool_call_id} {self.request.tool_name}"
        if self.record is not None:
            return f"{where}: {self.record.action} by {self.record.approver or 'no one'}"
        return f"{where}: refused: {self.refusal}"


async def decide_all(
    handle: WorkflowHandle,
    *,
    action: str = "confirm",
    approver: str | None,
    tool: str | None = None,
    timeout: timedelta | None = DEFAULT_TIMEOUT,
) -> list[BatchOutcome]:
    """Decide every call of the run that waits now (of ``tool`` only, when given), one by one.

    :param action: ``"confirm"`` or ``"reject"`` (a batch cannot modify: each call has its own arguments).
    :param approver: Who decides (recorded with each decision).
    :param tool: Only the calls of this tool.
    :param timeout: How long each decision may wait for the run.
    :returns: One outcome per call, in the order the run lists them (empty when none waits).
    :raises ValueError: For an action other than confirm or reject.
    :raises ConfirmationError: When the run cannot be asked for its pending calls.
    """
    if action not in ("confirm", "reject"):
        raise ValueError(f"A batch decision is confirm or reject, not {action!r}.")
    pending = [p for p in await query_pending(handle, timeout=timeout) if tool is None or p.tool_name == tool]
    outcomes = []
    for request in pending:
        decision = ToolDecision(
            tool_call_id=request.tool_call_id,
            action=action,
            approver=approver,
            arguments_sha256=request.arguments_sha256,  # bound to the arguments the person was shown
        )
        try:
            record = await submit_decision(handle, decision, timeout=timeout)
        except ConfirmationError as err:
            outcomes.append(BatchOutcome(request, refusal=str(err)))
        else:
            outcomes.append(BatchOutcome(request, record=record))
    return outcomes
