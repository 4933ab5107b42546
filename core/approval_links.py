"""Signed approval links: what an approval webhook carries and the inbox's ``/link/<token>`` opens.

A link names one decision on one pending request, for one approver, until the call expires:
``{run_id, tool_call_id, request_id, action, approver, arguments_sha256, expires_at}``, signed with
HMAC-SHA256 under ``AGENT_APPROVAL_LINK_SECRET`` (the worker that issues it and the inbox that
opens it share the key). Nothing else is stored: a link works once because the decision it
carries closes the call, and the run's Update validator refuses every later decision on it
(the same link again, its twin, anyone's). The approver is the one the link was issued to, never
the person who happens to open it. ``request_id`` binds the link to the request it was issued
for (the execution that asked, and when): run ids are reused (``Agent.send``, a rewind), so a
later run with the same run id, call id and arguments, or the run after a rewind, asks under
another request id and refuses the link.

Issued by the notification activity (worker side), verified by the inbox (people side), so it
lives here, below both.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Literal
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

#: Path of a link under the inbox's public base URL.
LINK_PATH = "/link/"


class LinkError(ValueError):
    """A link the inbox refuses before asking the run: forged, altered or expired."""


class LinkClaims(BaseModel):
    """What a link decides.

    :param run_id: The run (workflow id).
    :param tool_call_id: The pending call.
    :param request_id: The pending request's ``request_id`` (``PendingConfirmation.request_id``).
    :param action: ``"confirm"`` or ``"reject"``.
    :param approver: Who the link was issued to; the decision is recorded as theirs.
    :param arguments_sha256: The call's argument hash: the decision binds to those arguments.
    :param expires_at: When the call expires; the link is refused after it.
    """

    run_id: str
    tool_call_id: str
    request_id: str
    action: Literal["confirm", "reject"]
    approver: str
    arguments_sha256: str
    expires_at: datetime


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(body: str, secret: str) -> str:
    return _b64(hmac.new(secret.encode("utf-8"), body.encode("ascii"), hashlib.sha256).digest())


def issue_token(claims: LinkClaims, secret: str) -> str:
    """The signed token of ``claims`` (URL-safe text)."""
    body = _b64(json.dumps(claims.model_dump(mode="json"), sort_keys=True, separators=(",", ":")).encode("utf-8"))
    return f"{body}.{_mac(body, secret)}"


def link_url(base_url: str, claims: LinkClaims, secret: str) -> str:
    """The link to ``claims`` under the inbox's public ``base_url``."""
    return base_url.rstrip("/") + LINK_PATH + quote(issue_token(claims, secret), safe="")


def verify_token(token: str, secret: str, now: datetime | None = None) -> LinkClaims:
    """The claims of a link the inbox may act on.

    :param now: The time to check expiry against (default: the wall clock, UTC).
    :raises LinkError: For a token that is malformed, whose signature does not match (forged, or
        altered: a changed approver, action or call), or whose call has expired.
    """
    body, _, mac = token.partition(".")
    if not body or not mac or not hmac.compare_digest(mac, _mac(body, secret)):
        raise LinkError("This approval link is not valid: its signature does not match (altered, or not ours).")
    try:
        claims = LinkClaims.model_validate_json(_unb64(body))
    except (ValueError, ValidationError) as exc:
        raise LinkError(f"This approval link is not valid: {exc}") from exc
    if (now or datetime.now(UTC)) >= claims.expires_at:
        raise LinkError(f"This approval link expired at {claims.expires_at.isoformat()}, when the call did.")
    return claims
