"""Client side of conversations: send a message, wait for a turn, cancel a run, start-or-send.

``AgentRunHandle.send_message/wait_turn/cancel`` and ``Agent.send`` use these; Temporal's errors
come back as :class:`ConversationError` subclasses with a readable message (DESIGN.md
"Conversations"; the wire names are in ``core.wire``, documented in docs/api.md).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from agent.deadlines import DeadlinePassed, UpdateNotTaken, execute_update, seconds, update_id, within
from core.payloads import AgentRunInput, CancelRequest, MessageReceipt, RunStatus, TurnResult, UserMessage
from core.settings import DEFAULT_WORKFLOW_TASK_TIMEOUT
from core.wire import CANCEL_RUN_UPDATE, RUN_STATUS_QUERY, SEND_MESSAGE_UPDATE, TURN_RESULT_QUERY, WORKFLOW_TYPE

#: How long ``wait_turn`` waits by default.
DEFAULT_TURN_TIMEOUT = timedelta(minutes=10)
#: How long a message or a cancel waits by default for the run (a worker) to accept it.
DEFAULT_ACCEPT_TIMEOUT = timedelta(seconds=30)
#: What becomes of an Update no worker took in time (measured on the dev server: nothing is in the
#: run's history; a worker that picks the run up later receives it and it takes effect).
HELD = (
    "it may still reach the run, held by the server for the run's next worker, but not for sure (not across a "
    "server restart, nor always once this request has gone)"
)
#: Polling of ``turn_result``: first interval, growing by half each time up to the last.
POLL_FIRST_SECONDS, POLL_MAX_SECONDS = 0.05, 1.0
#: What became of an Update the server turned away (the run's workflow task had failed or timed out,
#: as a stopped worker's does; agent.deadlines.execute_update tries it again until the deadline).
TURNED_AWAY = (
    "the server turned it away because the run's workflow task had failed or timed out (a stopped worker's "
    "does), so it was not delivered"
)


class ConversationError(RuntimeError):
    """A message, a turn wait or a cancel failed; the message says why."""


class MessageRefusedError(ConversationError):
    """The run refused the message (closed run, empty or too long text, sender not a participant)."""


class NotAcceptedError(ConversationError, TimeoutError):
    """No worker accepted the message or the cancel within its deadline (the message says what
    becomes of it and what to do)."""


class TurnTimeoutError(ConversationError, TimeoutError):
    """``wait_turn`` gave up: the turn did not finish within its timeout."""


def _cause_message(err: BaseException) -> str:
    cause = err.cause if isinstance(err, WorkflowUpdateFailedError) else err.__cause__
    while cause is not None and getattr(cause, "cause", None) is not None:
        cause = cause.cause
    return str(getattr(cause, "message", None) or cause or err)


def _rpc_error(err: RPCError, run_id: str, what: str) -> ConversationError:
    if err.status == RPCStatusCode.NOT_FOUND:
        return MessageRefusedError(f"Run '{run_id}' is not running (finished, or never started), so {what}.")
    return ConversationError(f"Run '{run_id}': {err.message}")


def new_message_id() -> str:
    """A fresh message id (``msg-`` and 32 hex digits), for a message whose sender gave none."""
    return f"msg-{uuid.uuid4().hex}"


async def send_message(
    handle: WorkflowHandle, message: UserMessage, timeout: timedelta | None = DEFAULT_ACCEPT_TIMEOUT
) -> MessageReceipt:
    """Send ``message`` by the ``send_message`` Update; returns once the run accepted it.

    The message gets an id here when it has none, and the Update's id is derived from it, so a
    retry with the same id is the same Update to the server and the same message to the run.

    :param timeout: The one deadline of the whole call (None: as long as it takes).
    :raises NotAcceptedError: No worker accepted it within ``timeout`` (it may still be delivered).
    :raises MessageRefusedError: The run's validator refused it, or the run is not running.
    :raises ConversationError: For any other Temporal error.
    """
    if message.message_id is None:
        message = message.model_copy(update={"message_id": new_message_id()})
    try:
        return await execute_update(
            handle,
            SEND_MESSAGE_UPDATE,
            message,
            result_type=MessageReceipt,
            id=update_id("message", handle.id, message.message_id),
            timeout=timeout,
        )
    except UpdateNotTaken as err:
        became = (
            f"It is in no history yet: {HELD}. If it does not show up, send it again with"
            if err.held
            else f"{TURNED_AWAY[0].upper()}{TURNED_AWAY[1:]}. Send it again once the worker is back, with"
        )
        raise NotAcceptedError(
            f"Run '{handle.id}' did not accept the message within {seconds(timeout)}: no worker took it (is the "
            f"run's worker running, or stopped?). {became} the same message id ({message.message_id}): it is "
            "added once."
        ) from err
    except WorkflowUpdateFailedError as err:
        raise MessageRefusedError(f"Run '{handle.id}' refused the message: {_cause_message(err)}") from err
    except RPCError as err:
        raise _rpc_error(err, handle.id, "it takes no message") from err


async def cancel_run(
    handle: WorkflowHandle, reason: str | None, timeout: timedelta | None = DEFAULT_ACCEPT_TIMEOUT
) -> RunStatus:
    """Ask the run to end as cancelled (Update ``cancel_run``); returns its status as the request left it.

    :param timeout: The one deadline of the whole call (None: as long as it takes).
    :raises NotAcceptedError: No worker accepted it within ``timeout`` (it may still take effect).
    :raises ConversationError: The run has finished already, or is not running.
    """
    try:
        return await execute_update(
            handle,
            CANCEL_RUN_UPDATE,
            CancelRequest(reason=reason),
            result_type=RunStatus,
            id=update_id("cancel", handle.id, reason),
            timeout=timeout,
        )
    except UpdateNotTaken as err:
        became = f"It is in no history yet: {HELD}" if err.held else f"{TURNED_AWAY[0].upper()}{TURNED_AWAY[1:]}"
        raise NotAcceptedError(
            f"Run '{handle.id}' did not accept the cancel within {seconds(timeout)}: no worker took it (is the "
            f"run's worker running, or is the run stuck?). {became}. To end the run without its worker: "
            f'agent cancel {handle.id} --force --reason "..." (Temporal\'s terminate).'
        ) from err
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
    client: Client,
    run_input: AgentRunInput,
    run_id: str,
    task_queue: str,
    message: UserMessage,
    timeout: timedelta | None = DEFAULT_ACCEPT_TIMEOUT,
) -> MessageReceipt:
    """Update-with-start: start ``AgentWorkflow`` with ``run_input`` unless run ``run_id`` is
    running (then it is used as is), and deliver ``message`` by ``send_message`` in the same call
    (with a message id, and an Update id derived from it, as :func:`send_message`).

    :param timeout: The one deadline of the whole call (None: as long as it takes).
    :raises NotAcceptedError: No worker accepted the message within ``timeout`` (the run is started).
    :raises MessageRefusedError: The run refused the message (the run is started all the same).
    """
    if message.message_id is None:
        message = message.model_copy(update={"message_id": new_message_id()})
    start = WithStartWorkflowOperation(
        WORKFLOW_TYPE,
        run_input,
        id=run_id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        task_timeout=DEFAULT_WORKFLOW_TASK_TIMEOUT,
    )

    async def send(rpc_timeout: timedelta | None) -> MessageReceipt:
        return await client.execute_update_with_start_workflow(
            SEND_MESSAGE_UPDATE,
            message,
            id=update_id("message", run_id, message.message_id),
            start_workflow_operation=start,
            result_type=MessageReceipt,
            rpc_timeout=rpc_timeout,
        )

    try:
        return await within(timeout, send)
    except DeadlinePassed as err:
        raise NotAcceptedError(
            f"Run '{run_id}' did not accept the message within {seconds(timeout)}: no worker took it (does a "
            f"worker poll task queue '{task_queue}'?). It is in no history yet: {HELD}. If it does not show up, "
            f"send it again with the same message id ({message.message_id}): it is added once."
        ) from err
    except WorkflowUpdateFailedError as err:
        raise MessageRefusedError(f"Run '{run_id}' refused the message: {_cause_message(err)}") from err
