"""This family's activity, the approval notification: POST a pending confirmation to a webhook,
so a person hears of it.

``DurableConfirmationStrategy(notify_url=...)`` starts this activity when a request becomes
pending and keeps waiting meanwhile. A failed POST raises, and Temporal retries it with backoff
until the request is decided or expires; the request itself stays pending (in the
``pending_confirmations`` query and the ``AgentWaitingForApproval`` search attribute) whatever
happens to the notification.
"""

from __future__ import annotations

import httpx
from temporalio import activity

from hooks.human_in_the_loop.dataclasses import ApprovalNotification

#: Activity name (part of the wire contract between workflows and workers).
NOTIFY_APPROVAL_REQUEST_ACTIVITY = "notify_approval_request"
#: Seconds one POST may take.
POST_TIMEOUT_SECONDS = 10.0


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
