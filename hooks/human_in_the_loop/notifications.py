"""Workflow side of approval notifications: start ``deliver_approval_event`` in the background.

Events about a waiting call (``approval_requested``, ``approval_escalated``) are retried until
the call is decided or expires, then cancelled: their links would no longer work. Events about
the end of a wait (``approval_decided``, ``approval_expired``) are retried for
:data:`FINAL_EVENT_DELIVERY` while the run goes on, and a run that finishes first waits
:data:`FINAL_EVENT_GRACE` at most for them (``ConfirmationHook.close_async`` awaits
:meth:`ApprovalOutbox.drain`): a reachable receiver gets them, one that is down does not hold
a finished run for minutes. A
notification that fails for good is logged; the call is decided the same either way.

Deterministic workflow code: event ids are built from the run, the call and the event's place.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

from core.serialization import object_to_dict
from hooks.context import current_run
from hooks.human_in_the_loop.activities import NOTIFY_RETRY_POLICY, deliver_approval_event
from hooks.human_in_the_loop.dataclasses import DecisionRecord, PendingConfirmation
from hooks.human_in_the_loop.notifiers import ApprovalEvent, ApprovalEventType, WebhookNotifier

#: How long an ``approval_decided`` or ``approval_expired`` event is retried while the run goes on.
FINAL_EVENT_DELIVERY = timedelta(minutes=5)
#: How long a run that has finished its work waits for those events before it ends without them.
FINAL_EVENT_GRACE = timedelta(seconds=10)


class ApprovalOutbox:
    """The run's notifications still being delivered (one per run, in its slot)."""

    def __init__(self) -> None:
        self._final: list[asyncio.Task[None]] = []

    @classmethod
    def of_current_run(cls) -> ApprovalOutbox:
        """The current run's outbox, created on first use."""
        return current_run().slot_or_create(ApprovalOutbox, cls)

    def send(
        self,
        notifier: WebhookNotifier,
        type: ApprovalEventType,
        request: PendingConfirmation,
        record: DecisionRecord | None = None,
        within: timedelta = FINAL_EVENT_DELIVERY,
        sequence: int = 0,
    ) -> asyncio.Task[None]:
        """Start delivering one event; returns its task (cancel it when the event no longer matters).

        :param within: How long it is retried.
        :param sequence: Tells apart events of one type for one call (the escalation's number).
        """
        run_id = current_run().run_id
        event = ApprovalEvent(
            event_id=f"{run_id}:{request.tool_call_id}:{type}:{sequence}",
            type=type,
            occurred_at=workflow.now(),
            run_id=run_id,
            request=request,
            record=record,
            notifier=object_to_dict(notifier),
        )

        async def deliver() -> None:
            try:
                await workflow.execute_activity(
                    deliver_approval_event,
                    event,
                    start_to_close_timeout=timedelta(seconds=30),
                    schedule_to_close_timeout=within,
                    retry_policy=NOTIFY_RETRY_POLICY,
                    summary=f"notify: {type} for {request.tool_name}",
                )
            except ActivityError as err:  # the call is decided the same; only the message is lost
                workflow.logger.warning("%s notification for %s failed: %s", type, request.tool_call_id, err)

        task = asyncio.ensure_future(deliver())
        if type in ("approval_decided", "approval_expired"):
            self._final.append(task)
        return task

    async def drain(self) -> None:
        """Wait for the end-of-wait events still under way, for :data:`FINAL_EVENT_GRACE` at most:
        a receiver that is down does not hold a finished run; what is still undelivered then is
        cancelled and logged."""
        pending = [task for task in self._final if not task.done()]
        self._final = []
        if not pending:
            return
        try:
            await workflow.wait_condition(lambda: all(task.done() for task in pending), timeout=FINAL_EVENT_GRACE)
        except TimeoutError:
            undelivered = [task for task in pending if not task.done()]
            workflow.logger.warning(
                "%d approval notification(s) not delivered %s after the run's end; given up",
                len(undelivered),
                FINAL_EVENT_GRACE,
            )
            for task in undelivered:
                task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
