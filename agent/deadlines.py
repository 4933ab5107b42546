"""One deadline that holds for a request a person waits on (a message, a decision, a cancel).

Temporal's client bounds each RPC by ``rpc_timeout`` but not the whole call: ``execute_update``
asks the server again for as long as the server answers that the Update is only admitted (no worker
has taken it), and ``asyncio.wait_for`` around it does not help either: the SDK turns the
cancellation into ``WorkflowUpdateRPCTimeoutOrCancelledError``, which escapes ``wait_for``'s
``TimeoutError``. :func:`within` puts the whole call, its retries included, under one
``asyncio.timeout`` and turns every way that deadline shows up into :class:`DeadlinePassed`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from temporalio.client import WorkflowHandle, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError, RPCStatusCode

T = TypeVar("T")

#: Pause between two tries of an Update the server turned away because the run's workflow task had
#: failed or timed out (a worker stopped with a task in hand; a Signal racing the task).
RETRY_SECONDS = 0.2
#: Tries of such an Update when there is no deadline.
UNBOUNDED_TRIES = 5


class DeadlinePassed(TimeoutError):
    """The deadline passed before the run answered (the caller says what that means)."""


class UpdateNotTaken(DeadlinePassed):
    """No worker took the Update before the deadline.

    :param held: True when the server still holds it (admitted: it takes effect when a worker picks
        the run up); False when the server's last answer turned it away (the run's workflow task had
        failed or timed out), so it is not delivered unless sent again.
    """

    def __init__(self, message: str, held: bool) -> None:
        super().__init__(message)
        self.held = held


async def within(timeout: timedelta | None, call: Callable[[timedelta | None], Awaitable[T]]) -> T:
    """Await ``call(rpc_timeout)`` with everything it does bounded by ``timeout``.

    :param timeout: The one deadline (None: no deadline of ours).
    :param call: Does the work; gets the deadline to pass on as each RPC's ``rpc_timeout``.
    :raises DeadlinePassed: When ``timeout`` passes first, or an RPC ran out of its deadline.
    :raises asyncio.CancelledError: When the caller itself was cancelled (not a deadline).
    """
    if timeout is None:
        return await call(None)
    task = asyncio.current_task()
    cancelling = task.cancelling() if task is not None else 0
    try:
        async with asyncio.timeout(timeout.total_seconds()):
            return await call(timeout)
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError) as err:
        if task is not None and task.cancelling() > cancelling:
            raise asyncio.CancelledError() from err  # cancelled from outside, not our deadline
        raise DeadlinePassed(f"no answer within {timeout.total_seconds():g} s") from err
    except RPCError as err:
        if err.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
            raise DeadlinePassed(f"no answer within {timeout.total_seconds():g} s") from err
        raise


def _task_failed(err: RPCError) -> bool:
    """The server's refusal of an Update while the run's workflow task is failed or timed out:
    nothing was applied, and a later try can succeed."""
    return err.status == RPCStatusCode.FAILED_PRECONDITION and "workflow task" in err.message.lower()


async def execute_update(
    handle: WorkflowHandle, update: str, arg: object, *, id: str, result_type: type, timeout: timedelta | None
) -> Any:
    """``handle.execute_update`` with Update id ``id`` under one deadline, tried again while the
    server turns it away because the run's workflow task failed or timed out (every try has the
    same id, so the server never applies it twice).

    :raises UpdateNotTaken: When ``timeout`` passes first (its ``held`` says what became of it).
    :raises temporalio.client.WorkflowUpdateFailedError: The run's validator or handler refused it.
    :raises temporalio.service.RPCError: Any other error of the server (or the last turn-away when
        there is no deadline).
    """
    in_flight = False

    async def tries(rpc_timeout: timedelta | None) -> Any:
        nonlocal in_flight
        for attempt in range(1, 1_000_000):
            in_flight = True
            try:
                return await handle.execute_update(update, arg, id=id, result_type=result_type, rpc_timeout=rpc_timeout)
            except RPCError as err:
                in_flight = False
                if not _task_failed(err) or (timeout is None and attempt >= UNBOUNDED_TRIES):
                    raise
            await asyncio.sleep(RETRY_SECONDS)
        raise AssertionError("unreachable")

    try:
        return await within(timeout, tries)
    except DeadlinePassed as err:
        raise UpdateNotTaken(str(err), held=in_flight) from err


def seconds(timeout: timedelta | None) -> str:
    """``30 s`` for a message (``no deadline`` for None)."""
    return f"{timeout.total_seconds():g} s" if timeout is not None else "no deadline"


def update_id(kind: str, run_id: str, *parts: Any) -> str:
    """A stable Temporal Update id for a request made on a person's behalf: the same request
    (same run, same parts) gets the same id, so the server takes a retry as the same Update and
    never applies it twice.

    :param kind: What is asked (``message``, ``decision``, ``cancel``).
    :param parts: What identifies the request (JSON-serialisable); hashed.
    """
    digest = hashlib.sha256(json.dumps([run_id, *parts], sort_keys=True, default=str).encode()).hexdigest()
    return f"{kind}-{digest[:32]}"
