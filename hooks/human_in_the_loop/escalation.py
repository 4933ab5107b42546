"""``Escalation``: when no one has decided a call in time, hand it to other approvers.

``DurableConfirmationStrategy(..., escalation=[Escalation(after=timedelta(hours=4),
approvers=["lead"]), Escalation(after=timedelta(days=1), approvers=["director"])])``: at each
``after`` (measured from the request) that passes undecided, the call's approvers become that
escalation's (the earlier ones may no longer decide, and their links are refused), the pending
call shows it (``PendingConfirmation.escalations``, ``approvers``), and the strategy's notifier
sends ``approval_escalated``. The strategy's ``timeout`` still ends the wait with ``on_timeout``,
recorded as a timeout (``DecisionRecord.via == "timeout"``, no approver), never as a person's
rejection.

The wait is workflow code: one durable timer at a time, to the next escalation or the timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow

from hooks.human_in_the_loop.dataclasses import PendingConfirmation
from hooks.human_in_the_loop.registry import ConfirmationRegistry, approver_list
from hooks.human_in_the_loop.wire import CONFIRMATION_TIMER_PREFIX, ESCALATION_TIMER_PREFIX


class Escalation:
    """One step of escalation.

    :param after: How long after the request, undecided, the call is escalated (a positive
        ``timedelta``, or seconds).
    :param approvers: Who may decide it from then on (a non-empty list of names).
    :raises ValueError: For a non-positive ``after`` or a bad ``approvers`` list.
    """

    def __init__(self, after: timedelta, approvers: list[str]) -> None:
        if isinstance(after, (int, float)) and not isinstance(after, bool):
            after = timedelta(seconds=after)
        if not isinstance(after, timedelta) or after <= timedelta(0):
            raise ValueError(f"Escalation after must be a positive timedelta, got {after!r}.")
        self.after = after
        self.approvers = approver_list(approvers, "Escalation approvers")

    def to_dict(self) -> dict[str, Any]:
        """``{"after": seconds, "approvers": [...]}``."""
        return {"after": self.after.total_seconds(), "approvers": list(self.approvers)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Escalation:
        """Rebuild from :meth:`to_dict`'s output."""
        return cls(after=timedelta(seconds=data["after"]), approvers=data["approvers"])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Escalation) and (self.after, self.approvers) == (other.after, other.approvers)

    def __repr__(self) -> str:
        return f"Escalation(after={self.after!r}, approvers={self.approvers!r})"


def escalation_steps(escalation: Any, timeout: timedelta) -> list[Escalation]:
    """``escalation`` checked against the strategy's ``timeout``, as a list in time order.

    :raises ValueError: For something other than a list of :class:`Escalation`, two steps at the
        same ``after``, or a step at or after ``timeout`` (it could never happen).
    """
    if escalation is None:
        return []
    if not isinstance(escalation, (list, tuple)) or not all(isinstance(e, Escalation) for e in escalation):
        raise ValueError(f"escalation must be a list of Escalation(after=..., approvers=[...]), got {escalation!r}.")
    steps = sorted(escalation, key=lambda e: e.after)
    for earlier, later in zip(steps, steps[1:], strict=False):
        if earlier.after == later.after:
            raise ValueError(f"Two escalations happen at the same time ({earlier.after}): {earlier!r}, {later!r}.")
    for step in steps:
        if step.after >= timeout:
            raise ValueError(
                f"{step!r} comes at or after the strategy's timeout ({timeout}), so it could never happen; "
                "make after shorter or timeout longer."
            )
    return steps


async def wait_for_decision(
    registry: ConfirmationRegistry,
    request: PendingConfirmation,
    timeout: timedelta,
    steps: list[Escalation],
    on_escalate: Callable[[PendingConfirmation, int], None],
) -> bool:
    """Wait until ``request`` is decided (True) or ``timeout`` passes (False), escalating on the way.

    :param on_escalate: Called with the escalated request and the escalation's number (1, 2, ...)
        right after each escalation.
    """
    call_id = request.tool_call_id
    waited = timedelta(0)
    for number, step in enumerate(steps, start=1):
        summary = f"{ESCALATION_TIMER_PREFIX}{request.tool_name} ({call_id}) to {', '.join(step.approvers)}"
        if await _decided_within(registry, call_id, step.after - waited, summary):
            return True
        waited = step.after
        escalated = registry.escalate(call_id, step.approvers)
        on_escalate(escalated, number)
    summary = f"{CONFIRMATION_TIMER_PREFIX}{request.tool_name} ({call_id})"
    return await _decided_within(registry, call_id, timeout - waited, summary)


async def _decided_within(registry: ConfirmationRegistry, call_id: str, wait: timedelta, summary: str) -> bool:
    try:
        await workflow.wait_condition(
            lambda: registry.decision(call_id) is not None, timeout=wait, timeout_summary=summary
        )
    except TimeoutError:
        return False
    return True
