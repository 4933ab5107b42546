"""``WebhookNotifier``: tell people where they are that a call waits, was escalated, decided or expired.

``DurableConfirmationStrategy(notifier=WebhookNotifier(url, secret_env="NAME"))`` sends four events:

- ``approval_requested``: a call started waiting (with one-time approve and reject links);
- ``approval_escalated``: no one decided in time, the call's approvers became an escalation's
  (with links for the new approvers);
- ``approval_decided``: a person decided (who, what, when);
- ``approval_expired``: no one decided by the timeout, so ``on_timeout`` applied (on behalf of no one).

Each request is signed per the `Standard Webhooks <https://www.standardwebhooks.com>`_ spec with
the ``standardwebhooks`` library (headers ``webhook-id``, ``webhook-timestamp`` and
``webhook-signature``), so a receiver verifies it with ``Webhook(secret).verify(body, headers)``.
``webhook-id`` is stable across retries: a receiver drops duplicates by it. Delivery is the
``deliver_approval_event`` activity (``activities.py``), retried with backoff.

``format="slack"`` turns each event into a Slack Block Kit message (the body of a Slack
incoming-webhook URL: ``text`` and ``blocks``, the links as buttons); it is signed the same way.

The body of a ``"standard"`` event (Standard Webhooks' recommended shape)::

    {"type": "approval_requested", "timestamp": "...",
     "data": {"run_id": ..., "call": PendingConfirmation, "decision": DecisionRecord | null,
              "links": [{"approver": ..., "approve_url": ..., "reject_url": ...}]}}

Links need the inbox's public base URL and link key on the workers (``AGENT_INBOX_PUBLIC_URL``,
``AGENT_APPROVAL_LINK_SECRET``); without them events carry no links.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel
from standardwebhooks import Webhook

from core.serialization import default_to_dict
from core.settings import secret_from_environment
from core.side_effects import SideEffectRefused, check_webhook_url, worker_limits
from hooks.human_in_the_loop.dataclasses import DecisionRecord, PendingConfirmation

ApprovalEventType = Literal["approval_requested", "approval_escalated", "approval_decided", "approval_expired"]
#: The events a notifier sends, in the order a call can meet them.
EVENT_TYPES: tuple[str, ...] = ("approval_requested", "approval_escalated", "approval_decided", "approval_expired")
#: Body formats.
FORMATS = ("standard", "slack")
#: Who a link is issued to when the call names no approvers (anyone may decide it).
ANYONE_LINK_APPROVER = "link"


class ApprovalLink(BaseModel):
    """One approver's pair of one-time links."""

    approver: str
    approve_url: str
    reject_url: str


class ApprovalEvent(BaseModel):
    """Input of the ``deliver_approval_event`` activity: one event for one webhook.

    :param event_id: Stable id (the ``webhook-id`` header), the same on every retry.
    :param type: Which event.
    :param occurred_at: Workflow time of the event.
    :param run_id: The run (workflow id).
    :param request: The call, as pending (after an escalation, with its new approvers).
    :param record: The decision, for ``approval_decided`` and ``approval_expired``.
    :param notifier: The notifier's ``to_dict()``.
    """

    event_id: str
    type: ApprovalEventType
    occurred_at: datetime
    run_id: str
    request: PendingConfirmation
    record: DecisionRecord | None = None
    notifier: dict[str, Any]


