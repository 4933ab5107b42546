"""``ConfirmationRegistry``: the run's registry of pending confirmations and the validator of the
decisions sent for them.

Strategies publish requests here and wait; the workflow's Signal, Update and Query handlers
(``hooks.human_in_the_loop.handlers``) validate and record decisions here and read the pending
list. One registry per run, in the run's slot for it (``current_run().slot(ConfirmationRegistry)``).

Decisions are bounded: a modify's ``new_tool_params`` run with the call and are sent to the model
with every later request, and ``feedback`` is sent to the model as is, so an unbounded decision
makes model requests a real model refuses. The limits:

- :data:`MAX_NEW_TOOL_PARAMS_BYTES` (64 KiB) of ``new_tool_params`` as compact JSON in UTF-8
  (:func:`core.tool_records.canonical_json`): about 16k tokens, far more than any real tool
  arguments a person retypes, and small next to Temporal's payload limits (a warning at 512 KiB,
  an error at 2 MiB per payload) and a model's context;
- :data:`MAX_FEEDBACK_CHARS` (4,000 characters): a few paragraphs (about 1k tokens, at most
  16 KB in UTF-8) of reason or instructions, which is what a confirmation note is for.

``DurableConfirmationStrategy`` can set other limits per strategy; they travel with each
request (:meth:`ConfirmationRegistry.publish`), since one registry serves every strategy of a run.

Who may decide travels the same way: a request's ``PendingConfirmation.approvers`` (from
``DurableConfirmationStrategy(approvers=...)`` or a per-tool list in ``ConfirmationHook``) names the
people whose decisions :meth:`ConfirmationRegistry.validate` accepts. Checking here, where the Update's validator and the Signal's handler both check, means no
client (the CLI, the inbox, a user's own code) can decide for someone not on the list. A timeout
decides on behalf of no one and is not checked.

Everything here is workflow code: deterministic, time from ``workflow.now()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jsonschema
from temporalio import workflow
from temporalio.common import SearchAttributeKey

from core.payloads import MAX_NAME_CHARS
from core.tool_records import arguments_sha256, canonical_json
from hooks.context import current_run, current_run_or_none
from hooks.human_in_the_loop.dataclasses import (
    ACTIONS,
    DecisionRecord,
    PendingConfirmation,
    PendingSummary,
    ToolDecision,
)
from hooks.human_in_the_loop.wire import PENDING_MEMO_KEY, WAITING_FOR_APPROVAL

#: Default limit on a modify's ``new_tool_params``, in UTF-8 bytes of their compact JSON.
MAX_NEW_TOOL_PARAMS_BYTES = 64 * 1024

#: Default limit on a decision's ``feedback``, in characters.
MAX_FEEDBACK_CHARS = 4_000


@dataclass(frozen=True)
class DecisionLimits:
    """How big a decision on one request may be.

    :param max_new_tool_params_bytes: Limit on ``new_tool_params``, in UTF-8 bytes of their
        compact JSON.
    :param max_feedback_chars: Limit on ``feedback``, in characters.
    :raises ValueError: For a limit that is not a positive integer.
    """

    max_new_tool_params_bytes: int = MAX_NEW_TOOL_PARAMS_BYTES
    max_feedback_chars: int = MAX_FEEDBACK_CHARS

    def __post_init__(self) -> None:
        for name in ("max_new_tool_params_bytes", "max_feedback_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")

    def problems(self, decision: ToolDecision) -> list[str]:
        """Why ``decision`` is too big (empty when it fits), each with its size and the limit."""
        problems = []
        if decision.new_tool_params is not None:
            size = len(canonical_json(decision.new_tool_params).encode("utf-8"))
            if size > self.max_new_tool_params_bytes:
                problems.append(
                    f"new_tool_params are {size:,} bytes as compact JSON; the limit is "
                    f"{self.max_new_tool_params_bytes:,} bytes"
                )
        if decision.feedback is not None and len(decision.feedback) > self.max_feedback_chars:
            problems.append(
                f"feedback is {len(decision.feedback):,} characters; the limit is {self.max_feedback_chars:,} characters"
            )
        return problems


#: The limits of a request published without others.
DEFAULT_DECISION_LIMITS = DecisionLimits()


class DecisionError(ValueError):
    """A decision the registry refuses (unknown or decided call, an approver not allowed to decide,
    bad action, bad arguments)."""


def approver_list(approvers: Any, what: str = "approvers") -> list[str]:
    """``approvers`` checked, as a new list (duplicates dropped, order kept).

    :param approvers: A non-empty list (or tuple) of names; a decision's ``approver`` must equal
        one of them exactly.
    :param what: How the caller names the list, for the error message.
    :raises ValueError: For something other than a list or tuple (a single string included), an
        empty list (no one could ever decide), an entry that is not a string, a blank name, or a
        name with spaces around it (no approver would ever match it).
    """
    if isinstance(approvers, str) or not isinstance(approvers, (list, tuple)):
        raise ValueError(f"{what} must be a list of approver names, got {approvers!r}.")
    if not approvers:
        raise ValueError(
            f"{what} is empty, so no one could decide; name at least one approver, or pass None to let anyone decide."
        )
    names: list[str] = []
    for name in approvers:
        if not isinstance(name, str):
            raise ValueError(f"{what} must hold approver names (strings), got {name!r} ({type(name).__name__}).")
        if not name.strip():
            raise ValueError(f"{what} holds a blank approver name {name!r}.")
        if name != name.strip():
            raise ValueError(
                f"{what} holds {name!r}, with spaces around it; a decision's approver must match a name exactly."
            )
        if name not in names:
            names.append(name)
    return names


def approver_refusal(request: PendingConfirmation, approver: str | None) -> str | None:
    """Why ``approver`` may not decide ``request`` (None when they may: the request names no
    approvers, or names them)."""
    allowed = request.approvers
    if allowed is None:
        return None
    where = f"tool call '{request.tool_call_id}' ({request.tool_name})"
    names = ", ".join(allowed)
    if not approver:
        return f"{where[0].upper()}{where[1:]} needs an approver: pass approver= (one of {names})."
    if approver not in allowed:
        return f"Approver '{approver}' may not decide {where}: allowed approvers are {names}."
    return None


class ConfirmationRegistry:
    """Pending requests and their decisions for one run.

    :param search_attribute: Name of the Bool search attribute upserted when the run starts or
        stops waiting for a person; ``None`` to upsert nothing (for servers without it).
    """

    def __init__(self, search_attribute: str | None = WAITING_FOR_APPROVAL.name) -> None:
        self.search_attribute = search_attribute
        self._pending: dict[str, PendingConfirmation] = {}
        self._schemas: dict[str, dict[str, Any]] = {}
        self._limits: dict[str, DecisionLimits] = {}
        self._decisions: dict[str, tuple[ToolDecision, DecisionRecord]] = {}
        self._closed: dict[str, DecisionRecord] = {}
        self._advertised = False
        self._memo: list[dict[str, Any]] = []

    @classmethod
    def of_current_run(cls, search_attribute: str | None = WAITING_FOR_APPROVAL.name) -> ConfirmationRegistry:
        """The current run's registry, created on first use (with ``search_attribute``).

        :raises RuntimeError: Outside an ``AgentWorkflow`` run.
        """
        return current_run().slot_or_create(ConfirmationRegistry, lambda: cls(search_attribute))

    # -- what the handlers see ---------------------------------------------------------------

    def pending_count(self) -> int:
        """How many requests wait for a decision (``RunContext.pending_count`` sums these)."""
        return len(self.pending())

    def pending(self) -> list[PendingConfirmation]:
        """Requests that still wait for a decision, oldest first."""
        return [p for call_id, p in self._pending.items() if call_id not in self._decisions]

    def validate(self, decision: ToolDecision) -> PendingConfirmation:
        """Check a decision against the pending requests without changing anything.

        :returns: The request it decides.
        :raises DecisionError: For an unknown or already decided ``tool_call_id``, a decision
            quoting another request's ``request_id``, an ``approver`` over ``MAX_NAME_CHARS`` (200)
            characters, a request with
            ``approvers`` and a decision whose ``approver`` is missing or not one of them (checked
            before the decision's content, so someone not on the list learns nothing about what
            would pass), an action other than confirm/reject/modify, ``new_tool_params`` or
            ``feedback`` over the request's :class:`DecisionLimits` (the message gives the size and
            the limit), a modify without
            ``new_tool_params`` or with arguments that fail the tool's JSON schema, or an
            ``arguments_sha256`` that does not match the call.
        """
        call_id = decision.tool_call_id
        if call_id in self._decisions or call_id in self._closed:
            record = self._decisions[call_id][1] if call_id in self._decisions else self._closed[call_id]
            who = f" by {record.approver}" if record.approver else ""
            raise DecisionError(
                f"Tool call '{call_id}' was already decided ({record.action}{who} via {record.via} "
                f"at {record.decided_at.isoformat()})."
            )
        request = self._pending.get(call_id)
        if request is None:
            waiting = ", ".join(self._pending) or "none"
            raise DecisionError(f"No pending confirmation for tool call '{call_id}'. Pending calls: {waiting}.")
        if decision.request_id and decision.request_id != request.request_id:
            raise DecisionError(
                f"This decision was issued for an earlier request of tool call '{call_id}' "
                f"(request {decision.request_id}), not for the one waiting now (request {request.request_id}): "
                "the run was started again with the same id, or rewound, since. Decide the call waiting now."
            )
        if decision.approver is not None and len(decision.approver) > MAX_NAME_CHARS:
            raise DecisionError(
                f"The approver is {len(decision.approver):,} characters; the limit is {MAX_NAME_CHARS:,}."
            )
        refusal = approver_refusal(request, decision.approver)
        if refusal is not None:
            raise DecisionError(refusal)
        if decision.action not in ACTIONS:
            raise DecisionError(f"Unknown action '{decision.action}'; use one of: {', '.join(ACTIONS)}.")
        if decision.arguments_sha256 and decision.arguments_sha256 != request.arguments_sha256:
            raise DecisionError(
                f"Tool call '{call_id}' has arguments with hash {request.arguments_sha256}, "
                f"not {decision.arguments_sha256}: the decision was made for other arguments."
            )
        too_big = self._limits[call_id].problems(decision)
        if too_big:
            raise DecisionError(f"Decision on tool call '{call_id}' is too big: {'; '.join(too_big)}.")
        if decision.action == "modify":
            if decision.new_tool_params is None:
                raise DecisionError("A 'modify' decision needs new_tool_params (the complete new arguments).")
            problems = schema_errors(self._schemas.get(call_id) or {}, decision.new_tool_params)
            if problems:
                raise DecisionError(
                    f"new_tool_params for '{request.tool_name}' do not match its JSON schema: {'; '.join(problems)}."
                )
        elif decision.new_tool_params is not None:
            raise DecisionError(f"new_tool_params are only accepted with action 'modify', not '{decision.action}'.")
        return request

    def accept(self, decision: ToolDecision, via: str) -> DecisionRecord:
        """Validate and record a decision; the waiting strategy wakes up.

        :raises DecisionError: As :meth:`validate`.
        """
        request = self.validate(decision)
        approved = decision.new_tool_params if decision.action == "modify" else request.tool_params
        record = DecisionRecord(
            tool_call_id=request.tool_call_id,
            tool_name=request.tool_name,
            action=decision.action,
            approver=decision.approver,
            decided_at=workflow.now(),
            arguments_sha256=arguments_sha256(approved),
            feedback=decision.feedback,
            via=via,  # type: ignore[arg-type]
        )
        self._decisions[request.tool_call_id] = (decision, record)
        return record

    # -- what strategies do ------------------------------------------------------------------

    def publish(
        self,
        request: PendingConfirmation,
        schema: dict[str, Any] | None,
        limits: DecisionLimits = DEFAULT_DECISION_LIMITS,
    ) -> None:
        """Make a request pending (visible to the query, decidable by Signal/Update).

        :param request: What is asked; in a sub-agent's run its ``parent_run_id`` is set here.
        :param schema: The tool's JSON schema; a modify's ``new_tool_params`` must satisfy it.
        :param limits: How big a decision on this request may be.
        :raises ValueError: If a request with the same ``tool_call_id`` was already published.
        """
        call_id = request.tool_call_id
        if call_id in self._pending or call_id in self._closed:
            raise ValueError(f"Tool call id '{call_id}' was already asked for in this run.")
        run = current_run_or_none()
        parent = run.parent_run_id if run is not None else None
        if parent is not None and request.parent_run_id is None:  # a sub-agent's run (Agent.as_tool)
            request = request.model_copy(update={"parent_run_id": parent})
        self._pending[call_id] = request
        self._schemas[call_id] = dict(schema or {})
        self._limits[call_id] = limits
        self._advertise()

    def decision(self, call_id: str) -> tuple[ToolDecision, DecisionRecord] | None:
        """The decision accepted for ``call_id`` so far, or None."""
        return self._decisions.get(call_id)

    def escalate(self, call_id: str, approvers: list[str]) -> PendingConfirmation:
        """Hand the waiting ``call_id`` to ``approvers`` (an ``Escalation``): from now on only
        they may decide it. Returns the request as it now stands."""
        request = self._pending[call_id]
        escalated = request.model_copy(
            update={
                "approvers": list(approvers),
                "escalations": request.escalations + 1,
                "escalated_at": workflow.now(),
            }
        )
        self._pending[call_id] = escalated
        self._advertise()
        return escalated

    def time_out(self, call_id: str, action: str, feedback: str) -> tuple[ToolDecision, DecisionRecord]:
        """Decide ``call_id`` on behalf of no one (the request expired)."""
        request = self._pending[call_id]
        decision = ToolDecision(tool_call_id=call_id, action=action, feedback=feedback)
        record = DecisionRecord(
            tool_call_id=call_id,
            tool_name=request.tool_name,
            action=action,
            approver=None,
            decided_at=workflow.now(),
            arguments_sha256=request.arguments_sha256,
            feedback=feedback,
            via="timeout",
        )
        self._decisions[call_id] = (decision, record)
        return decision, record

    def cancel_pending(self, reason: str) -> int:
        """The run is cancelled: decide every waiting request as rejected ``via="cancel"`` on behalf
        of no one, and close it (``hooks.protocol.CancelsPending``); returns how many closed."""
        waiting = [request.tool_call_id for request in self.pending()]
        for call_id in waiting:
            self.time_out(call_id, "reject", f"The run was cancelled: {reason}")
            decision, record = self._decisions[call_id]
            self._decisions[call_id] = (decision, record.model_copy(update={"via": "cancel"}))
            self.close(call_id)
        return len(waiting)

    def close(self, call_id: str) -> None:
        """Retire a decided request (later decisions for it are 'already decided')."""
        self._pending.pop(call_id, None)
        self._schemas.pop(call_id, None)
        self._limits.pop(call_id, None)
        entry = self._decisions.pop(call_id, None)
        if entry is not None:
            self._closed[call_id] = entry[1]
        self._advertise()

    def _advertise(self) -> None:
        """Publish what waits where visibility returns it: the Bool search attribute (when the
        strategy names one) and a summary of each pending call in the memo, so listing waiting runs
        needs no per-run query. Every run that parks on a confirmation publishes the memo."""
        pending = self.pending()
        waiting = bool(pending)
        if waiting != self._advertised and self.search_attribute is not None:
            self._advertised = waiting
            key = SearchAttributeKey.for_bool(self.search_attribute)
            workflow.upsert_search_attributes([key.value_set(waiting)])
        summaries = [PendingSummary.of(request).model_dump(mode="json") for request in pending]
        if summaries != self._memo:
            self._memo = summaries
            workflow.upsert_memo({PENDING_MEMO_KEY: summaries})


def schema_errors(schema: dict[str, Any], params: Any) -> list[str]:
    """Readable JSON-schema violations of ``params`` (empty when valid)."""
    if not isinstance(params, dict):
        return [f"expected a JSON object, got {type(params).__name__}"]
    validator = jsonschema.Draft202012Validator(schema)
    problems = []
    for error in sorted(validator.iter_errors(params), key=lambda e: [str(p) for p in e.path]):
        where = ".".join(str(p) for p in error.path) or "(arguments)"
        problems.append(f"{where}: {error.message}")
    return problems
