"""Deciding on a run's pending tool calls from a client: send a decision, read what waits.

``AgentRunHandle.confirm/reject/modify/decide/pending_confirmations``, the ``agent approve``,
``reject`` and ``modify`` commands, ``agent approve --interactive``, the inbox and ``agent watch``
all go through these; Temporal's errors come back as :class:`ConfirmationError` subclasses with a
readable message. :func:`parse_new_tool_params` is the one reader of "modify" JSON and
:func:`default_approver` the one default approver name.
"""

from __future__ import annotations

import getpass
import json
from datetime import timedelta
from typing import Any

from temporalio.client import (
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError, RPCStatusCode

from agent.deadlines import DeadlinePassed, UpdateNotTaken, execute_update, seconds, update_id, within
from core.settings import env_name, get_settings
from hooks.human_in_the_loop.dataclasses import DecisionRecord, PendingConfirmation, ToolDecision
from hooks.human_in_the_loop.wire import PENDING_CONFIRMATIONS_QUERY, SUBMIT_TOOL_DECISION_UPDATE, TOOL_DECISION_SIGNAL

#: Who decides when no approver is given: this variable, else the OS user name.
APPROVER_ENV = env_name("approver")
#: How long a client waits for a run to answer a query or accept a decision.
DEFAULT_TIMEOUT = timedelta(seconds=30)


#: What became of an Update no worker took: it is in no history, the server holds it in memory and
#: usually hands it to the run's next worker, but not across a server restart and not always once
#: its sender has gone (seen on the dev server: a frozen worker's task timed out and the decision
#: never arrived). Sending the same decision again is what makes it take effect for sure.
UPDATE_HELD = (
    "It is not in the run's history: the server may still hand it to the run when a worker picks the run "
    "up, but not for sure (not across a server restart, nor always once this request has gone); "
    "`agent pending` shows whether the call still waits, and then send the same decision again."
)


#: What became of an Update the server turned away (the run's workflow task had failed or timed out).
UPDATE_TURNED_AWAY = (
    "It was not delivered: the server turned it away because the run's workflow task had failed or timed out "
    "(a stopped worker's does); send it again once the worker is back."
)


class ConfirmationError(RuntimeError):
    """A decision or a query about confirmations failed; the message says why."""


class UnknownRunError(ConfirmationError):
    """No run with that id (or it is no longer running)."""


class DecisionRefusedError(ConfirmationError):
    """The run refused the decision (unknown or already decided call, bad action or arguments)."""


class RunNotAnsweringError(ConfirmationError):
    """The run did not answer within the deadline (no worker polls its task queue, or it is busy)."""


class ModifyParamsError(ValueError):
    """ "Modify" arguments that are not a JSON object."""


def default_approver() -> str | None:
    """The approver recorded when none is given: ``AGENT_APPROVER`` if set, else the OS user name
    (None when neither is known)."""
    named = get_settings().approver
    if named:
        return named
    try:
        return getpass.getuser() or None
    except Exception:  # no user name in this environment (getpass raises several kinds)
        return None


def parse_new_tool_params(text: str) -> dict[str, Any]:
    """The complete new arguments of a "modify" decision, from JSON text.

    :param text: A JSON object, e.g. ``{"path": "/tmp/b"}``.
    :raises ModifyParamsError: When ``text`` is not valid JSON, or not a JSON object.
    """
    try:
        params = json.loads(text)
    except json.JSONDecodeError as err:
        raise ModifyParamsError(f"the new arguments are not valid JSON: {err}") from err
    if not isinstance(params, dict):
        raise ModifyParamsError(
            f'the new arguments must be a JSON object of the tool\'s arguments, e.g. {{"path": "/tmp/b"}}; '
            f"got a {type(params).__name__}"
        )
    return params


def _cause_message(err: BaseException) -> str:
    cause = err.cause if isinstance(err, WorkflowUpdateFailedError) else err.__cause__
    while cause is not None and getattr(cause, "cause", None) is not None:
        cause = cause.cause
    return str(getattr(cause, "message", None) or cause or err)


def _rpc_error(err: RPCError, run_id: str, waiting_for: str, timeout: timedelta | None) -> ConfirmationError:
    if err.status == RPCStatusCode.NOT_FOUND:
        return UnknownRunError(f"No run '{run_id}' is waiting: {err.message}")
    if err.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED) or "no poller" in err.message.lower():
        within = f" within {timeout.total_seconds():g} s" if timeout else ""
        return RunNotAnsweringError(
            f"Run '{run_id}' did not answer {waiting_for}{within} ({err.message}). Is a worker polling its task queue?"
        )
    return ConfirmationError(f"Run '{run_id}': {err.message}")


