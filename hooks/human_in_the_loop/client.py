"""Client side of confirmations: send decisions, read pending requests, find waiting runs.

``AgentRunHandle.confirm/reject/modify/decide/pending_confirmations`` and the ``agent pending``,
``approve``, ``reject`` and ``modify`` commands use these; Temporal's errors come back as
:class:`ConfirmationError` subclasses with a readable message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from core.wire import (
    PENDING_CONFIRMATIONS_QUERY,
    PENDING_MEMO_KEY,
    RUNNING_RUNS_QUERY,
    SUBMIT_TOOL_DECISION_UPDATE,
    TOOL_DECISION_SIGNAL,
    WAITING_RUNS_QUERY,
)
from hooks.human_in_the_loop.checks import SEARCH_ATTRIBUTE_ENV
from hooks.human_in_the_loop.dataclasses import DecisionRecord, PendingConfirmation, PendingSummary, ToolDecision


class ConfirmationError(RuntimeError):
    """A decision or a query about confirmations failed; the message says why."""


class UnknownRunError(ConfirmationError):
    """No run with that id (or it is no longer running)."""


class DecisionRefusedError(ConfirmationError):
    """The run refused the decision (unknown or already decided call, bad action or arguments)."""


def _cause_message(err: BaseException) -> str:
    cause = err.cause if isinstance(err, WorkflowUpdateFailedError) else err.__cause__
    while cause is not None and getattr(cause, "cause", None) is not None:
        cause = cause.cause
    return str(getattr(cause, "message", None) or cause or err)


def _rpc_error(err: RPCError, run_id: str) -> ConfirmationError:
    if err.status == RPCStatusCode.NOT_FOUND:
        return UnknownRunError(f"No run '{run_id}' is waiting: {err.message}")
    return ConfirmationError(f"Run '{run_id}': {err.message}")


async def submit_decision(handle: WorkflowHandle, decision: ToolDecision) -> DecisionRecord:
    """Send ``decision`` by the ``submit_tool_decision`` Update; returns once the run accepted it.

    :raises DecisionRefusedError: When the run's validator (or handler) refused it.
    :raises UnknownRunError: When there is no such run, or it has finished.
    :raises ConfirmationError: For any other Temporal error.
    """
    try:
        return await handle.execute_update(SUBMIT_TOOL_DECISION_UPDATE, decision, result_type=DecisionRecord)
    except WorkflowUpdateFailedError as err:
        raise DecisionRefusedError(f"Run '{handle.id}' refused the decision: {_cause_message(err)}") from err
    except RPCError as err:
        raise _rpc_error(err, handle.id) from err


async def signal_decision(handle: WorkflowHandle, decision: ToolDecision) -> None:
    """Send ``decision`` by the fire-and-forget ``tool_decision`` Signal (a bad one is ignored by the run).

    :raises UnknownRunError: When there is no such run, or it has finished.
    """
    try:
        await handle.signal(TOOL_DECISION_SIGNAL, decision)
    except RPCError as err:
        raise _rpc_error(err, handle.id) from err


async def query_pending(handle: WorkflowHandle) -> list[PendingConfirmation]:
    """The ``pending_confirmations`` query.

    :raises UnknownRunError: When there is no such run.
    :raises ConfirmationError: When the query fails.
    """
    try:
        return await handle.query(PENDING_CONFIRMATIONS_QUERY, result_type=list[PendingConfirmation])
    except WorkflowQueryFailedError as err:
        raise ConfirmationError(f"Run '{handle.id}': the pending_confirmations query failed: {err}") from err
    except RPCError as err:
        raise _rpc_error(err, handle.id) from err


@dataclass
class WaitingRun:
    """A run found waiting for approval, with a summary of each call it waits for."""

    run_id: str
    pending: list[PendingSummary]


@dataclass
class WaitingRuns:
    """The result of :func:`list_waiting_runs`.

    :param runs: The waiting runs found, in visibility order.
    :param truncated: True when ``limit`` cut the list: more runs wait than are listed.
    """

    runs: list[WaitingRun]
    truncated: bool = False


async def list_waiting_runs(
    client: Client, limit: int | None = None, use_search_attribute: bool | None = None, page_size: int = 1000
) -> WaitingRuns:
    """Every run of the namespace that waits for a person, with its pending calls, from one
    visibility listing (paged by ``page_size``).

    Each run publishes its pending calls in its memo, so no run is queried one by one; only runs
    started before that memo existed are asked with the ``pending_confirmations`` query. Visibility
    is eventually consistent: a run that started waiting a moment ago may not be listed yet.

    :param limit: At most this many runs (None: all). When it cuts the list, ``truncated`` says so.
    :param use_search_attribute: List by ``AgentWaitingForApproval`` (True) or every open agent
        run's memo (False, for namespaces without the attribute). None: the attribute unless
        ``AGENT_WAITING_SEARCH_ATTRIBUTE=off``.
    :param page_size: Runs per visibility page.
    """
    if use_search_attribute is None:
        use_search_attribute = os.environ.get(SEARCH_ATTRIBUTE_ENV, "").strip().lower() != "off"
    query = WAITING_RUNS_QUERY if use_search_attribute else RUNNING_RUNS_QUERY
    runs: list[WaitingRun] = []
    async for execution in client.list_workflows(query, page_size=page_size):
        pending = await _pending_of(client, execution)
        if not pending:
            continue
        if limit is not None and len(runs) >= limit:
            return WaitingRuns(runs, truncated=True)
        runs.append(WaitingRun(execution.id, pending))
    return WaitingRuns(runs)


async def _pending_of(client: Client, execution: WorkflowExecution) -> list[PendingSummary]:
    memo = await execution.memo()
    if PENDING_MEMO_KEY in memo:
        return [PendingSummary.model_validate(item) for item in memo[PENDING_MEMO_KEY] or []]
    try:  # a run from before the memo: ask it
        pending = await query_pending(client.get_workflow_handle(execution.id, run_id=execution.run_id))
    except ConfirmationError:
        return []
    return [PendingSummary.of(request) for request in pending]
