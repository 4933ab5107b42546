"""This family's activity, the approval notification: POST a pending confirmation to a webhook,
so a person hears of it.

``DurableConfirmationStrategy(notify_url=...)`` starts this activity when a request becomes
pending and keeps waiting meanwhile. A failed POST raises, and Temporal retries it with backoff
until the request is decided or expires; the request itself stays pending (in the
``pending_confirmations`` query and the ``AgentWaitingForApproval`` search attribute) whatever
happens to the notification.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from hooks.human_in_the_loop.dataclasses import ApprovalNotification, PendingConfirmation

#: Activity name (part of the wire contract between workflows and workers).
NOTIFY_APPROVAL_REQUEST_ACTIVITY = "notify_approval_request"
#: Seconds one POST may take.
POST_TIMEOUT_SECONDS = 10.0

NOTIFY_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_interval=timedelta(minutes=10)
)


def notification_body(notification: ApprovalNotification) -> dict:
    """The JSON the webhook receives."""
    return {
        "event": "tool_confirmation_requested",
        "run_id": notification.run_id,
        "pending": notification.request.model_dump(mode="json"),
    }


@activity.defn(name=NOTIFY_APPROVAL_REQUEST_ACTIVITY)
async def notify_approval_request(notification: ApprovalNotification) -> None:
    """POST the request to ``notification.url``.

    :raises httpx.HTTPError: On a connection error or a non-2xx answer (the activity is retried).
    """
    async with httpx.AsyncClient(timeout=POST_TIMEOUT_SECONDS) as client:
        response = await client.post(
            notification.url,
            json=notification_body(notification),
            headers={"Idempotency-Key": f"{notification.run_id}/{notification.request.tool_call_id}"},
        )
        response.raise_for_status()


def start_notification(
    url: str | None, run_id: str, request: PendingConfirmation, timeout: timedelta
) -> asyncio.Task[None] | None:
    """Workflow side: start notifying ``url`` of ``request`` in the background (None without a
    ``url``). Retried with backoff until ``timeout``; a notification that fails for good is logged,
    and the request stays pending either way. Cancel the task once the request is decided.
    """
    if url is None:
        return None
    notification = ApprovalNotification(url=url, run_id=run_id, request=request)

    async def notify() -> None:
        try:
            await workflow.execute_activity(
                notify_approval_request,
                notification,
                start_to_close_timeout=timedelta(seconds=30),
                schedule_to_close_timeout=timeout,
                retry_policy=NOTIFY_RETRY_POLICY,
                summary=f"notify: {request.tool_name} awaits confirmation",
            )
        except ActivityError as err:  # the request stays pending; only the notification is lost
            workflow.logger.warning("Approval notification for %s failed: %s", request.tool_call_id, err)

    return asyncio.create_task(notify())
