"""The web approvals inbox: a Starlette app over a Temporal client.

Pages: the waiting calls of the namespace (``/``, rows refreshed by polling ``/waiting/rows``),
one call (``/runs/{run}/calls/{call}``, with Approve, Reject with feedback and Modify), one run
(``/runs/{run}``: status and timeline) and an offloaded tool result (``/runs/{run}/results``).

Decisions go through the run's ``submit_tool_decision`` Update, so the run's validator is the one
authority: unknown or already-decided calls, arguments failing the schema and approvers not on
the strategy's list are refused there, and the page shows its message. The approver is the
request's identity (:mod:`agent.inbox.identity`), never a form field; POST forms carry a CSRF
token (:mod:`agent.inbox.csrf`). Pages load nothing from outside the app (no CDN), and the
Content-Security-Policy says so.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError

from agent.client import AgentRunHandle
from agent.inbox.csrf import CSRF_COOKIE, CSRF_FIELD, CsrfTokens
from agent.inbox.identity import TOKEN_COOKIE, IdentityConfig
from agent.inbox.present import pretty_json, relative, strategy_for, waiting_rows, when
from agent.inbox.reads import HistoryReader, RunRead, is_not_found, shown
from core.payloads import RunStatus
from core.wire import RUN_STATUS_QUERY
from hooks.human_in_the_loop.client import (
    ConfirmationError,
    DecisionRefusedError,
    UnknownRunError,
    list_waiting_runs,
)
from hooks.human_in_the_loop.dataclasses import PendingConfirmation, ToolDecision
from hooks.human_in_the_loop.wire import PENDING_CONFIRMATIONS_QUERY
from hooks.tool_result_offloading.reader import READ_LIMIT_CHARS, select_range
from hooks.tool_result_offloading.stores import ToolResultStoreError, store_from_environment

HERE = Path(__file__).parent
#: Actions as the forms name them -> ``ToolDecision.action``.
FORM_ACTIONS = {"approve": "confirm", "reject": "reject", "modify": "modify"}
#: Only our own files: no inline script, nothing from another origin.
CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'"


class InboxSettings:
    """Settings of one inbox app.

    :param poll_seconds: How often the waiting list asks for fresh rows.
    :param conversation_messages: How many of the last messages the call page shows.
    :param list_limit: At most this many waiting runs are listed (the page says when cut).
    :param query_timeout: RPC timeout of the queries the pages send to a run.
    """

    def __init__(
        self,
        poll_seconds: float = 1.5,
        conversation_messages: int = 12,
        list_limit: int = 500,
        query_timeout: timedelta = timedelta(seconds=5),
    ) -> None:
        if poll_seconds <= 0 or conversation_messages < 1 or list_limit < 1:
            raise ValueError("poll_seconds must be > 0, conversation_messages and list_limit >= 1.")
        self.poll_seconds = poll_seconds
        self.conversation_messages = conversation_messages
        self.list_limit = list_limit
        self.query_timeout = query_timeout


def create_app(
    client: Client,
    *,
    identity: IdentityConfig | None = None,
    settings: InboxSettings | None = None,
    csrf_secret: bytes | None = None,
) -> Starlette:
    """The inbox app.

    :param client: A Temporal client with the project's data converter (``agent.connect``).
    :param identity: Where approvers' identities come from; None: read-only (decisions refused).
    :param settings: Poll interval, conversation length, list limit (defaults: :class:`InboxSettings`).
    :param csrf_secret: HMAC key for CSRF tokens (default: random per process).
    """
    return Inbox(client, identity or IdentityConfig(), settings or InboxSettings(), CsrfTokens(csrf_secret)).app


class PageError(Exception):
    """A page that cannot be shown; becomes an error page with ``status``."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status, self.title, self.message = status, title, message


