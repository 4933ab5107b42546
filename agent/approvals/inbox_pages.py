"""The inbox's approval pages: the waiting calls of the namespace (``/``, rows refreshed by polling
``/waiting/rows``), one call (``/runs/{run}/calls/{call}``, with Approve, Reject with feedback
and Modify, and ``.../state`` that the page polls), "approve all" for a run
(``POST /runs/{run}/approve-all``, :mod:`agent.approvals.batch`: each call decided and validated
on its own, the outcome listed per call) and the one-time links of approval webhooks
(:mod:`agent.approvals.link_pages`).

Decisions go through the run's ``submit_tool_decision`` Update (``submit_decision``), so the
run's validator is the one authority: unknown or already-decided calls, arguments failing the
schema and approvers not on the strategy's list are refused there, and the page shows its message.
The approver is the request's identity (:mod:`agent.inbox.identity`), never a form field; POST
forms carry a CSRF token (:mod:`agent.inbox.csrf`).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from temporalio.service import RPCError

from agent.approvals import link_pages
from agent.approvals.batch import decide_all
from agent.approvals.decisions import (
    ConfirmationError,
    DecisionRefusedError,
    ModifyParamsError,
    RunNotAnsweringError,
    UnknownRunError,
    parse_new_tool_params,
    submit_decision,
)
from agent.approvals.waiting import list_waiting_runs
from agent.inbox.csrf import CSRF_COOKIE, CSRF_FIELD
from agent.inbox.live import next_offset
from agent.inbox.pages import InboxContext, InboxPages, PageError, no_such_run
from agent.inbox.present import strategy_for, waiting_rows
from agent.inbox.run_view import is_not_found, shown
from hooks.human_in_the_loop.dataclasses import ToolDecision

#: Actions as the forms name them -> ``ToolDecision.action``.
FORM_ACTIONS = {"approve": "confirm", "reject": "reject", "modify": "modify"}


def routes(inbox: InboxContext) -> list[Route]:
    """The approval pages' routes."""
    pages = ApprovalPages(inbox)
    return [
        Route("/", pages.waiting_page),
        Route("/waiting/rows", pages.waiting_rows),
        Route("/runs/{run_id:path}/calls/{call_id:str}", pages.call_page),
        Route("/runs/{run_id:path}/calls/{call_id:str}/decide", pages.decide, methods=["POST"]),
        Route("/runs/{run_id:path}/calls/{call_id:str}/state", pages.call_state),
        Route("/runs/{run_id:path}/approve-all", pages.approve_all, methods=["POST"]),
        *link_pages.routes(inbox),
    ]


