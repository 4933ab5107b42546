"""The inbox's one-time approval links (``/link/<token>``), which approval webhooks carry.

``GET`` shows the call and one button; it never decides, so a link previewer (Slack's unfurler,
a mail scanner) that fetches the URL changes nothing. Only the page's ``POST`` (with the page's
CSRF token) decides, through the run's ``submit_tool_decision`` Update, as the approver the link
was issued to, bound to the call's arguments hash. What is refused, and where:

- a token that is malformed or whose signature does not match (forged, or altered: another
  approver, action or call): 403 here, before the run is asked;
- a link past the call's expiry: 410 here;
- the call already decided (by this link, its twin, anyone) or expired (on_timeout applied): 409,
  the run's validator says which;
- the same call id waiting under another request (a later run with the same run id, or the run
  after a rewind): 409, the validator says the link was issued for an earlier request;
- an approver the call no longer accepts (it was escalated to others since): 409, the validator;
- a run that has finished (every call of it decided): 409, "already decided".

Links need ``AGENT_APPROVAL_LINK_SECRET`` in the inbox's environment (the key the workers sign
with); without it every link is a 404 that says so. The link is its own credential: the inbox's
identity source (header, tokens) is not asked.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent.approvals.decisions import (
    ConfirmationError,
    DecisionRefusedError,
    RunNotAnsweringError,
    UnknownRunError,
    submit_decision,
)
from agent.inbox.csrf import CSRF_COOKIE, CSRF_FIELD
from agent.inbox.pages import InboxContext, InboxPages, PageError
from core.approval_links import LinkClaims, LinkError, verify_token
from core.settings import get_settings
from hooks.human_in_the_loop.dataclasses import ToolDecision

#: How each action reads on the page's button.
BUTTONS = {"confirm": "Approve", "reject": "Reject"}


def routes(inbox: InboxContext) -> list[Route]:
    """The link page's routes."""
    pages = LinkPages(inbox)
    return [
        Route("/link/{token:str}", pages.link_page),
        Route("/link/{token:str}", pages.use_link, methods=["POST"]),
    ]


class LinkPages(InboxPages):
    """Open a link (GET) and use it (POST)."""

    def _claims(self, token: str) -> LinkClaims:
        secret = get_settings().approval_link_secret
        if secret is None:
            raise PageError(
                404,
                "Approval links are off",
                "This inbox has no AGENT_APPROVAL_LINK_SECRET, so it cannot check approval links. "
                "Set it to the key the workers sign links with.",
            )
        try:
            return verify_token(token, secret.get_secret_value())
        except LinkError as err:
            expired = "expired" in str(err)
            raise PageError(410 if expired else 403, "Link expired" if expired else "Invalid link", str(err)) from err

    async def _page(
        self,
        request: Request,
        claims: LinkClaims,
        *,
        error: str | None = None,
        done: bool = False,
        status: int = 200,
        ask_run: bool = True,
    ) -> Response:
        run = await self.read_run(claims.run_id)
        # A run that did not answer the decision is not asked again: the POST keeps its one deadline.
        pending = await self.pending_of(claims.run_id) if run.status == "RUNNING" and ask_run else []
        waiting = next((p for p in pending if p.tool_call_id == claims.tool_call_id), None)
        # The same call id waiting under another request: a later run with this id, or a rewind.
        stale = waiting is not None and waiting.request_id != claims.request_id
        return self.render(
            request,
            "link.html",
            status=status,
            claims=claims,
            call=None if stale else waiting,
            stale=stale,
            decided=None if stale else run.decisions.get(claims.tool_call_id),
            button=BUTTONS[claims.action],
            error=error,
            done=done,
            unanswered=not ask_run,
        )

    async def link_page(self, request: Request) -> Response:
        """Show the call and the button; decides nothing."""
        claims = self._claims(request.path_params["token"])
        return await self._page(request, claims)

    async def use_link(self, request: Request) -> Response:
        """Decide the call as the link says, as the approver it was issued to."""
        claims = self._claims(request.path_params["token"])
        form = await request.form()
        if not self.csrf.check(request.cookies.get(CSRF_COOKIE), str(form.get(CSRF_FIELD) or "")):
            raise PageError(403, "Form expired", "This form's security token is missing or wrong. Open the link again.")
        feedback = str(form.get("feedback") or "").strip() or None
        decision = claims_decision(claims, feedback if claims.action == "reject" else None)
        # A link works once: its decision's Update id is stable (a retry after a timeout is the same
        # Update), so a use after the call was decided is refused here, from the history.
        decided = (await self.read_run(claims.run_id)).decisions.get(claims.tool_call_id)
        if decided is not None:
            who = decided.approver or "nobody (timeout)"
            return await self._page(
                request, claims, error=f"This call was already decided: {decided.action} by {who}.", status=409
            )
        try:
            await submit_decision(self.handle(claims.run_id).workflow, decision, self.settings.decision_timeout)
        except DecisionRefusedError as err:
            return await self._page(request, claims, error=str(err), status=409)
        except UnknownRunError as err:
            return await self._page(
                request,
                claims,
                error=f"This call was already decided: the run is no longer waiting ({err}).",
                status=409,
            )
        except RunNotAnsweringError as err:
            return await self._page(request, claims, error=str(err), status=504, ask_run=False)
        except ConfirmationError as err:
            return await self._page(request, claims, error=str(err), status=502)
        return await self._page(request, claims, done=True)


def claims_decision(claims: LinkClaims, feedback: str | None = None) -> ToolDecision:
    """The decision a link carries: its action, as its approver, bound to the request it was issued
    for and the call's arguments."""
    return ToolDecision(
        tool_call_id=claims.tool_call_id,
        action=claims.action,
        approver=claims.approver,
        arguments_sha256=claims.arguments_sha256,
        request_id=claims.request_id,
        feedback=feedback,
    )