def decision_update_id(run_id: str, decision: ToolDecision) -> str:
    """The Update id of ``decision``: derived from the run, the call, the action and what the
    decision says, so a person's retry of the same decision is the same Update to the server (which
    applies it once and answers the retry with the first outcome)."""
    return update_id("decision", run_id, decision.tool_call_id, decision.action, decision.model_dump(mode="json"))


async def submit_decision(
    handle: WorkflowHandle, decision: ToolDecision, timeout: timedelta | None = DEFAULT_TIMEOUT
) -> DecisionRecord:
    """Send ``decision`` by the ``submit_tool_decision`` Update; returns once the run accepted it.

    An Update is recorded only once a worker has run its validator: with no worker polling the
    run's task queue nothing reaches the run's history, and this raises
    :class:`RunNotAnsweringError` after ``timeout`` (see :data:`UPDATE_HELD` for what becomes of it).
    The Update id is :func:`decision_update_id`, so sending the same decision again is safe.

    :param timeout: The one deadline of the whole call (None: as long as it takes).
    :raises DecisionRefusedError: When the run's validator (or handler) refused it.
    :raises UnknownRunError: When there is no such run, or it has finished.
    :raises RunNotAnsweringError: When the run did not answer within ``timeout``.
    :raises ConfirmationError: For any other Temporal error.
    """

    try:
        return await execute_update(
            handle,
            SUBMIT_TOOL_DECISION_UPDATE,
            decision,
            id=decision_update_id(handle.id, decision),
            result_type=DecisionRecord,
            timeout=timeout,
        )
    except WorkflowUpdateFailedError as err:
        raise DecisionRefusedError(f"Run '{handle.id}' refused the decision: {_cause_message(err)}") from err
    except (UpdateNotTaken, WorkflowUpdateRPCTimeoutOrCancelledError) as err:
        became = UPDATE_HELD if getattr(err, "held", True) else UPDATE_TURNED_AWAY
        raise RunNotAnsweringError(
            f"Run '{handle.id}' did not accept or refuse the decision within {seconds(timeout)}: no worker took "
            f"it (is the run's worker running, or stopped?). {became} Sending the same decision again "
            "is safe: it is applied once."
        ) from err
    except RPCError as err:
        raise _rpc_error(err, handle.id, "the decision", timeout) from err


async def signal_decision(handle: WorkflowHandle, decision: ToolDecision) -> None:
    """Send ``decision`` by the fire-and-forget ``tool_decision`` Signal (a bad one is ignored by the
    run). The server records a Signal in the run's history at once, worker or not; the run reads
    it when a worker next runs it.

    :raises UnknownRunError: When there is no such run, or it has finished.
    """
    try:
        await handle.signal(TOOL_DECISION_SIGNAL, decision)
    except RPCError as err:
        raise _rpc_error(err, handle.id, "the signal", None) from err


async def query_pending(
    handle: WorkflowHandle, timeout: timedelta | None = DEFAULT_TIMEOUT
) -> list[PendingConfirmation]:
    """The ``pending_confirmations`` query (it needs a worker to answer).

    :param timeout: How long to wait for the answer (None: the server's own deadline).
    :raises UnknownRunError: When there is no such run.
    :raises RunNotAnsweringError: When the run did not answer within ``timeout``.
    :raises ConfirmationError: When the query fails.
    """

    async def ask(rpc_timeout: timedelta | None) -> list[PendingConfirmation]:
        return await handle.query(
            PENDING_CONFIRMATIONS_QUERY, result_type=list[PendingConfirmation], rpc_timeout=rpc_timeout
        )

    try:
        return await within(timeout, ask)
    except DeadlinePassed as err:
        raise RunNotAnsweringError(
            f"Run '{handle.id}' did not answer the pending_confirmations query within {seconds(timeout)}. "
            "Is a worker polling its task queue?"
        ) from err
    except WorkflowQueryFailedError as err:
        raise ConfirmationError(f"Run '{handle.id}': the pending_confirmations query failed: {err}") from err
    except RPCError as err:
        raise _rpc_error(err, handle.id, "the pending_confirmations query", timeout) from err
