"""The data of a confirmation: what is asked, what a person answers, what the hook applies.

``ConfirmationUIResult`` and ``ToolExecutionDecision`` are Haystack 3.x's dataclasses (they stay
inside the workflow or the approver's process and never travel as payloads). ``PendingConfirmation``,
``ToolDecision`` and ``DecisionRecord`` are the durable additions: the request a run publishes,
the decision that comes in by Signal or Update, and the audit record kept for each decision.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

#: The actions a person can take on a pending call.
ACTIONS: tuple[str, ...] = ("confirm", "reject", "modify")


@dataclass
class ConfirmationUIResult:
    """What a person answered: Haystack's dataclass, field for field.

    It never crosses the workflow boundary (a decision sent to a run is a :class:`ToolDecision`),
    so it keeps dataclass semantics: positional arguments in Haystack's order, a missing field or
    unknown keyword is a ``TypeError``, values are kept as given, ``dataclasses.replace`` works.

    :param action: ``"confirm"``, ``"reject"`` or ``"modify"`` (not enforced here, so custom
        strategies may define their own).
    :param feedback: Optional words for the model, e.g. why a call was rejected.
    :param new_tool_params: The replacement arguments of a ``"modify"``.
    """

    action: str
    feedback: str | None = None
    new_tool_params: dict[str, Any] | None = None


@dataclass
class ToolExecutionDecision:
    """What a strategy decided for one tool call: Haystack's dataclass, plus a keyword-only ``record``.

    Dataclass semantics as :class:`ConfirmationUIResult` (it is workflow-local, never a payload).
    Positional arguments follow Haystack's order (``tool_name, execute, tool_call_id, feedback,
    final_tool_params``).

    :param tool_name: The tool of the call.
    :param execute: Run the call (confirmed or modified) or not (rejected).
    :param tool_call_id: The call it is bound to.
    :param feedback: Rejection text, or the explanation of a modification.
    :param final_tool_params: The arguments to run with when ``execute`` is true.
    :param record: The audit record of a person's (or the timeout's) decision, if one was asked;
        the hook stores it in the call's ``extra["confirmation"]`` (or, for a rejected call, in the
        answering tool message's ``meta["confirmation"]``) so it is part of the run's result.
    """

    tool_name: str
    execute: bool
    tool_call_id: str | None = None
    feedback: str | None = None
    final_tool_params: dict[str, Any] | None = None
    record: dict[str, Any] | None = field(default=None, kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        """Haystack's dict: exactly its five fields, so Haystack's ``ToolExecutionDecision.from_dict``
        reads it. ``record`` is left out (it is kept in the conversation, on the call's
        ``extra["confirmation"]``); ``dataclasses.asdict`` gives every field."""
        data = asdict(self)
        del data["record"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolExecutionDecision:
        """Inverse of :meth:`to_dict`, as Haystack's (``cls(**data)``: an unknown key is a ``TypeError``).

        Also reads Haystack's dict, and ``asdict()``'s.
        """
        return cls(**data)


class PendingConfirmation(BaseModel):
    """A tool call waiting for a person, as the ``pending_confirmations`` query shows it.

    :param tool_call_id: The id to decide on (id-less calls get a deterministic one).
    :param tool_name: The tool the model wants to call.
    :param tool_params: The arguments it wants to call it with.
    :param tool_description: The tool's description.
    :param requested_at: When the run started waiting (workflow time).
    :param expires_at: When ``on_timeout`` applies if no one decides.
    :param arguments_sha256: Hash of ``tool_params``; a decision may quote it to bind itself to them.
    :param on_timeout: What happens at ``expires_at``.
    :param confirmation_ui: The ``ConfirmationUI`` (its ``to_dict()``, by import path) the strategy
        names for the approver's side, e.g. ``agent approve --interactive``; None when the strategy
        names none (``DurableConfirmationStrategy``: the approver's default, ``SimpleConsoleUI``).
    :param approvers: Who may decide this call (a decision's ``approver`` must be one of these
        names, exactly); None when anyone may. Set from ``DurableConfirmationStrategy(approvers=...)``
        or ``ConfirmationHook(approvers=...)``; the run's validator enforces it. After an
        escalation, the escalation's list.
    :param parent_run_id: The run this run is a sub-agent of (``Agent.as_tool``), when it is one:
        deciding the call here lets that parent go on.
    :param escalations: How many escalations the call went through (``Escalation``); 0 at first.
    :param escalated_at: When the last one happened (workflow time), None before any.
    :param request_id: Which request this is: the Temporal run id of the execution that asked and
        the history length when it asked. A later run with the same run id, or the run after a
        rewind, asks anew under another id, so a decision or link that quotes an id applies only
        to the request it was issued for (an escalation keeps the id).
    """

    model_config = ConfigDict(frozen=True)

    tool_call_id: str
    tool_name: str
    tool_params: dict[str, Any]
    tool_description: str = ""
    requested_at: datetime
    expires_at: datetime | None = None
    arguments_sha256: str = ""
    on_timeout: str = "reject"
    confirmation_ui: dict[str, Any] | None = None
    approvers: list[str] | None = None
    parent_run_id: str | None = None
    escalations: int = 0
    escalated_at: datetime | None = None
    request_id: str = ""


class ToolDecision(BaseModel):
    """A person's decision on one pending call: the Signal ``tool_decision`` and Update
    ``submit_tool_decision`` payload.

    :param tool_call_id: The pending call it decides (exactly one call).
    :param action: ``"confirm"``, ``"reject"`` or ``"modify"``.
    :param feedback: Optional text for the model (a rejection reason, a note on a modification);
        at most ``registry.MAX_FEEDBACK_CHARS`` (4,000) characters unless the strategy sets another limit.
    :param new_tool_params: For ``"modify"``: the complete new arguments; they must satisfy the
        tool's JSON schema and take at most ``registry.MAX_NEW_TOOL_PARAMS_BYTES`` (64 KiB) as compact
        JSON in UTF-8 unless the strategy sets another limit.
    :param approver: Who decided (recorded in the audit record).
    :param arguments_sha256: Optional: the hash shown in the pending request; when given, the
        decision is refused if the call's arguments do not match it.
    :param request_id: Optional: the ``request_id`` of the pending request it was made for; when
        given, the decision is refused if the call waiting now is another request (an approval link
        always gives it).
    """

    tool_call_id: str
    action: str
    feedback: str | None = None
    new_tool_params: dict[str, Any] | None = None
    approver: str | None = None
    arguments_sha256: str | None = None
    request_id: str | None = None


class DecisionRecord(BaseModel):
    """The audit record of an accepted decision (what the Update returns).

    :param tool_call_id: The call decided.
    :param tool_name: Its tool.
    :param action: ``"confirm"``, ``"reject"`` or ``"modify"``.
    :param approver: Who decided; ``None`` when the timeout decided.
    :param decided_at: Workflow time of the decision.
    :param arguments_sha256: Hash of the arguments approved (the new ones for a modify, the
        original ones for a confirm or a reject).
    :param feedback: The person's feedback, if any.
    :param via: ``"update"``, ``"signal"``, ``"timeout"`` or ``"cancel"`` (the run was cancelled).
    """

    tool_call_id: str
    tool_name: str
    action: str
    approver: str | None = None
    decided_at: datetime
    arguments_sha256: str
    feedback: str | None = None
    via: Literal["update", "signal", "timeout", "cancel"] = "update"


#: Characters of a call's arguments kept in its summary.
ARGUMENTS_PREVIEW_CHARS = 200


class PendingSummary(BaseModel):
    """What a run publishes of one pending call in its memo, for listings across the namespace.

    :param tool_call_id: The call to decide.
    :param tool_name: Its tool.
    :param arguments_preview: The arguments as compact JSON with sorted keys, cut at
        :data:`ARGUMENTS_PREVIEW_CHARS` characters (ending in "…" when cut).
    :param arguments_sha256: Hash of the whole arguments.
    :param requested_at: When the run started waiting.
    :param expires_at: When ``on_timeout`` applies.
    :param on_timeout: What happens then.
    :param parent_run_id: The run this run is a sub-agent of, when it is one.
    """

    tool_call_id: str
    tool_name: str
    arguments_preview: str
    arguments_sha256: str = ""
    requested_at: datetime
    expires_at: datetime | None = None
    on_timeout: str = "reject"
    parent_run_id: str | None = None

    @classmethod
    def of(cls, request: PendingConfirmation) -> PendingSummary:
        """The summary of a pending request."""
        text = json.dumps(request.tool_params, ensure_ascii=False, sort_keys=True)
        if len(text) > ARGUMENTS_PREVIEW_CHARS:
            text = text[: ARGUMENTS_PREVIEW_CHARS - 1] + "…"
        return cls(
            tool_call_id=request.tool_call_id,
            tool_name=request.tool_name,
            arguments_preview=text,
            arguments_sha256=request.arguments_sha256,
            requested_at=request.requested_at,
            expires_at=request.expires_at,
            on_timeout=request.on_timeout,
            parent_run_id=request.parent_run_id,
        )
