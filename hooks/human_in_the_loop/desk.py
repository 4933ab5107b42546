"""``ConfirmationDesk``: the per-run place where pending confirmations wait for decisions.

Strategies publish requests here and wait; the workflow's Signal, Update and Query handlers
(``hooks.human_in_the_loop.handlers``) validate and deliver decisions here and read the pending
list. One desk per run, kept in ``RunContext.extensions["confirmations"]``.

Everything here is workflow code: deterministic, time from ``workflow.now()``.
"""

from __future__ import annotations

from typing import Any

import jsonschema
from temporalio import workflow
from temporalio.common import SearchAttributeKey

from core.wire import WAITING_FOR_APPROVAL
from hooks.context import current_run
from hooks.human_in_the_loop.dataclasses import (
    ACTIONS,
    DecisionRecord,
    PendingConfirmation,
    ToolDecision,
    arguments_sha256,
)

#: Key of the desk in ``RunContext.extensions``.
DESK_KEY = "confirmations"


class DecisionError(ValueError):
    """A decision the desk refuses (unknown or decided call, bad action, bad arguments)."""


class ConfirmationDesk:
    """Pending requests and their decisions for one run.

    :param search_attribute: Name of the Bool search attribute upserted when the run starts or
        stops waiting for a person; ``None`` to upsert nothing (for servers without it).
    """

    def __init__(self, search_attribute: str | None = WAITING_FOR_APPROVAL.name) -> None:
        self.search_attribute = search_attribute
        self._pending: dict[str, PendingConfirmation] = {}
        self._schemas: dict[str, dict[str, Any]] = {}
        self._decisions: dict[str, tuple[ToolDecision, DecisionRecord]] = {}
        self._closed: dict[str, DecisionRecord] = {}
        self._advertised = False

    @classmethod
    def of_current_run(cls, search_attribute: str | None = WAITING_FOR_APPROVAL.name) -> ConfirmationDesk:
        """The current run's desk, created on first use."""
        extensions = current_run().extensions
        desk = extensions.get(DESK_KEY)
        if desk is None:
            desk = extensions[DESK_KEY] = cls(search_attribute)
        return desk

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
        :raises DecisionError: For an unknown or already decided ``tool_call_id``, an action other
            than confirm/reject/modify, a modify without ``new_tool_params`` or with arguments that
            fail the tool's JSON schema, or an ``arguments_sha256`` that does not match the call.
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
        if decision.action not in ACTIONS:
            raise DecisionError(f"Unknown action '{decision.action}'; use one of: {', '.join(ACTIONS)}.")
        if decision.arguments_sha256 and decision.arguments_sha256 != request.arguments_sha256:
            raise DecisionError(
                f"Tool call '{call_id}' has arguments with hash {request.arguments_sha256}, "
                f"not {decision.arguments_sha256}: the decision was made for other arguments."
            )
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

    def publish(self, request: PendingConfirmation, schema: dict[str, Any] | None) -> None:
        """Make a request pending (visible to the query, decidable by Signal/Update).

        :raises ValueError: If a request with the same ``tool_call_id`` was already published.
        """
        call_id = request.tool_call_id
        if call_id in self._pending or call_id in self._closed:
            raise ValueError(f"Tool call id '{call_id}' was already asked for in this run.")
        self._pending[call_id] = request
        self._schemas[call_id] = dict(schema or {})
        self._advertise()

    def decision(self, call_id: str) -> tuple[ToolDecision, DecisionRecord] | None:
        """The decision accepted for ``call_id`` so far, or None."""
        return self._decisions.get(call_id)

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

    def close(self, call_id: str) -> None:
        """Retire a decided request (later decisions for it are 'already decided')."""
        self._pending.pop(call_id, None)
        self._schemas.pop(call_id, None)
        entry = self._decisions.pop(call_id, None)
        if entry is not None:
            self._closed[call_id] = entry[1]
        self._advertise()

    def _advertise(self) -> None:
        waiting = bool(self.pending())
        if waiting == self._advertised or self.search_attribute is None:
            return
        self._advertised = waiting
        key = SearchAttributeKey.for_bool(self.search_attribute)
        workflow.upsert_search_attributes([key.value_set(waiting)])


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