class WebhookNotifier:
    """POST signed approval events to ``url``.

    The signing secret stays on the workers: ``secret_env`` names the environment variable that
    holds it there, and the run's input, history and activity inputs carry only that name (the
    worker reads it when it sends). A literal ``secret`` is for local use (signing outside a run);
    a notifier holding one cannot be serialised, so an ``Agent`` built with it is refused.

    :param url: The receiver (``http``/``https``); a Slack incoming-webhook URL with ``format="slack"``.
        A worker POSTs only to URLs under its ``AGENT_WEBHOOK_URLS``.
    :param secret: A literal Standard Webhooks signing secret (``whsec_`` followed by base64), for
        local use only.
    :param format: ``"standard"`` (the event as JSON) or ``"slack"`` (a Block Kit message).
    :param secret_env: The workers' environment variable holding the signing secret.
    :raises ValueError: For a ``url`` that is not http(s), neither or both of ``secret`` and
        ``secret_env``, a ``secret`` ``standardwebhooks`` cannot read, a ``secret_env`` that is not a
        variable name, or an unknown ``format``.
    """

    def __init__(
        self,
        url: str,
        secret: str | None = None,
        format: Literal["standard", "slack"] = "standard",
        *,
        secret_env: str | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"WebhookNotifier url must be an http(s) URL, got {url!r}.")
        if (secret is None) == (secret_env is None):
            raise ValueError(
                "WebhookNotifier needs secret_env='NAME' (the workers' environment variable holding the "
                "signing secret); a literal secret= is for local use and cannot travel in a run."
            )
        if secret is not None:
            check_signing_secret(secret, "WebhookNotifier secret")
        if secret_env is not None and not (isinstance(secret_env, str) and _ENV_NAME.fullmatch(secret_env)):
            raise ValueError(f"WebhookNotifier secret_env must be an environment variable name, got {secret_env!r}.")
        if format not in FORMATS:
            raise ValueError(f"WebhookNotifier format must be one of {', '.join(FORMATS)}, got {format!r}.")
        self.url = url
        self.secret = secret
        self.secret_env = secret_env
        self.format = format

    def signing_secret(self) -> str:
        """The secret to sign with: the literal one, else ``secret_env``'s value here (on the worker).

        :raises WebhookSecretMissing: ``secret_env`` is unset or empty here, or not a Standard
            Webhooks secret (the message names the variable, never its value).
        """
        if self.secret is not None:
            return self.secret
        value = secret_from_environment(self.secret_env or "")
        if value is None:
            raise WebhookSecretMissing(
                f"The webhook signing secret's variable {self.secret_env} is not set on this worker: set it "
                "(a Standard Webhooks secret, whsec_...) on every worker of the task queue."
            )
        try:
            return check_signing_secret(value.get_secret_value(), f"The variable {self.secret_env}")
        except ValueError as exc:
            raise WebhookSecretMissing(str(exc)) from None

    def to_dict(self) -> dict[str, Any]:
        """Serialise: url, ``secret_env`` and format (never a secret).

        :raises ValueError: The notifier holds a literal ``secret``, which would be written into the run's history.
        """
        if self.secret is not None:
            raise ValueError(
                "WebhookNotifier(secret=...) cannot travel in a run: the secret would be written into its history. "
                "Use WebhookNotifier(url, secret_env='NAME') and set NAME on the workers."
            )
        return default_to_dict(self, url=self.url, secret_env=self.secret_env, format=self.format)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WebhookNotifier:
        """Rebuild from :meth:`to_dict`'s output.

        :raises core.side_effects.SideEffectRefused: For a literal ``secret`` in ``data`` on a worker (a
            run's input must name it by ``secret_env``).
        :raises core.side_effects.SideEffectRefused: On a worker, for a URL outside ``AGENT_WEBHOOK_URLS``.
        """
        parameters = dict(data.get("init_parameters", {}))
        if "secret" in parameters and worker_limits() is not None:
            raise SideEffectRefused(
                "A WebhookNotifier in a run's input carries a literal secret; name the workers' variable "
                "holding it instead: WebhookNotifier(url, secret_env='NAME')."
            )
        notifier = cls(**parameters)
        check_webhook_url(notifier.url)
        return notifier

    def __repr__(self) -> str:  # the secret stays out of logs
        secret = f"secret_env={self.secret_env!r}" if self.secret_env else "secret='***'"
        return f"WebhookNotifier({self.url!r}, {secret}, format={self.format!r})"