class ApprovalPages(InboxPages):
    """The waiting list, one call, and deciding it."""

    async def _rows_context(self, request: Request) -> dict[str, Any]:
        tool = request.query_params.get("tool", "").strip()
        run = request.query_params.get("run", "").strip()
        waiting = await list_waiting_runs(self.client, limit=self.settings.list_limit)
        all_rows = waiting_rows(waiting)
        rows = waiting_rows(waiting, tool=tool, run=run)
        tools = sorted({row.tool_name for row in all_rows})
        return {"rows": rows, "tool": tool, "run": run, "tools": tools, "truncated": waiting.truncated}

    async def waiting_page(self, request: Request) -> Response:
        self.viewer(request)
        return self.render(request, "waiting.html", **await self._rows_context(request))

    async def waiting_rows(self, request: Request) -> Response:
        self.viewer(request)
        return self.render(request, "_rows.html", **await self._rows_context(request))

    async def call_page(self, request: Request) -> Response:
        self.viewer(request)
        run_id, call_id = request.path_params["run_id"], request.path_params["call_id"]
        return await self._call_response(request, run_id, call_id)

    async def _call_response(
        self,
        request: Request,
        run_id: str,
        call_id: str,
        *,
        error: str | None = None,
        status: int = 200,
        form: dict[str, str] | None = None,
        ask_run: bool = True,
    ) -> Response:
        # A run that did not answer a decision is not asked again: the POST keeps its one deadline.
        events_from = await next_offset(self.inbox, run_id) if ask_run else None  # before the reads: none missed
        run = await self.read_run(run_id)
        pending = await self.pending_of(run_id) if run.status == "RUNNING" and ask_run else []
        request_ = next((p for p in pending if p.tool_call_id == call_id), None)
        decided = run.decisions.get(call_id)
        if request_ is None and decided is None and error is None:
            raise PageError(404, "No such call", f"Run '{run_id}' has no tool call '{call_id}' waiting or decided.")
        tool_name = request_.tool_name if request_ else (decided.tool_name if decided else "")
        spec = run.tools.get(tool_name)
        messages = run.conversation[-self.settings.conversation_messages :]
        return self.render(
            request,
            "call.html",
            status=status,
            run_id=run_id,
            call_id=call_id,
            call=request_,
            events_from=events_from,
            approvers=getattr(request_, "approvers", None) if request_ else None,
            waiting_count=len(pending),
            decided=decided,
            tool_name=tool_name,
            description=(request_.tool_description if request_ else "") or (spec.description if spec else ""),
            schema=spec.parameters if spec else None,
            schema_json=json.dumps(spec.parameters if spec else {}),
            strategy=strategy_for(run.agent, tool_name),
            messages=[shown(m) for m in messages],
            earlier=len(run.conversation) - len(messages),
            conversation_complete=run.conversation_complete,
            run_status=run.status,
            error=error,
            form=form or {},
            read_only=self.identity.read_only,
            unanswered=not ask_run,
        )

    async def call_state(self, request: Request) -> Response:
        """``{"waiting": bool}``: whether the call still waits (the call page polls it, so a
        decision made elsewhere shows without a reload)."""
        self.viewer(request)
        run_id, call_id = request.path_params["run_id"], request.path_params["call_id"]
        try:
            description = await self.handle(run_id).workflow.describe()
        except RPCError as err:
            if is_not_found(err):
                raise no_such_run(run_id) from err
            raise
        running = description.status is not None and description.status.name == "RUNNING"
        pending = await self.pending_of(run_id) if running else []
        return JSONResponse({"waiting": any(p.tool_call_id == call_id for p in pending)})

    async def _deciding(self, request: Request) -> tuple[str, dict[str, str]]:
        """The approver of a decision POST and its form fields, after the CSRF and identity checks."""
        form = await request.form()
        if not self.csrf.check(request.cookies.get(CSRF_COOKIE), str(form.get(CSRF_FIELD) or "")):
            raise PageError(
                403, "Form expired", "This form's security token is missing or wrong. Reload the page and try again."
            )
        if self.identity.read_only:
            raise PageError(403, "Read-only inbox", self.identity.how_to_sign_in())
        approver = self.identity.identify(request)
        if approver is None:
            raise PageError(401, "Who are you?", self.identity.how_to_sign_in())
        return approver, {key: str(value) for key, value in form.items() if key != CSRF_FIELD}

    async def approve_all(self, request: Request) -> Response:
        """Approve every call the run waits on, each validated by the run on its own; the page lists
        the outcome per call."""
        run_id = request.path_params["run_id"]
        approver, _ = await self._deciding(request)
        try:
            outcomes = await decide_all(
                self.client.get_workflow_handle(run_id), approver=approver, timeout=self.settings.decision_timeout
            )
        except UnknownRunError as err:
            raise no_such_run(run_id) from err
        except ConfirmationError as err:
            raise PageError(502, "The run did not answer", str(err)) from err
        accepted = sum(outcome.accepted for outcome in outcomes)
        return self.render(
            request,
            "batch.html",
            status=200 if accepted == len(outcomes) else 409,
            run_id=run_id,
            outcomes=outcomes,
            accepted=accepted,
        )

    async def decide(self, request: Request) -> Response:
        run_id, call_id = request.path_params["run_id"], request.path_params["call_id"]
        approver, fields = await self._deciding(request)
        action = FORM_ACTIONS.get(fields.get("action", ""))
        if action is None:
            raise PageError(
                400, "Unknown action", f"Action {fields.get('action')!r}: expected approve, reject or modify."
            )
        decision = ToolDecision(
            tool_call_id=call_id,
            action=action,
            approver=approver,
            arguments_sha256=fields.get("arguments_sha256") or None,
            feedback=(fields.get("feedback", "").strip() or None) if action == "reject" else None,
        )
        if action == "modify":
            try:
                decision.new_tool_params = parse_new_tool_params(fields.get("new_tool_params", ""))
            except ModifyParamsError as err:
                error = str(err)
                return await self._call_response(
                    request, run_id, call_id, error=error[0].upper() + error[1:] + ".", status=422, form=fields
                )
        try:
            await submit_decision(self.client.get_workflow_handle(run_id), decision, self.settings.decision_timeout)
        except DecisionRefusedError as err:
            return await self._call_response(request, run_id, call_id, error=str(err), status=409, form=fields)
        except UnknownRunError as err:
            message = f"This call was already decided: the run is no longer waiting ({err})."
            return await self._call_response(request, run_id, call_id, error=message, status=409, form=fields)
        except RunNotAnsweringError as err:
            return await self._call_response(
                request, run_id, call_id, error=str(err), status=504, form=fields, ask_run=False
            )
        except ConfirmationError as err:
            return await self._call_response(request, run_id, call_id, error=str(err), status=502, form=fields)
        return RedirectResponse(f"/runs/{run_id}?decided={call_id}", status_code=303)
