"""Client side of conversations: send a message, wait for a turn, cancel a run, start-or-send.

``AgentRunHandle.send_message/wait_turn/cancel`` and ``Agent.send`` use these; Temporal's errors
come back as :class:`ConversationError` subclasses with a readable message (DESIGN.md
"Conversations"; the wire names are in ``core.wire``, documented in docs/api.md).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from core.payloads import AgentRunInput, CancelRequest, MessageReceipt, RunStatus, TurnResult, UserMessage
from core.settings import DEFAULT_WORKFLOW_TASK_TIMEOUT
from core.wire import CANCEL_RUN_UPDATE, RUN_STATUS_QUERY, SEND_MESSAGE_UPDATE, TURN_RESULT_QUERY, WORKFLOW_TYPE

#: How long ``wait_turn`` waits by default.
DEFAULT_TURN_TIMEOUT = timedelta(minutes=10)
#: Polling of ``turn_result``: first interval, growing by half each time up to the last.
POLL_FIRST_SECONDS, POLL_MAX_SECONDS = 0.05, 1.0
#: Tries of an Update whose workflow task failed under it, and the pause between two. A Signal
#: that arrives while the task is out (a batch of tokens, every AGENT_TOKEN_BATCH_MS while an answer streams)
#: fails that task with UnhandledCommand; the worker runs it again at once, but the server has
#: already rejected the Update ("unexpected workflow task failure"), which was not applied.
UPDATE_TRIES, UPDATE_RETRY_SECONDS = 5, 0.2


class ConversationError(RuntimeError):
    """A message, a turn wait or a cancel failed; the message says why."""


class MessageRefusedError(ConversationError):
    """The run refused the message (closed run, empty or too long text, sender not a participant)."""


class TurnTimeoutError(ConversationError, TimeoutError):
    """``wait_turn`` gave up: the turn did not finish within its timeout."""


def _cause_message(err: BaseException) -> str:
    cause = err.cause if isinstance(err, WorkflowUpdateFailedError) else err.__cause__
    while cause is not None and getattr(cause, "cause", None) is not None:
        cause = cause.cause
    return str(getattr(cause, "message", None) or cause or err)


async def _execute_update(handle: WorkflowHandle, update: str, arg: object, result_type: type) -> object:
    """``handle.execute_update``, tried again (see :data:`UPDATE_TRIES`) when the workflow task
    that carried it failed; any other error, or the last try's, is raised as it came."""
    for attempt in range(1, UPDATE_TRIES + 1):
        try:
            return await handle.execute_update(update, arg, result_type=result_type)
        except RPCError as err:
            task_failed = err.status == RPCStatusCode.FAILED_PRECONDITION and "workflow task failure" in err.message
            if not task_failed or attempt == UPDATE_TRIES:
                raise
        await asyncio.sleep(UPDATE_RETRY_SECONDS)
    raise AssertionError("unreachable")


def _rpc_error(err: RPCError, run_id: str, what: str) -> ConversationError:
    if err.status == RPCStatusCode.NOT_FOUND:
        return MessageRefusedError(f"Run '{run_id}' is not running (finished, or never started), so {what}.")
    return ConversationError(f"Run '{run_id}': {err.message}")


async def send_message(handle: WorkflowHandle, message: UserMessage) -> MessageReceipt:
    """Send ``message`` by the ``send_message`` Update; returns once the run accepted it.

    :raises MessageRefusedError: The run's validator refused it, or the run is not running.
    :raises ConversationError: For any other Temporal error.
    """
    try:
        return await _execute_update(handle, SEND_MESSAGE_UPDATE, message, MessageReceipt)  # type: ignore[return-value]
    except WorkflowUpdateFailedError as err:
        raise MessageRefusedError(f"Run '{handle.id}' refused the message: {_cause_message(err)}") from err
    except RPCError as err:
        raise _rpc_error(err, handle.id, "it takes no message") from err


async def cancel_run(handle: WorkflowHandle, reason: str | None) -> RunStatus:
    """Ask the run to end as cancelled (Update ``cancel_run``); returns its status as the request left it.

    :raises ConversationError: The run has finished already, or is not running.
    """
    try:
        return await _execute_update(handle, CANCEL_RUN_UPDATE, CancelRequest(reason=reason), RunStatus)  # type: ignore[return-value]
    except WorkflowUpdateFailedError as err:
        raise ConversationError(f"Run '{handle.id}' cannot be cancelled: {_cause_message(err)}") from err
    except RPCError as err:
        raise _rpc_error(err, handle.id, "there is nothing to cancel") from err


async def wait_turn(handle: WorkflowHandle, turn: int, timeout: timedelta = DEFAULT_TURN_TIMEOUT) -> TurnResult:
    """Poll the ``turn_result`` query until turn ``turn`` has finished.

    :raises TurnTimeoutError: When ``timeout`` passes first (the message says where the run is).
    :raises ConversationError: When the run ended without reaching that turn (idle, cancelled, failed).
    """
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + timeout.total_seconds()
    interval = POLL_FIRST_SECONDS
    while True:
        result = await handle.query(TURN_RESULT_QUERY, turn, result_type=TurnResult | None)
        if result is not None:
            return result
        status = await handle.query(RUN_STATUS_QUERY, result_type=RunStatus)
        if status.done:
            # The turn may have finished between the two queries: ask once more before saying it never did.
            result = await handle.query(TURN_RESULT_QUERY, turn, result_type=TurnResult | None)
            if result is not None:
                return result
            raise ConversationError(
                f"Run '{handle.id}' ended at turn {status.turn} (exit_reason {status.exit_reason!r}) "
                f"without finishing turn {turn}."
            )
        if loop.time() >= give_up_at:
            raise TurnTimeoutError(
                f"Turn {turn} of run '{handle.id}' did not finish within {timeout}: the run is at turn "
                f"{status.turn}, step {status.step_count}, phase {status.phase!r}"
                f"{', waiting for approval' if status.waiting_for_approval else ''}."
            )
        await asyncio.sleep(min(interval, max(0.0, give_up_at - loop.time())))
        interval = min(interval * 1.5, POLL_MAX_SECONDS)


async def start_or_send(
    client: Client, run_input: AgentRunInput, run_id: str, task_queue: str, message: UserMessage
) -> MessageReceipt:
    """Update-with-start: start ``AgentWorkflow`` with ``run_input`` unless run ``run_id`` is
    running (then it is used as is), and deliver ``message`` by ``send_message`` in the same call.

    :raises MessageRefusedError: The run refused the message (the run is started all the same).
    """
    start = WithStartWorkflowOperation(
        WORKFLOW_TYPE,
        run_input,
        id=run_id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        task_timeout=DEFAULT_WORKFLOW_TASK_TIMEOUT,
    )
    try:
        return await client.execute_update_with_start_workflow(
            SEND_MESSAGE_UPDATE, message, start_workflow_operation=start, result_type=MessageReceipt
        )
    except WorkflowUpdateFailedError as err:
        raise MessageRefusedError(f"Run '{run_id}' refused the message: {_cause_message(err)}") from err
