"""The inbox's run pages: one run (``/runs/{run}``: status, a workflow task that keeps failing
with its fix, the tree of runs it belongs to (parent, sub-agents' child runs) and the timeline) and an offloaded tool result (``/runs/{run}/results``, read
through the same store and range logic as the ``read_tool_result`` tool, scoped to that run)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from agent.inbox.live import read_so_far
from agent.inbox.pages import InboxContext, InboxPages, PageError
from agent.inbox.run_tree import run_tree
from agent.run_endings import ending_of
from core.payloads import FailingWorkflowTask, RunStatus
from core.wire import RUN_STATUS_QUERY
from hooks.human_in_the_loop.dataclasses import PendingConfirmation
from hooks.tool_result_offloading.reader import READ_LIMIT_CHARS, select_range
from hooks.tool_result_offloading.stores import ToolResultStoreError, store_from_environment


def routes(inbox: InboxContext) -> list[Route]:
    """The run pages' routes."""
    pages = RunPages(inbox)
    # A run id may hold "/" (a sub-agent's child run: "{parent}/{call}"), so the bare run route
    # matches every /runs/... path: it comes last of all the inbox's routes (agent/inbox/app.py).
    return [
        Route("/runs/{run_id:path}/results", pages.result_page),
        Route("/runs/{run_id:path}", pages.run_page),
    ]


class RunPages(InboxPages):
    """One run's page and its offloaded results."""

    async def run_page(self, request: Request) -> Response:
        self.viewer(request)
        run_id = request.path_params["run_id"]
        so_far = await read_so_far(self.inbox, run_id)  # before the history: the stream picks up from here
        run = await self.read_run(run_id)
        status: RunStatus | None = None
        pending: list[PendingConfirmation] = []
        stuck = await self._failing_task(run_id) if run.status == "RUNNING" else None
        if run.status == "RUNNING" and stuck is None:  # a stuck run answers no query
            try:
                status = await self.handle(run_id).workflow.query(
                    RUN_STATUS_QUERY, result_type=RunStatus, rpc_timeout=self.settings.query_timeout
                )
            except (WorkflowQueryFailedError, RPCError):
                status = None
            pending = await self.pending_of(run_id)
        tree = await run_tree(self.client, run_id)
        decided_id = request.query_params.get("decided")
        return self.render(
            request,
            "run.html",
            run_id=run_id,
            run=run,
            live=status,
            pending=pending,
            tree=tree,
            stuck=stuck,
            just_decided=run.decisions.get(decided_id) if decided_id else None,
            decided_id=decided_id,
            so_far=so_far,
            ending=await ending_of(self.client, run_id, run.status),
        )

    async def _failing_task(self, run_id: str) -> FailingWorkflowTask | None:
        """The run's workflow task that keeps failing, if any.

        :raises PageError: 502 when Temporal does not answer.
        """
        try:
            health = await self.handle(run_id).health()
        except RPCError as err:
            raise PageError(502, "Temporal did not answer", err.message) from err
        return health.failing_workflow_task

    async def result_page(self, request: Request) -> Response:
        self.viewer(request)
        run_id = request.path_params["run_id"]
        reference = request.query_params.get("ref", "")
        try:
            start = int(request.query_params.get("start", "0"))
        except ValueError as err:
            raise PageError(400, "Bad range", "start must be a whole number of characters.") from err
        if not reference:
            raise PageError(400, "No reference", "Give the offloaded result's reference as ?ref=...")
        try:
            # The same store and range logic as the read_tool_result tool, scoped to this run.
            content = await run_in_threadpool(lambda: store_from_environment().for_run(run_id).read(reference))
            part = select_range(content, start=start, end=start + READ_LIMIT_CHARS)
        except (ValueError, ToolResultStoreError) as err:
            raise PageError(404, "Result not readable", str(err)) from err
        end = min(start + READ_LIMIT_CHARS, len(content))
        return self.render(
            request,
            "result.html",
            run_id=run_id,
            reference=reference,
            text=part[:READ_LIMIT_CHARS],
            start=start,
            end=end,
            total=len(content),
            next_start=end if end < len(content) else None,
            prev_start=max(0, start - READ_LIMIT_CHARS) if start > 0 else None,
        )
