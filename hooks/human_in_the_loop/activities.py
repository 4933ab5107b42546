"""This family's activity: deliver one signed approval event to a webhook
(:mod:`hooks.human_in_the_loop.notifiers` says what is sent).

The workflow starts it in the background (:mod:`hooks.human_in_the_loop.notifications`) and keeps
waiting meanwhile. A failed POST raises and Temporal retries it with backoff; a receiver that
answers 4xx (other than 408 and 429) refuses the event for good, so that is not retried. The
call itself stays pending whatever happens to its notification.

The approve/reject links are made here, on the worker, from ``AGENT_INBOX_PUBLIC_URL`` and
``AGENT_APPROVAL_LINK_SECRET`` (:mod:`core.approval_links`): the link key never enters a run's
history.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx
from standardwebhooks import Webhook
from temporalio import activity
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from core.approval_links import LinkClaims, link_url
from core.settings import get_settings
from core.side_effects import SIDE_EFFECT_REFUSED, SideEffectRefused
from hooks.human_in_the_loop.notifiers import (
    ANYONE_LINK_APPROVER,
    ApprovalEvent,
    ApprovalLink,
    WebhookNotifier,
    WebhookSecretMissing,
    event_body,
    slack_message,
)

#: Activity name (part of the wire contract between workflows and workers).
DELIVER_APPROVAL_EVENT_ACTIVITY = "deliver_approval_event"
#: Seconds one POST may take.
POST_TIMEOUT_SECONDS = 10.0
#: Events whose call still waits carry links.
EVENTS_WITH_LINKS = ("approval_requested", "approval_escalated")

NOTIFY_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(minutes=10),
    non_retryable_error_types=["WebhookRefused", "WebhookSecretMissing", SIDE_EFFECT_REFUSED],
)


def event_links(event: ApprovalEvent) -> list[ApprovalLink]:
    """One approve/reject pair per approver of the waiting call (one pair issued to
    :data:`~hooks.human_in_the_loop.notifiers.ANYONE_LINK_APPROVER` when anyone may decide);
    none for a decided or expired call, or when the inbox's public URL or link key is unset."""
    settings = get_settings()
    request = event.request
    if event.type not in EVENTS_WITH_LINKS or not settings.inbox_public_url or settings.approval_link_secret is None:
        return []
    if request.expires_at is None:
        return []
    secret = settings.approval_link_secret.get_secret_value()
    links = []
    for approver in request.approvers or [ANYONE_LINK_APPROVER]:

        def url(action: str, approver: str = approver) -> str:
            claims = LinkClaims(
                run_id=event.run_id,
                tool_call_id=request.tool_call_id,
                request_id=request.request_id,
                action=action,  # type: ignore[arg-type]
                approver=approver,
                arguments_sha256=request.arguments_sha256,
                expires_at=request.expires_at,  # type: ignore[arg-type]
            )
            return link_url(settings.inbox_public_url, claims, secret)  # type: ignore[arg-type]

        links.append(ApprovalLink(approver=approver, approve_url=url("confirm"), reject_url=url("reject")))
    return links


def signed_request(event: ApprovalEvent) -> tuple[str, bytes, dict[str, str]]:
    """The URL, body and headers (Standard Webhooks signature included) of ``event``'s POST.

    :raises core.side_effects.SideEffectRefused: The URL is outside this worker's ``AGENT_WEBHOOK_URLS``.
    :raises hooks.human_in_the_loop.notifiers.WebhookSecretMissing: The notifier's ``secret_env`` is
        unset here.
    """
    notifier = WebhookNotifier.from_dict(event.notifier)
    secret = notifier.signing_secret()
    links = event_links(event)
    body = slack_message(event, links) if notifier.format == "slack" else event_body(event, links)
    payload = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    timestamp = datetime.now(UTC)  # this attempt's time: receivers refuse signatures over 5 minutes old
    signature = Webhook(secret).sign(event.event_id, timestamp, payload)
    headers = {
        "content-type": "application/json",
        "webhook-id": event.event_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": signature,
    }
    return notifier.url, payload.encode("utf-8"), headers


@activity.defn(name=DELIVER_APPROVAL_EVENT_ACTIVITY)
async def deliver_approval_event(event: ApprovalEvent) -> None:
    """POST ``event``, signed, to its notifier's URL.

    Failures are one short line each (no cause chain, no response body: what an activity raises
    goes into the run's history and the worker's log): the receiver's status code, or why it was
    not reached.

    :raises ApplicationError: ``WebhookUnreachable`` (retried, logged as one line per attempt) on a
        connection error, a timeout, or a 5xx, 408 or 429 answer; ``WebhookRefused`` (not retried) on
        any other 4xx answer; ``SideEffectRefused`` (not retried) for a URL outside
        ``AGENT_WEBHOOK_URLS``; ``WebhookSecretMissing`` (not retried) when ``secret_env`` is unset here.
    """
    try:
        url, body, headers = signed_request(event)
    except SideEffectRefused as exc:
        raise ApplicationError(str(exc), type=SIDE_EFFECT_REFUSED, non_retryable=True) from None
    except WebhookSecretMissing as exc:
        raise ApplicationError(str(exc), type="WebhookSecretMissing", non_retryable=True) from None
    try:
        async with httpx.AsyncClient(timeout=POST_TIMEOUT_SECONDS) as client:
            response = await client.post(url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        raise _retry(event, url, f"{type(exc).__name__}: {str(exc) or 'no answer'}") from None
    status = response.status_code
    if 400 <= status < 500 and status not in (408, 429):
        raise ApplicationError(
            f"The webhook {url} refused the {event.type} event with HTTP {status}.",
            type="WebhookRefused",
            non_retryable=True,
        )
    if status >= 400:
        raise _retry(event, url, f"HTTP {status}")


def _retry(event: ApprovalEvent, url: str, why: str) -> ApplicationError:
    """Log one line for this attempt; returns the retryable failure to raise (``from None``: the
    connection error's chain would be kilobytes of traceback in the server's record of the
    attempt, which refuses a failure over 4 KB). Benign: the SDK logs its traceback at debug level only."""
    attempt = activity.info().attempt
    activity.logger.warning(
        "%s event for %s not delivered to %s (attempt %d): %s", event.type, event.run_id, url, attempt, why
    )
    return ApplicationError(
        f"The {event.type} event could not be delivered to {url}: {why}",
        type="WebhookUnreachable",
        category=ApplicationErrorCategory.BENIGN,
    )
