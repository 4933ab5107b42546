"""The audit record: what happened to one tool call of one step.

A pydantic model, because records cross the workflow boundary (the ``write_audit_records``
activity's input) and are stored as JSON.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict


class AuditRecord(BaseModel):
    """One tool call the model asked for, and what became of it.

    :param run_id: The run (workflow id).
    :param step: The step (``step_count`` when the call was made; the first step is 0).
    :param tool_name: The tool called.
    :param tool_call_id: The call's id: the model's, or the one a ``before_tool`` hook gave it
        (``ConfirmationHook`` keeps id-less calls id-less, as Haystack does); ``s{step}-c{index}``
        for a call that has none (``index`` is its position in the model's reply).
    :param arguments_sha256: ``hooks.human_in_the_loop.arguments_sha256`` of the arguments the
        call ran with (the new ones after a ``"modify"``), or was rejected with.
    :param decision: ``"confirm"``, ``"reject"`` or ``"modify"`` when a person (or a confirmation
        timeout) decided; None when no confirmation happened.
    :param approver: Who decided; None when no one was asked or the timeout decided.
    :param decision_via: How the decision came: ``"update"`` or ``"signal"`` (a person),
        ``"timeout"`` (no one decided in time: the strategy's ``on_timeout``, not a person's
        rejection), ``"cancel"`` (the run was cancelled); None when no confirmation happened.
    :param error: True when the call produced no successful result: the tool failed, the tool
        or its arguments were invalid, the call was rejected, or nothing answered it.
    :param result_chars: Characters of the result text the conversation holds (the pointer's
        when the result was offloaded); 0 when nothing answered the call.
    :param result_pointer: The store reference of the result when it was offloaded, else None.
    :param recorded_at: When the record was made (workflow time inside a run).
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    step: int
    tool_name: str
    tool_call_id: str
    arguments_sha256: str
    decision: str | None = None
    approver: str | None = None
    decision_via: str | None = None
    error: bool = False
    result_chars: int = 0
    result_pointer: str | None = None
    recorded_at: datetime