class Inbox:
    """The routes and what they share (client, identity, CSRF, templates)."""

    def __init__(self, client: Client, identity: IdentityConfig, settings: InboxSettings, csrf: CsrfTokens) -> None:
        self.client = client
        self.identity = identity
        self.settings = settings
        self.csrf = csrf
        self.reader = HistoryReader(client)
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]), enable_async=False
        )
        self.templates.filters.update(when=when, relative=relative, pretty_json=pretty_json)
        self.app = Starlette(
            routes=[
                Route("/", self.waiting_page),
                Route("/waiting/rows", self.waiting_rows),
                Route("/login", self.login),
                Route("/runs/{run_id:str}", self.run_page),
                Route("/runs/{run_id:str}/results", self.result_page),
                Route("/runs/{run_id:str}/calls/{call_id:str}", self.call_page),
                Route("/runs/{run_id:str}/calls/{call_id:str}/decide", self.decide, methods=["POST"]),
                Route("/runs/{run_id:str}/calls/{call_id:str}/state", self.call_state),
                Route("/healthz", self.healthz),
                Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
            ],
            exception_handlers={PageError: self._page_error},
        )

    # -- shared ------------------------------------------------------------------------------

    def render(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        """Render ``template`` with the identity, the CSRF token (set as a cookie when new) and
        the security headers."""
        token = request.cookies.get(CSRF_COOKIE)
        fresh = not self.csrf.valid(token)
        if fresh:
            token = self.csrf.new()
        html = self.templates.get_template(template).render(
            request=request,
            me=self.identity.identify(request),
            identity_mode=self.identity.mode,
            csrf_field=CSRF_FIELD,
            csrf_token=token,
            poll_ms=int(self.settings.poll_seconds * 1000),
            **context,
        )
        response = HTMLResponse(html, status_code=status)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        if fresh:
            response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path="/")
        return response

    async def _page_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, PageError)
        return self.render(request, "error.html", status=exc.status, title=exc.title, message=exc.message)

    def viewer(self, request: Request) -> str | None:
        """The identity of a page's viewer. When an identity source is configured, pages need
        one (401 otherwise); a read-only inbox shows pages to anyone who can reach it."""
        me = self.identity.identify(request)
        if me is None and not self.identity.read_only:
            raise PageError(401, "Who are you?", self.identity.how_to_sign_in())
        return me

    def handle(self, run_id: str) -> AgentRunHandle:
        return AgentRunHandle(self.client, run_id)

    async def pending_of(self, run_id: str) -> list[PendingConfirmation]:
        """The run's pending calls (the ``pending_confirmations`` query, with a timeout so that a
        run without a worker gives a clear page rather than a hung one).

        :raises PageError: 404 for an unknown run, 504 when the run does not answer in time.
        """
        handle = self.handle(run_id).workflow
        try:
            return await handle.query(
                PENDING_CONFIRMATIONS_QUERY,
                result_type=list[PendingConfirmation],
                rpc_timeout=self.settings.query_timeout,
            )
        except WorkflowQueryFailedError as err:
            raise PageError(502, "The run did not answer", f"Run '{run_id}': the query failed: {err}") from err
        except RPCError as err:
            if is_not_found(err):
                raise PageError(404, "No such run", f"No run '{run_id}' in this namespace.") from err
            raise PageError(
                504,
                "The run did not answer",
                f"Run '{run_id}' did not answer the pending_confirmations query ({err.message}). "
                "Is a worker polling its task queue?",
            ) from err

    async def read_run(self, run_id: str) -> RunRead:
        try:
            return await self.reader.read(run_id)
        except RPCError as err:
            if is_not_found(err):
                raise PageError(404, "No such run", f"No run '{run_id}' in this namespace.") from err
            raise PageError(502, "Temporal did not answer", err.message) from err

    # -- the waiting list --------------------------------------------------------------------

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

    # -- one call ----------------------------------------------------------------------------

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
    ) -> Response:
        run = await self.read_run(run_id)
        pending = await self.pending_of(run_id) if run.status == "RUNNING" else []
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
            approvers=getattr(request_, "approvers", None) if request_ else None,
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
                raise PageError(404, "No such run", f"No run '{run_id}' in this namespace.") from err
            raise
        running = description.status is not None and description.status.name == "RUNNING"
        pending = await self.pending_of(run_id) if running else []
        return JSONResponse({"waiting": any(p.tool_call_id == call_id for p in pending)})

    async def decide(self, request: Request) -> Response:
        run_id, call_id = request.path_params["run_id"], request.path_params["call_id"]
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
        fields = {key: str(value) for key, value in form.items() if key != CSRF_FIELD}
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
                params = json.loads(fields.get("new_tool_params", ""))
            except json.JSONDecodeError as err:
                return await self._call_response(
                    request,
                    run_id,
                    call_id,
                    error=f"The new arguments are not valid JSON: {err}",
                    status=422,
                    form=fields,
                )
            if not isinstance(params, dict):
                return await self._call_response(
                    request, run_id, call_id, error="The new arguments must be a JSON object.", status=422, form=fields
                )
            decision.new_tool_params = params
        try:
            await self.handle(run_id).decide(decision)
        except DecisionRefusedError as err:
            return await self._call_response(request, run_id, call_id, error=str(err), status=409, form=fields)
        except UnknownRunError as err:
            message = f"This call was already decided: the run is no longer waiting ({err})."
            return await self._call_response(request, run_id, call_id, error=message, status=409, form=fields)
        except ConfirmationError as err:
            return await self._call_response(request, run_id, call_id, error=str(err), status=502, form=fields)
        return RedirectResponse(f"/runs/{run_id}?decided={call_id}", status_code=303)

    # -- one run -----------------------------------------------------------------------------

    async def run_page(self, request: Request) -> Response:
        self.viewer(request)
        run_id = request.path_params["run_id"]
        run = await self.read_run(run_id)
        status: RunStatus | None = None
        pending: list[PendingConfirmation] = []
        if run.status == "RUNNING":
            try:
                status = await self.handle(run_id).workflow.query(
                    RUN_STATUS_QUERY, result_type=RunStatus, rpc_timeout=self.settings.query_timeout
                )
            except (WorkflowQueryFailedError, RPCError):
                status = None
            pending = await self.pending_of(run_id)
        decided_id = request.query_params.get("decided")
        return self.render(
            request,
            "run.html",
            run_id=run_id,
            run=run,
            live=status,
            pending=pending,
            just_decided=run.decisions.get(decided_id) if decided_id else None,
            decided_id=decided_id,
        )

    # -- an offloaded result -----------------------------------------------------------------

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

    # -- sign-in and health ------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        token = request.query_params.get("token", "")
        name = self.identity.token_name(token)
        if not self.identity.tokens or name is None:
            raise PageError(401, "Sign-in failed", self.identity.how_to_sign_in())
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="lax", path="/")
        return response

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok")
