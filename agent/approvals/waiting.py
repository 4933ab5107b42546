"""Runs waiting for a person, across the namespace, from one visibility listing.

Every run that waits for a person publishes its pending calls in its memo (``pending_confirmations``)
and sets the Bool search attribute ``AgentWaitingForApproval``; a run without that memo is not
waiting. ``agent pending``, ``agent approve --interactive`` and the inbox's waiting list use this.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from temporalio.api.workflow.v1 import WorkflowExecutionInfo
from temporalio.api.workflowservice.v1 import ListWorkflowExecutionsRequest, ListWorkflowExecutionsResponse
from temporalio.client import Client
from temporalio.service import RPCError

from agent.approvals.decisions import ConfirmationError
from core.settings import get_settings
from core.wire import RUNNING_RUNS_QUERY
from hooks.human_in_the_loop.dataclasses import PendingSummary
from hooks.human_in_the_loop.wire import PENDING_MEMO_KEY, WAITING_RUNS_QUERY


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


#: The most runs the server returns in one visibility page (the frontend's
#: ``visibilityMaxPageSize`` default); larger pages were measured no faster on the dev server.
MAX_PAGE_SIZE = 1000


def _listing_query(use_search_attribute: bool | None) -> str:
    if use_search_attribute is None:
        use_search_attribute = get_settings().waiting_search_attribute != "off"
    return WAITING_RUNS_QUERY if use_search_attribute else RUNNING_RUNS_QUERY


async def iter_waiting_runs(
    client: Client, use_search_attribute: bool | None = None, page_size: int = MAX_PAGE_SIZE
) -> AsyncIterator[WaitingRun]:
    """Every run of the namespace that waits for a person, with its pending calls, as visibility
    pages arrive (one listing, paged by ``page_size``; the next page is fetched while this one
    is decoded).

    Each run publishes its pending calls in its memo, so no run is queried (no worker is needed);
    a run without the memo waits for no one. Visibility
    is eventually consistent: a run that started waiting a moment ago may not be listed yet, and a
    run decided during the listing may still be listed.

    Why the raw ``ListWorkflowExecutions`` call rather than ``Client.list_workflows``: building a
    ``WorkflowExecution`` decodes every search attribute of every run, and decoding each memo on its
    own took about as long again (measured: 5.5 s of client time for 10,000 runs); here only the
    memo field we need is decoded, one data-converter call per page.

    :param use_search_attribute: List by ``AgentWaitingForApproval`` (True) or every open agent
        run's memo (False, for namespaces without the attribute). None: the attribute unless
        ``AGENT_WAITING_SEARCH_ATTRIBUTE=off``.
    :param page_size: Runs per visibility page, 1 to :data:`MAX_PAGE_SIZE`.
    :raises ValueError: For a page size out of range.
    :raises ConfirmationError: When the server refuses the listing (e.g. the search attribute is
        not registered), with the server's reason.
    """
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"page_size must be between 1 and {MAX_PAGE_SIZE}, got {page_size}.")
    query = _listing_query(use_search_attribute)

    async def fetch(token: bytes) -> ListWorkflowExecutionsResponse:
        request = ListWorkflowExecutionsRequest(
            namespace=client.namespace, query=query, page_size=page_size, next_page_token=token
        )
        try:
            return await client.workflow_service.list_workflow_executions(request, retry=True)
        except RPCError as err:
            raise ConfirmationError(f"Listing waiting runs ({query}) failed: {err.message}") from err

    next_page: asyncio.Task[ListWorkflowExecutionsResponse] | None = asyncio.ensure_future(fetch(b""))
    try:
        while next_page is not None:
            page = await next_page
            # Ask for the next page before decoding this one: the server's work and ours overlap.
            next_page = asyncio.ensure_future(fetch(page.next_page_token)) if page.next_page_token else None
            for run in await _decode_page(client, page.executions):
                if run.pending:
                    yield run
    finally:
        if next_page is not None and not next_page.done():
            next_page.cancel()


async def list_waiting_runs(
    client: Client, limit: int | None = None, use_search_attribute: bool | None = None, page_size: int = MAX_PAGE_SIZE
) -> WaitingRuns:
    """Every run of the namespace that waits for a person, with its pending calls, from one
    visibility listing (see :func:`iter_waiting_runs`).

    :param limit: At most this many runs (None: all). When it cuts the list, ``truncated`` says so.
    :param use_search_attribute: As for :func:`iter_waiting_runs`.
    :param page_size: Runs per visibility page, 1 to :data:`MAX_PAGE_SIZE`.
    :raises ValueError: For a limit below 1 or a page size out of range.
    :raises ConfirmationError: When the server refuses the listing.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1 (or None for every run), got {limit}.")
    runs: list[WaitingRun] = []
    listing = iter_waiting_runs(client, use_search_attribute=use_search_attribute, page_size=page_size)
    try:
        async for run in listing:
            if limit is not None and len(runs) >= limit:
                return WaitingRuns(runs, truncated=True)
            runs.append(run)
    finally:
        await listing.aclose()
    return WaitingRuns(runs)


async def _decode_page(client: Client, executions: Sequence[WorkflowExecutionInfo]) -> list[WaitingRun]:
    """Each execution's pending calls from its memo: one data-converter call for the page (codecs
    and external storage apply as for any payload)."""
    with_memo = [e for e in executions if PENDING_MEMO_KEY in e.memo.fields]
    decoded = await client.data_converter.decode(
        [e.memo.fields[PENDING_MEMO_KEY] for e in with_memo], [list[PendingSummary]] * len(with_memo)
    )
    return [
        WaitingRun(e.execution.workflow_id, summaries or []) for e, summaries in zip(with_memo, decoded, strict=True)
    ]