class WebhookSecretMissing(ValueError):
    """The worker cannot sign: the notifier's ``secret_env`` is unset there, or holds no Standard Webhooks secret."""


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_signing_secret(secret: str, what: str) -> str:
    """Return ``secret`` if ``standardwebhooks`` can sign with it.

    :raises ValueError: Naming ``what`` (never the value).
    """
    if not isinstance(secret, str) or not secret:
        raise ValueError(f"{what} must be a Standard Webhooks secret such as 'whsec_...'.")
    try:
        Webhook(secret)
    except Exception:  # noqa: BLE001 - the library raises binascii/ValueError/TypeError
        raise ValueError(f"{what} is not a Standard Webhooks secret (whsec_<base64>).") from None
    return secret


def event_body(event: ApprovalEvent, links: list[ApprovalLink]) -> dict[str, Any]:
    """The ``"standard"`` JSON body of ``event``."""
    return {
        "type": event.type,
        "timestamp": event.occurred_at.isoformat(),
        "data": {
            "run_id": event.run_id,
            "call": event.request.model_dump(mode="json"),
            "decision": event.record.model_dump(mode="json") if event.record else None,
            "links": [link.model_dump() for link in links],
        },
    }


_HEADLINES = {
    "approval_requested": ":raised_hand: *{tool}* waits for approval in run `{run}`",
    "approval_escalated": ":rotating_light: *{tool}* in run `{run}` was escalated to {approvers}",
    "approval_decided": ":white_check_mark: *{tool}* in run `{run}`: {action} by {approver}",
    "approval_expired": ":hourglass: *{tool}* in run `{run}` expired: no one decided, so it was {action}ed (timeout)",
}
#: Characters of the arguments shown in a Slack message (a section's text holds 3,000 at most).
SLACK_ARGUMENTS_CHARS = 1_500


def slack_message(event: ApprovalEvent, links: list[ApprovalLink]) -> dict[str, Any]:
    """``event`` as a Slack Block Kit message for an incoming webhook: ``text`` (the notification's
    fallback), ``blocks``: a section with the headline, a section with the arguments, a context
    line, and, while the call waits, one ``actions`` block per approver with Approve/Reject
    buttons that open the links (a button with a ``url`` only opens it; the inbox page decides)."""
    request, record = event.request, event.record
    headline = _HEADLINES[event.type].format(
        tool=request.tool_name,
        run=event.run_id,
        approvers=", ".join(request.approvers or ["anyone"]),
        action=record.action if record else "",
        approver=(record.approver or "no one") if record else "",
    )
    arguments = arguments_text(request)
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": headline}},
        {"type": "section", "text": {"type": "mrkdwn", "text": f"```{arguments}```"}},
        {
            "type": "context",
            "elements": [
                {"type": "mrkdwn", "text": f"call `{request.tool_call_id}` · expires {request.expires_at or 'never'}"}
            ],
        },
    ]
    for link in links:
        blocks.append(
            {
                "type": "actions",
                "block_id": f"links-{link.approver}"[:255],
                "elements": [
                    _button("Approve", link.approve_url, "primary", f"approve-{link.approver}"),
                    _button("Reject", link.reject_url, "danger", f"reject-{link.approver}"),
                ],
            }
        )
    fallback = headline.replace("*", "").replace("`", "")
    return {"text": fallback, "blocks": blocks}


def _button(label: str, url: str, style: str, action_id: str) -> dict[str, Any]:
    return {
        "type": "button",
        "text": {"type": "plain_text", "text": label},
        "url": url,
        "style": style,
        "action_id": action_id[:255],
    }


def arguments_text(request: PendingConfirmation, limit: int = SLACK_ARGUMENTS_CHARS) -> str:
    """A call's arguments as indented JSON, cut at ``limit`` characters (ending in "…" when cut)."""
    text = json.dumps(request.tool_params, indent=2, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"
