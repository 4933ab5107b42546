"""Sessions waiting for a user's reply, from one visibility listing (no run is queried).

A session that waits for its user sets the Bool search attribute ``AgentWaitingForUser`` and a
memo entry ``waiting_for_user`` (turn, since when, a preview of the last message); ``agent pending
--replies`` and the inbox's reply list read them here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from temporalio.api.workflowservice.v1 import ListWorkflowExecutionsRequest
from temporalio.client import Client
from temporalio.service import RPCError

from core.wire import WAITING_FOR_USER_MEMO_KEY, WAITING_FOR_USER_QUERY

#: Runs per visibility page (the server's default maximum).
PAGE_SIZE = 1000


class ReplyListingError(RuntimeError):
    """The server refused the listing (e.g. ``AgentWaitingForUser`` is not registered)."""


@dataclass
class WaitingForReply:
    """A session waiting for its user's next message.

    :param run_id: The run (workflow id).
    :param turn: The turn that ended (the next message starts turn + 1).
    :param since: When it began waiting (ISO 8601, UTC), "" when the memo has none.
    :param last_message: The start of the run's last message (the assistant's answer, as a rule).
    """

    run_id: str
    turn: int | None
    since: str
    last_message: str

    def reply_command(self) -> str:
        """The command that answers it."""
        return f'agent send {self.run_id} "..."'

    def as_json(self) -> dict[str, Any]:
        """The JSON object ``agent pending --replies --json`` prints."""
        return {
            "run_id": self.run_id,
            "turn": self.turn,
            "since": self.since,
            "last_message": self.last_message,
            "reply": self.reply_command(),
        }


async def list_waiting_for_reply(client: Client, limit: int | None = None) -> tuple[list[WaitingForReply], bool]:
    """Every session of the namespace waiting for a reply, in visibility order, and whether
    ``limit`` cut the list. Visibility is eventually consistent: a session that began waiting a
    moment ago may not be listed yet.

    :param limit: At most this many runs (None: all).
    :raises ValueError: For a limit below 1.
    :raises ReplyListingError: When the server refuses the listing, with its reason.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1 (or None for every run), got {limit}.")
    runs: list[WaitingForReply] = []
    token = b""
    while True:
        request = ListWorkflowExecutionsRequest(
            namespace=client.namespace, query=WAITING_FOR_USER_QUERY, page_size=PAGE_SIZE, next_page_token=token
        )
        try:
            page = await client.workflow_service.list_workflow_executions(request, retry=True)
        except RPCError as err:
            raise ReplyListingError(
                f"Listing runs waiting for a reply ({WAITING_FOR_USER_QUERY}) failed: {err.message}"
            ) from err
        with_memo = [e for e in page.executions if WAITING_FOR_USER_MEMO_KEY in e.memo.fields]
        memos = await client.data_converter.decode(
            [e.memo.fields[WAITING_FOR_USER_MEMO_KEY] for e in with_memo], [dict | None] * len(with_memo)
        )
        for execution, memo in zip(with_memo, memos, strict=True):
            if not isinstance(memo, dict):  # the memo says it no longer waits (visibility lags the attribute)
                continue
            if limit is not None and len(runs) >= limit:
                return runs, True
            turn = memo.get("turn")
            runs.append(
                WaitingForReply(
                    run_id=execution.execution.workflow_id,
                    turn=turn if isinstance(turn, int) else None,
                    since=str(memo.get("since") or ""),
                    last_message=str(memo.get("last_message") or ""),
                )
            )
        token = page.next_page_token
        if not token:
            return runs, False
